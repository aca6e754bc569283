package tmuxjob

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/base64"
	"fmt"
	"strings"
)

//go:embed scripts/*.sh
var scriptFS embed.FS

// wrapper runs in the job's tmux pane (scripts/wrapper.sh, its own script,
// not an operation): it waits for the start to finish (so the log misses
// nothing), runs the command with the spec's env and cwd, and records the
// command's real exit code.
//
//go:embed scripts/wrapper.sh
var wrapper string

// script returns the text of an operation: the shared prelude, then the
// operation's own lines.
func script(op string) string {
	lib, err := scriptFS.ReadFile("scripts/lib.sh")
	if err != nil {
		panic(err)
	}
	body, err := scriptFS.ReadFile("scripts/" + op + ".sh")
	if err != nil {
		panic(err)
	}
	return string(lib) + "\n" + fragments[op] + string(body)
}

// out is a script's parsed output: "KEY value" lines and "@KEY" blobs.
type out struct {
	vals  map[string]string // each key's first line
	lines map[string][]string
	blobs map[string][]byte
}

func (o out) all(k string) []string { return o.lines[k] }
func (o out) has(k string) bool     { _, ok := o.vals[k]; return ok }
func (o out) get(k string) string   { return o.vals[k] }
func (o out) blob(k string) []byte  { return o.blobs[k] }
func (o out) hasBlob(k string) bool { _, ok := o.blobs[k]; return ok }

// data is what lib.sh's emitv printed for k: its blob, else its line's
// value (a one-line file read with builtins), else nil.
func (o out) data(k string) []byte {
	if b, ok := o.blobs[k]; ok {
		return b
	}
	if v, ok := o.vals[k]; ok {
		return []byte(v)
	}
	return nil
}

// runError is a run whose outcome is unknown: the Runner failed, or the
// script failed without a definite answer.
type runError struct {
	op  string
	msg string
	err error
}

func (e *runError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("tmuxjob %s: %s: %v", e.op, e.msg, e.err)
	}
	return fmt.Sprintf("tmuxjob %s: %s", e.op, e.msg)
}

func (e *runError) Unwrap() error { return e.err }

// run runs op on the host for job id with args, and parses its output. An
// "ERR" line, a non-zero exit or a Runner error is a *runError.
func (j *Jobs) run(ctx context.Context, op, id string, stdin []byte, args ...string) (out, error) {
	for _, a := range args {
		if !noNUL(a) {
			return out{}, fmt.Errorf("tmuxjob %s: an argument holds a NUL byte", op)
		}
	}
	argv := append([]string{"/bin/sh", "-c", script(op), "mu-tmuxjob", j.opts.Root, id, j.opts.Socket}, args...)
	stdout, stderr, code, err := j.r.Run(ctx, argv, stdin)
	if err != nil {
		return out{}, &runError{op: op, msg: "the host did not answer", err: err}
	}
	o, perr := parseOut(stdout)
	if perr != nil {
		return out{}, &runError{op: op, msg: perr.Error()}
	}
	if err := notDoneOf(o); err != nil {
		return out{}, err
	}
	if m, ok := o.vals["ERR"]; ok {
		return out{}, &runError{op: op, msg: m}
	}
	if code != 0 {
		return out{}, &runError{op: op, msg: fmt.Sprintf("exit %d: %s", code, firstLine(stderr))}
	}
	return o, nil
}

// parseOut parses "KEY value" lines and blobs: "@KEY <base64>" on one
// line, or "@KEY" alone, then base64's own lines up to a line "@" (lib.sh:
// emit). A blob cut short (no "@") is an error: the output ended early.
func parseOut(b []byte) (out, error) {
	o := out{vals: map[string]string{}, lines: map[string][]string{}, blobs: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	blob, inBlob := "", false
	var enc strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if inBlob {
			if line != "@" {
				enc.WriteString(line)
				continue
			}
			inBlob = false
			line = "@" + blob + " " + enc.String()
			enc.Reset()
		}
		if line == "" {
			continue
		}
		k, v, one := strings.Cut(line, " ")
		if strings.HasPrefix(k, "@") {
			if !one {
				blob, inBlob = k[1:], true
				continue
			}
			data, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return o, fmt.Errorf("bad blob %s: %v", k, err)
			}
			o.blobs[k[1:]] = data
			continue
		}
		if _, dup := o.vals[k]; !dup {
			o.vals[k] = v
		}
		o.lines[k] = append(o.lines[k], v)
	}
	if err := sc.Err(); err != nil {
		return o, err
	}
	if inBlob {
		return o, fmt.Errorf("blob @%s cut short", blob)
	}
	return o, nil
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 400 {
		s = s[:400]
	}
	return s
}
