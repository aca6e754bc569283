package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// A session is one long-lived exec channel into a container: a POSIX sh
// loop (agentScript) that reads a request from its stdin, runs the script,
// stops whatever the script left behind, and writes an end marker on stdout
// (with the exit code) and on stderr. Docker's exec setup (about 45-60 ms) is
// paid once per channel, not once per script.

// runVar marks every process a run starts (it is in their environment and
// their descendants'), so leftovers can be found and killed inside the
// container, even those that left the script's process group (setsid).
const runVar = "MU_DOCKER_RUN"

// killFn kills every process marked with run $1, repeating until none is
// left; it fails when some survive 100 rounds, or when the scan itself
// cannot run (no grep): "none left" is never assumed. grep exits 2 when a
// process vanished mid-scan or its environ is another user's; matches still
// print, and an empty list with status 1 or 2 means none of ours is left.
const killFn = `k() {
	i=0
	while [ "$i" -lt 100 ]; do
		p=$(grep -lsxz "` + runVar + `=$1" /proc/[0-9]*/environ); e=$?
		if [ -z "$p" ]; then
			[ "$e" -le 2 ] && return 0
			echo "scanning /proc failed ($e)" >&2; return 3
		fi
		for f in $p; do f=${f#/proc/}; kill -9 "${f%/environ}" 2>/dev/null; done
		i=$((i + 1))
	done
	return 1
}
`

// agentScript is the channel's loop. A request is the line
// "TOKEN MARK LEN [STDINLEN]\n" (TOKEN ends the run's output; MARK, another
// random value, marks its processes, so a script that prints its
// environment cannot end its own output early), the cwd on a line of its
// own, then LEN bytes of payload, read with head -c (which reads no
// further), then, with STDINLEN, that many bytes of the run's stdin.
//
// Without STDINLEN the payload is a script, run as `sh -c SCRIPT` (an argv
// string: never spliced into a command line) with stdin from /dev/null.
// With it (a Runner's run, runArgv) the payload is an argv, each argument
// escaped (\002 → \002\003, \001 → \002\004) and ended by \001, decoded
// with builtins only and exec'd as "$@"; the stdin bytes are written to a
// file of the loop's own first (they may hold any byte) and fed to the run.
// Either runs in cwd, resolved from the login directory. After the run, the
// /proc scan for leftovers (a grep costing ~4 ms) runs only when the
// container's process list is not what it was before the run.
const agentScript = killFn + `S=$(printf '\001') E=$(printf '\002') E3=$(printf '\003')
u() {
	U= x=$1
	while :; do
		case $x in *"$E"*) ;; *) U=$U$x; return ;; esac
		U=$U${x%%"$E"*} x=${x#*"$E"}
		case $x in "$E3"*) U=$U$E ;; *) U=$U$S ;; esac
		x=${x#?}
	done
}
f=${TMPDIR:-/tmp}/mu-docker-stdin.$$
while IFS=' ' read -r t m n i; do
	IFS= read -r d
	s=$(head -c "$n"; echo x); s=${s%x}
	set -- /proc/[0-9]*; b="$*"
	if [ -z "$i" ]; then
		(cd 2>/dev/null || cd /; cd -- "$d" && ` + runVar + `=$m exec /bin/sh -c "$s") </dev/null
		r=$?
	else
		in=/dev/null
		if [ "$i" -gt 0 ]; then (umask 077; head -c "$i" >"$f"); in=$f; fi
		set --
		while [ -n "$s" ]; do
			u "${s%%"$S"*}"; s=${s#*"$S"}
			set -- "$@" "$U"
		done
		(cd 2>/dev/null || cd /; cd -- "$d" && ` + runVar + `=$m exec "$@") <"$in"
		r=$?
		[ "$in" = /dev/null ] || rm -f "$f"
	fi
	set -- /proc/[0-9]*; [ "$*" = "$b" ] || k "$m"
	printf '%s %d\n' "$t" "$r"
	printf '%s\n' "$t" >&2
done
`

type session struct {
	ctr  string
	hj   client.ExecAttachResult
	cur  atomic.Pointer[run]
	dead chan struct{} // closed once the channel's output ended
	err  error         // why, set before dead closes
	once sync.Once
}

// openSession starts the channel's shell in ctr.
func openSession(ctx context.Context, api execer, ctr string) (*session, error) {
	ex, err := api.ExecCreate(ctx, ctr, client.ExecCreateOptions{
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Cmd: []string{"/bin/sh", "-c", agentScript},
	})
	if err != nil {
		return nil, err
	}
	hj, err := api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, err
	}
	s := &session{ctr: ctr, hj: hj, dead: make(chan struct{})}
	go s.read()
	return s, nil
}

func (s *session) read() {
	_, err := stdcopy.StdCopy(sink{s, false}, sink{s, true}, s.hj.Reader)
	if err == nil {
		err = errors.New("the exec channel ended")
	}
	s.err = err
	close(s.dead)
}

func (s *session) close() { s.once.Do(func() { s.hj.Close() }) }

func (s *session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// start sends one script request; the run's done closes once both
// markers arrived.
func (s *session) start(script, cwd string) (*run, error) {
	r := newRun()
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s %d\n%s\n", r.tok, r.mark, len(script), cwd)
	req.WriteString(script)
	return r, s.send(r, req.Bytes())
}

// startArgv sends one argv request with its stdin (see agentScript).
func (s *session) startArgv(argv []string, stdin []byte, cwd string) (*run, error) {
	r := newRun()
	payload := encodeArgv(argv)
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s %d %d\n%s\n", r.tok, r.mark, len(payload), len(stdin), cwd)
	req.Write(payload)
	req.Write(stdin)
	return r, s.send(r, req.Bytes())
}

func (s *session) send(r *run, req []byte) error {
	s.cur.Store(r)
	if _, err := s.hj.Conn.Write(req); err != nil {
		s.cur.Store(nil)
		s.close()
		return err
	}
	return nil
}

// encodeArgv is an argv as agentScript decodes it: each argument with
// \002 escaped as \002\003 and \001 as \002\004, then ended by \001.
func encodeArgv(argv []string) []byte {
	var b bytes.Buffer
	for _, a := range argv {
		for i := 0; i < len(a); i++ {
			switch a[i] {
			case 2:
				b.WriteString("\x02\x03")
			case 1:
				b.WriteString("\x02\x04")
			default:
				b.WriteByte(a[i])
			}
		}
		b.WriteByte(1)
	}
	return b.Bytes()
}

// sink routes the channel's demultiplexed output to the current run.
type sink struct {
	s      *session
	stderr bool
}

func (k sink) Write(p []byte) (int, error) {
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
		out:  collector{marker: []byte(tok + " "), limit: maxStream},
		err:  collector{marker: []byte(tok), limit: maxStream},
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
