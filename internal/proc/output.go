package proc

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// outputs carry a KillLeftovers run's stdout and stderr through os.Pipes the
// run drains itself. exec.Cmd, given a writer that is not a file, makes its
// own pipe and Wait returns only once every process holding it has closed
// it (or WaitDelay has passed): a leftover that keeps the script's output
// open (`setsid cmd &`) would hold the answer for the whole WaitDelay. With
// a file, Wait returns when the leader exits; the run then kills the
// leftovers, and the output drains to its end.
type outputs struct {
	r, w []*os.File
	wg   sync.WaitGroup
}

// pipeOutputs replaces cmd's Stdout and Stderr writers (not files) with the
// write ends of pipes copied into them. One writer set as both gets one pipe,
// as exec does.
func pipeOutputs(cmd *exec.Cmd) (*outputs, error) {
	o := &outputs{}
	var prev io.Writer
	var prevFile *os.File
	for _, slot := range []*io.Writer{&cmd.Stdout, &cmd.Stderr} {
		w := *slot
		if w == nil {
			continue
		}
		if _, ok := w.(*os.File); ok {
			continue
		}
		if prev != nil && sameWriter(w, prev) {
			*slot = prevFile
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			o.close()
			return nil, err
		}
		o.r, o.w = append(o.r, pr), append(o.w, pw)
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			_, _ = io.Copy(w, pr)
		}()
		*slot, prev, prevFile = pw, w, pw
	}
	return o, nil
}

// started closes this process's write ends: only the run holds them now.
func (o *outputs) started() {
	for _, w := range o.w {
		_ = w.Close()
	}
}

// drain waits for the output to reach its end, at most d; then it stops
// reading (a holder the kill could not reach keeps it open).
func (o *outputs) drain(d time.Duration) {
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		for _, r := range o.r {
			_ = r.Close()
		}
		<-done
	}
	for _, r := range o.r {
		_ = r.Close()
	}
}

// close releases both ends (a run that did not start).
func (o *outputs) close() {
	o.started()
	o.drain(0)
}

// sameWriter is a == b for writers that can be compared.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }()
	return a == b
}
