package contract

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// rawProc drives a plugin below the caller side, for the process rules
// the caller side cannot show on its own: it always sends $/cancel,
// shutdown and closes stdin together, so stdin EOF alone, a $/cancel that
// keeps the plugin running, and shutdown alone need their own driver. It
// starts the plugin exactly as the caller side does (its own process group,
// mu's environment) and records the same transcript.
type rawProc struct {
	ss    *session
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex

	mu      sync.Mutex
	lines   [][]byte          // every inbound line, in order
	replies map[string][]byte // by id (JSON text)
	eof     bool              // stdout ended: no reply will come
	cond    *sync.Cond
	exited  chan struct{}
}

// StartRaw starts the plugin with the suite's environment and completes
// the handshake (10 s).
func (t *T) StartRaw() *rawProc {
	if err := caller.CheckRegistration(t.s.opts.Name, t.s.opts.Argv[0]); err != nil {
		t.Fatalf("mu refuses the plugin: %v", err)
	}
	ss := t.newSession()
	cfg := t.config(ss)
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Env = caller.PluginEnv(os.Environ(), cfg.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("start %s: %v", cfg.Argv[0], err)
	}
	go func() {
		defer errR.Close()
		_, _ = io.Copy(ss.stderrWriter(), errR)
	}()
	stdout := outR
	r := &rawProc{ss: ss, cmd: cmd, stdin: stdin, replies: map[string][]byte{}, exited: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	ss.mu.Lock()
	ss.raw = r
	ss.pgid = cmd.Process.Pid
	ss.mu.Unlock()
	go r.read(stdout)
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`)
	if _, ok := r.waitReply("1", protocol.Grace*2); !ok {
		t.Failf("no answer to initialize within 10 s")
	}
	return r
}

func (r *rawProc) read(out *os.File) {
	defer out.Close()
	br := bufio.NewReaderSize(out, 64<<10)
	for {
		line, err := protocol.ReadLine(br, protocol.MaxLine)
		if err != nil && line == nil && err != protocol.ErrLineTooLong {
			r.mu.Lock()
			r.eof = true
			r.cond.Broadcast()
			r.mu.Unlock()
			return
		}
		if err == protocol.ErrLineTooLong {
			r.ss.record(caller.Event{Dir: caller.In, Oversize: true})
			continue
		}
		r.ss.record(caller.Event{Dir: caller.In, Line: line})
		r.mu.Lock()
		r.lines = append(r.lines, line)
		r.cond.Broadcast()
		r.mu.Unlock()
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &env) == nil && env.Method == "" && len(env.ID) > 0 {
			r.mu.Lock()
			r.replies[string(env.ID)] = line
			r.cond.Broadcast()
			r.mu.Unlock()
		}
	}
}

// send writes one line to the plugin's stdin.
func (r *rawProc) send(line string) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.ss.record(caller.Event{Dir: caller.Out, Line: []byte(line)})
	_, _ = io.WriteString(r.stdin, line+"\n")
}

// call writes a request with id and params (deadline filled in).
func (r *rawProc) call(id int, method string, params any, budget time.Duration) {
	b, _ := json.Marshal(params)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["deadline"] = time.Now().Add(budget).UnixMilli()
	b, _ = json.Marshal(m)
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, b))
}

// waitReply waits at most d for the reply to id (JSON text).
func (r *rawProc) waitReply(id string, d time.Duration) ([]byte, bool) {
	return r.waitFor(d, func() ([]byte, bool) {
		l, ok := r.replies[id]
		return l, ok
	})
}

// waitLine waits at most d for an inbound line (any so far) that match
// accepts, and returns the first.
func (r *rawProc) waitLine(d time.Duration, match func(line []byte) bool) ([]byte, bool) {
	return r.waitFor(d, func() ([]byte, bool) {
		for _, l := range r.lines {
			if match(l) {
				return l, true
			}
		}
		return nil, false
	})
}

// waitFor waits at most d, or until stdout ends, for found (called with
// r.mu held) to report a line.
func (r *rawProc) waitFor(d time.Duration, found func() ([]byte, bool)) ([]byte, bool) {
	end := time.Now().Add(d)
	timer := time.AfterFunc(d, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if l, ok := found(); ok {
			return l, true
		}
		if r.eof || !time.Now().Before(end) {
			return nil, false
		}
		r.cond.Wait()
	}
}

// closeStdin closes the plugin's stdin: what it sees when mu dies.
func (r *rawProc) closeStdin() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.ss.record(caller.Event{Dir: caller.Out, Note: "stdin closed"})
	_ = r.stdin.Close()
}

// groupEmptyWithin reports whether the plugin's whole process group is
// gone within d.
func (r *rawProc) groupEmptyWithin(d time.Duration) bool {
	pgid := r.cmd.Process.Pid
	return waitUntil(d, func() bool {
		select {
		case <-r.exited:
		default:
			return false
		}
		return !groupLive(pgid)
	})
}

// kill ends the group at once (the suite's cleanup).
func (r *rawProc) kill() {
	_ = r.stdin.Close()
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
	}
}
