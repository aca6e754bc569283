package ssh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// remoteShell runs every script, whatever the login shell is. Tests point
// it at bash and busybox to prove the wrapper on each.
var remoteShell = "/bin/sh"

// watchdogSlack is how long past its timeout the remote watchdog waits
// before it kills the script's group by itself (a lost connection).
var watchdogSlack = 2

// The fixed remote wrapper. sshd makes every session's process a group and
// session leader, and the command line execs into the wrapper's shell, so
// $$ is the group of everything the run starts. The wrapper prints it on
// stderr's first line, arms a watchdog that kills the whole group SECS
// seconds later (the plugin cannot act on a lost connection), enters DIR,
// runs the script or command, disarms the watchdog and exits with its
// status (scripts/arm.sh, exec.sh, disarm.sh). Every background child stays
// in the group.
//
// A script travels on stdin, never in the command line: the shell reads
// `sh -s SECS DIR` from stdin, the preamble, the script inside a subshell
// whose stdin is /dev/null (the shell parses the whole group before running
// it, so a command that reads stdin never eats the rest of the script, and
// `exit` leaves only the subshell), then the postamble.
var (
	wrapperArm    = oneLine("arm.sh", armSh)
	wrapperDisarm = oneLine("disarm.sh", disarmSh)
	// wrapperBody runs CMD ARGS with stdin passed through (git's protocol).
	// A first argument GIT_PROTOCOL=… is exported instead of run.
	wrapperBody = wrapperArm + "; " + oneLine("exec.sh", execSh) + "; " + wrapperDisarm
	// wrapperRunBody is wrapperBody for a Runner's run: it prints
	// runMark on stdout first, so what a login shell's rc file printed
	// before it is dropped (Runner.Run).
	wrapperRunBody = wrapperArm + "; echo " + runMark + "; " + oneLine("exec.sh", execSh) + "; " + wrapperDisarm
)

// runMark is the line a Runner's run prints on stdout before its command.
const runMark = "mu-ssh-run"

// gitProtocolArg prefixes the argument the wrapper exports as GIT_PROTOCOL.
const gitProtocolArg = "GIT_PROTOCOL="

// wrapperCommand is the SSH command line for a run: with argv, `sh -c BODY
// mu-ssh SECS DIR ARGV…` (mark: wrapperRunBody); without, `sh -s SECS DIR
// ARGS…` reading scriptStdin, ARGS the script's positional parameters.
// Only fixed text and single-quoted arguments appear in it, each made by
// argEncode, so the login shell, whichever it is, passes them as they are.
func wrapperCommand(timeout time.Duration, cwd string, argv, args []string, mark bool) string {
	secs := max(int((timeout+time.Second-1)/time.Second), 1) + watchdogSlack
	if cwd == "" {
		cwd = "."
	}
	if strings.HasPrefix(cwd, "-") {
		cwd = "./" + cwd
	}
	parts := []string{"exec", remoteShell, "-s", strconv.Itoa(secs), shQuote(argEncode(cwd))}
	if len(argv) > 0 {
		body := wrapperBody
		if mark {
			body = wrapperRunBody
		}
		parts = []string{"exec", remoteShell, "-c", shQuote(body), "mu-ssh", strconv.Itoa(secs), shQuote(argEncode(cwd))}
		args = argv
	}
	for _, a := range args {
		parts = append(parts, shQuote(argEncode(a)))
	}
	return strings.Join(parts, " ")
}

// argEncode is a for the command line, single-quoted after it, so every
// login shell reads it the same: fish reads \\ and \' as escapes inside
// single quotes, tcsh refuses a newline in them and may expand !. A value
// with none of them (and no leading %) is itself; another is % and the
// value with each of them (and each backslash) as a printf %b octal
// escape, which arm.sh decodes.
func argEncode(a string) string {
	if !strings.ContainsAny(a, "\\'\n!") && !strings.HasPrefix(a, "%") {
		return a
	}
	var b strings.Builder
	b.WriteByte('%')
	for i := 0; i < len(a); i++ {
		switch c := a[i]; c {
		case '\\', '\'', '\n', '!':
			fmt.Fprintf(&b, "\\0%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// scriptStdin is what the session's stdin carries for a script run.
// It is one string, so a small script leaves in one SSH data packet: a
// relay that keeps Nagle on (a ProxyCommand's nc) holds every further small
// packet until the first is acknowledged.
func scriptStdin(script string) io.Reader {
	return strings.NewReader(wrapperArm + "\n(\n" + script + "\n) </dev/null\n" + wrapperDisarm + "\n")
}

// shQuote single-quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// readPG reads "mu-ssh-pg N\n" from stderr: its first line, or the first
// after what the login shell's rc file printed (at most rcNoise bytes),
// which is returned as the stream's start. It returns 0 when the line did
// not come (the wrapper never ran).
func readPG(r *bufio.Reader) (int, []byte) {
	var before []byte
	for len(before) <= rcNoise {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "mu-ssh-pg ") && err == nil {
			n, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "mu-ssh-pg ")))
			if perr == nil && n > 1 {
				return n, before
			}
		}
		before = append(before, line...)
		if err != nil {
			break
		}
	}
	return 0, before
}

// rcNoise bounds what a login shell's rc file may print on stderr before
// the wrapper's first line.
const rcNoise = 64 << 10

// killScript is the control session's stop (scripts/kill.sh): SIGKILL the
// run's process group $1, then re-check until nothing of it is left, about
// 4 s at most. It prints "mu-ctl gone" or "mu-ctl left". It group-kills
// only when the wrapper really leads its group; otherwise it kills the
// wrapper's process tree, read from /proc parent links.
var killScript = oneLine("kill.sh", killSh)

// killCommand is the control shell's command line that stops group pgid:
// the group is the script's only argument.
func killCommand(pgid int) string {
	return "set -- " + strconv.Itoa(pgid) + "; " + killScript
}

// control is a kept shell session on a connection, for stops: it needs no
// free slot when every slot is busy with runaway scripts.
type control struct {
	sess *gossh.Session
	in   io.WriteCloser
	out  *bufio.Reader
}

func (c *conn) openControl() (*control, error) {
	c.openMu.Lock()
	s, err := c.client.NewSession()
	c.openMu.Unlock()
	if err != nil {
		return nil, err
	}
	return startControl(s)
}

// startControl starts the control shell on an open session.
func startControl(s *gossh.Session) (*control, error) {
	in, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	out, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Stderr = io.Discard
	if err := s.Start("exec " + remoteShell); err != nil {
		s.Close()
		return nil, err
	}
	return &control{sess: s, in: in, out: bufio.NewReader(out)}, nil
}

// killGroup stops a run's process group over the control session and
// reports whether it is proven gone.
func (c *conn) killGroup(ctx context.Context, pgid int) (bool, error) {
	if pgid <= 1 {
		return false, errors.New("no process group")
	}
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if err := c.ensureControlLocked(ctx); err != nil {
			return false, err
		}
		gone, err := c.ctl.run(ctx, killCommand(pgid))
		if err == nil {
			return gone, nil
		}
		c.ctl.sess.Close()
		c.ctl = nil
		if ctx.Err() != nil || c.dead() {
			return false, err
		}
	}
	return false, errors.New("control session failed")
}

// warmControl opens the control session right after the connection is made,
// while sessions are free, so the slot kept for stops is real even when
// --max-sessions overstates the server's limit.
// One attempt: a failure leaves it to the first stop.
// The channel opens before any script's (opens are serialized); the shell
// starts in the background, holding ctlMu so a stop waits for it, while the
// first script's session opens.
func (c *conn) warmControl() {
	c.ctlMu.Lock()
	c.openMu.Lock()
	s, err := c.client.NewSession()
	c.openMu.Unlock()
	if err != nil {
		c.ctlMu.Unlock()
		return
	}
	go func() {
		defer c.ctlMu.Unlock()
		if ctl, err := startControl(s); err == nil {
			c.ctl = ctl
		}
	}()
}

// ensureControlLocked opens the control session if there is none. A server
// at its session limit refuses it: then the exec slots shrink, and the open
// is retried as sessions end, until ctx ends.
func (c *conn) ensureControlLocked(ctx context.Context) error {
	for c.ctl == nil {
		ctl, err := c.openControl()
		if err == nil {
			c.ctl = ctl
			return nil
		}
		var oce *gossh.OpenChannelError
		if !errors.As(err, &oce) || c.dead() {
			return err
		}
		c.slots.reserve()
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func (ctl *control) run(ctx context.Context, script string) (bool, error) {
	type res struct {
		gone bool
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		if _, err := io.WriteString(ctl.in, "{ "+script+"; } 2>/dev/null\n"); err != nil {
			ch <- res{err: err}
			return
		}
		for {
			line, err := ctl.out.ReadString('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			switch strings.TrimSpace(line) {
			case "mu-ctl gone":
				ch <- res{gone: true}
				return
			case "mu-ctl left":
				ch <- res{}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		return r.gone, r.err
	case <-ctx.Done():
		ctl.sess.Close()
		return false, ctx.Err()
	}
}
