package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Transcript is a job's transcript file: every line the agent's view will
// print, future turns included, each printed once its time has come.
type Transcript struct {
	Job    string  `json:"job"`
	Agent  string  `json:"agent"`
	Ended  bool    `json:"ended"`
	Events []Event `json:"events"`
}

// writeTranscript rewrites a job's transcript (atomically: a view reading it
// never sees half a file).
func (f *Fake) writeTranscript(j *Job, a *Agent) {
	t := Transcript{Job: j.Result.Handle, Agent: j.Agent, Ended: j.State == stateEnded, Events: a.projected()}
	b, err := json.Marshal(t)
	if err != nil {
		return
	}
	if err := writeAtomic(j.Transcript, b); err != nil {
		f.cfg.Log.Warn("transcript not written", "job", j.Result.Handle, "error", err)
	}
}

// View is the `view` sub-command, on stdout.
func View(ctx context.Context, args []string) int { return ViewCommand(ctx, args, os.Stdout) }

// ViewCommand is the `view` sub-command: it follows a transcript file and
// prints each line when its time comes, until the job ends or the file goes.
// It reads no stdin (mu runs it with stdin from /dev/null).
func ViewCommand(ctx context.Context, args []string, out io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: mu-plugin-fake view TRANSCRIPT")
		return 2
	}
	path := args[0]
	printed := 0
	header := false
	for {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintln(out, "[fake] the transcript is gone: the job's world has ended")
			return 0
		}
		var t Transcript
		if err == nil && json.Unmarshal(b, &t) == nil {
			if !header {
				fmt.Fprintf(out, "[fake] job %s, agent %s\n", printable(t.Job), printable(t.Agent))
				header = true
			}
			now := time.Now().UnixMilli()
			if printed > len(t.Events) {
				printed = len(t.Events)
			}
			for printed < len(t.Events) && t.Events[printed].At <= now {
				e := t.Events[printed]
				fmt.Fprintf(out, "%s %-5s %s\n", time.UnixMilli(e.At).UTC().Format("15:04:05.000"), printable(e.Who), printable(e.Text))
				printed++
			}
			if t.Ended && printed == len(t.Events) {
				fmt.Fprintln(out, "[fake] the job has ended")
				return 0
			}
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// printable is s as a terminal may show it: every control character (C0,
// DEL, C1), bidi control and byte that is not UTF-8 written as a Go escape
// (\x1b, \n, \u202e), so a message cannot drive the terminal (colours, a
// title, the cursor) or reorder what the view prints.
func printable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			q := strconv.QuoteRune(r) // 'x' with Go's escape inside
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
