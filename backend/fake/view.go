package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
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
				fmt.Fprintf(out, "[fake] job %s, agent %s\n", t.Job, t.Agent)
				header = true
			}
			now := time.Now().UnixMilli()
			if printed > len(t.Events) {
				printed = len(t.Events)
			}
			for printed < len(t.Events) && t.Events[printed].At <= now {
				e := t.Events[printed]
				fmt.Fprintf(out, "%s %-5s %s\n", time.UnixMilli(e.At).UTC().Format("15:04:05.000"), e.Who, e.Text)
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
