package execchan

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mu-org/mu-plugins/internal/outcap"
)

// RunVar marks every process a run starts (it is in their environment and
// their descendants'), so leftovers can be found and killed on the host,
// even those that left the script's process group (setsid). Its name is
// the channels', not a provider's (docker and k8s both set it); tmuxjob's
// lib.sh unsets it for the jobs it starts, which must outlive the run that
// started them.
const RunVar = "MU_EXEC_RUN"

// Conn is a channel's transport as the backend opened it: Write reaches
// the loop's stdin, Close tears the channel down (its output then ends).
type Conn interface {
	Write(p []byte) (int, error)
	Close() error
}

// A Session is one long-lived exec channel: a POSIX sh loop (AgentScript)
// that reads a request from its stdin, runs it, stops whatever it left
// behind, and writes an end marker on stdout (with the exit code) and on
// stderr. The backend starts AgentScript over its own exec API, makes the
// Session with NewSession, copies the exec's stdout and stderr into
// Stdout() and Stderr(), and calls End once that output ended.
type Session struct {
	conn Conn
	cur  atomic.Pointer[run]
	mu   sync.Mutex    // held by each write of the output (sink)
	dead chan struct{} // closed once the channel's output ended
	err  error         // why, set before dead closes
	once sync.Once
}

// NewSession is the session over conn (AgentScript already started).
func NewSession(conn Conn) *Session {
	return &Session{conn: conn, dead: make(chan struct{})}
}

// Stdout and Stderr take the channel's output, demultiplexed.
func (s *Session) Stdout() io.Writer { return sink{s, false} }

// Stderr: see Stdout.
func (s *Session) Stderr() io.Writer { return sink{s, true} }

// End records that the channel's output ended, with err (nil: EOF).
// Called once, by the backend's reader.
func (s *Session) End(err error) {
	if err == nil {
		err = errors.New("the exec channel ended")
	}
	s.err = err
	close(s.dead)
}

func (s *Session) close() { s.once.Do(func() { _ = s.conn.Close() }) }

func (s *Session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// start sends one script request; the run's done closes once both
// markers arrived.
func (s *Session) start(script, cwd string) (*run, error) {
	r := newRun()
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s %d\n%s\n", r.tok, r.mark, len(script), cwd)
	req.WriteString(script)
	return r, s.send(r, req.Bytes())
}

// startArgv sends one argv request with its stdin (see agentScript); sep
// is argvSep(argv).
func (s *Session) startArgv(argv []string, sep byte, stdin []byte, cwd string) (*run, error) {
	r := newRun()
	payload := encodeArgv(argv, sep)
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s %d %d ", r.tok, r.mark, len(payload), len(stdin))
	req.WriteByte(sep) // a raw byte (%c would write 0xff as UTF-8)
	fmt.Fprintf(&req, "\n%s\n", cwd)
	req.Write(payload)
	req.Write(stdin)
	return r, s.send(r, req.Bytes())
}

func (s *Session) send(r *run, req []byte) error {
	s.cur.Store(r)
	if _, err := s.conn.Write(req); err != nil {
		s.cur.Store(nil)
		s.close()
		return err
	}
	return nil
}

// argvSeps are the separators encodeArgv tries, in order: control bytes,
// then bytes that never occur in UTF-8.
var argvSeps = []byte("\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8")

// argvSep is a separator byte that no argument holds: encodeArgv's.
func argvSep(argv []string) (byte, error) {
	for _, sep := range argvSeps {
		used := false
		for _, a := range argv {
			if strings.IndexByte(a, sep) >= 0 {
				used = true
				break
			}
		}
		if !used {
			return sep, nil
		}
	}
	return 0, errors.New("the arguments use every separator byte")
}

// encodeArgv is an argv as agentScript splits it: each argument ended by
// sep.
func encodeArgv(argv []string, sep byte) []byte {
	var b []byte
	for _, a := range argv {
		b = append(append(b, a...), sep)
	}
	return b
}

// sink routes the channel's demultiplexed output to the current run. A
// transport may write stdout and stderr from two goroutines (client-go's
// remotecommand does): the session's lock orders them, and the run's done
// (closed under it) orders them before the run's reader.
type sink struct {
	s      *Session
	stderr bool
}

func (k sink) Write(p []byte) (int, error) {
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	r := k.s.cur.Load()
	if r == nil {
		return len(p), nil
	}
	if k.stderr {
		r.err.write(p)
	} else {
		r.out.write(p)
	}
	if r.out.complete && r.err.complete {
		r.finish()
	}
	return len(p), nil
}

// run is one script's run on a session.
type run struct {
	tok      string // ends the run's output
	mark     string // marks the run's processes
	out, err collector
	done     chan struct{}
	once     sync.Once
}

func newRun() *run {
	tok := "mu-end-" + randomHex()
	return &run{
		tok:  tok,
		mark: randomHex(),
		out:  collector{marker: []byte(tok + " "), limit: outcap.MaxStream},
		err:  collector{marker: []byte(tok), limit: outcap.MaxStream},
		done: make(chan struct{}),
	}
}

func (r *run) finish() { r.once.Do(func() { close(r.done) }) }

// exitCode is the script's exit status, from the stdout marker's line.
func (r *run) exitCode() (int, error) {
	return strconv.Atoi(string(bytes.TrimSpace(r.out.trailer)))
}

// collector gathers one stream of a run: the bytes before its end marker,
// keeping at most limit of them and counting the rest.
type collector struct {
	marker   []byte
	limit    int
	kept     []byte
	total    int64
	win      []byte // the tail not yet known to be output (a marker may span writes)
	found    bool
	trailer  []byte // after the marker, up to its newline
	complete bool
}

func (c *collector) write(p []byte) {
	if c.complete {
		return
	}
	if c.found {
		c.addTrailer(p)
		return
	}
	data := append(c.win, p...)
	if i := bytes.Index(data, c.marker); i >= 0 {
		c.emit(data[:i])
		c.found, c.win = true, nil
		c.addTrailer(data[i+len(c.marker):])
		return
	}
	keep := len(c.marker) - 1
	if len(data) > keep {
		c.emit(data[:len(data)-keep])
		data = data[len(data)-keep:]
	}
	c.win = append([]byte(nil), data...)
}

func (c *collector) addTrailer(p []byte) {
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		c.trailer = append(c.trailer, p[:i]...)
		c.complete = true
		return
	}
	c.trailer = append(c.trailer, p...)
}

func (c *collector) emit(p []byte) {
	c.total += int64(len(p))
	if room := c.limit - len(c.kept); room > 0 {
		c.kept = append(c.kept, p[:min(room, len(p))]...)
	}
}

// cut reports whether bytes were dropped.
func (c *collector) cut() bool { return c.total > int64(len(c.kept)) }

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewMark is a fresh run mark, for a run a backend starts outside a
// channel (git's bridge) with RunVar set to it, so StopScript can kill it.
func NewMark() string { return randomHex() }
