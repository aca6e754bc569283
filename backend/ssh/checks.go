package ssh

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/protocol"
)

// reachSteps are the reach phase's steps, in order.
var reachSteps = []string{"resolve", "tcp", "hostkey", "auth", "sh", "git", "home"}

// checkSteps serves link.checkSteps: the reach phase's steps, in order;
// after a failure the rest are skipped (null). Each failure says what to do.
// The agent phase's are job.checkSteps' own (agentSteps): one list, one
// code path, whichever seam mu asks.
func (b *Backend) checkSteps(ctx context.Context, call *protocol.Call, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	if p.Phase == protocol.PhaseAgent {
		return b.agentSteps(ctx, p.Target)
	}
	if p.Phase != protocol.PhaseReach {
		return []protocol.Step{}, nil
	}
	l := gitlink.NewSteps(reachSteps...)
	c, done := b.reachConnect(ctx, l, p.Target.Host.Name)
	if done {
		return l.List(), nil
	}
	return b.reachProbe(ctx, l, c), nil
}

// reachConnect runs resolve, tcp, hostkey and auth; done means a step
// failed (the rest are recorded skipped).
func (b *Backend) reachConnect(ctx context.Context, l *gitlink.Steps, dest string) (*conn, bool) {
	d := b.pool.dialer
	r, err := d.Resolve(ctx, dest)
	if err != nil {
		l.FailRest("resolve", errDetail(err))
		return nil, true
	}
	var m *sshclient.Master
	if r.ControlPath != "" && r.ControlMaster != "yes" && r.ControlMaster != "ask" {
		m, _ = r.RunningMaster(ctx)
	}
	l.Pass("resolve", resolveDetail(r, m))
	switch {
	case m != nil:
		l.Skip("tcp", "the connection is "+m.String()+"'s (ControlPath "+r.Where("ControlPath")+"): see the hostkey step")
	case r.ProxyCommand != "":
		l.Skip("tcp", "the host is reached through its ProxyCommand ("+r.Where("ProxyCommand")+"): see the hostkey step")
	case len(r.ProxyJump) > 0:
		l.Skip("tcp", "the host is reached through its jump host(s), ProxyJump "+strings.Join(r.ProxyJump, ",")+": see the hostkey step")
	default:
		nc, err := d.DialTCP(ctx, r)
		if err != nil {
			l.FailRest("tcp", fmt.Sprintf("%s. Check the host is up, HostName and Port (%s) in the SSH configuration, and any firewall.", errDetail(err), r.Where("Port")))
			return nil, true
		}
		l.Pass("tcp", fmt.Sprintf("connected to %s (%s)", r.Addr(), nc.RemoteAddr()))
		nc.Close()
	}
	c, err := b.pool.get(ctx, dest)
	if err != nil {
		detail := errDetail(err)
		var se *sshclient.StageError
		switch {
		case errors.Is(err, sshclient.ErrHostKey):
			l.FailRest("hostkey", detail)
		case errors.As(err, &se) && errors.Is(err, sshclient.ErrAuth):
			l.Pass("hostkey", se.HostKey)
			l.FailRest("auth", detail)
		default:
			l.FailRest("hostkey", detail+". Check the host runs an SSH server on that port.")
		}
		return nil, true
	}
	l.Pass("hostkey", c.cl.HostKey+"; reached through "+c.cl.Route)
	if c.cl.Master {
		l.Pass("auth", "authenticated as "+r.User+" by "+c.cl.Route)
	} else {
		l.Pass("auth", "authenticated as "+r.User+" with "+c.cl.AuthKey)
	}
	return c, false
}

// reachProbe runs the probe script: sh, git and home.
func (b *Backend) reachProbe(ctx context.Context, l *gitlink.Steps, c *conn) []protocol.Step {
	out, errb := outcap.New(64<<10), outcap.New(64<<10)
	run, err := b.start(ctx, c, runSpec{until: time.Now().Add(8 * time.Second), cwd: ".", stdin: scriptStdin(probeScript), stdout: out, stderr: errb})
	if err != nil {
		return l.FailRest("sh", fmt.Sprintf("cannot start /bin/sh on the host: %v. The account must allow a shell (not nologin) and the server must allow sessions.", err))
	}
	exit, err := b.outcome(ctx, run)
	o, _ := out.Bytes()
	e, _ := errb.Bytes()
	if err != nil || exit == nil || !strings.Contains(string(o), "mu-sh ok") {
		return l.FailRest("sh", fmt.Sprintf("/bin/sh did not run the probe (%s): %s. The host needs a POSIX /bin/sh and an account whose login shell runs commands.", errString(err), sshclient.FirstLine(string(e))))
	}
	l.Pass("sh", "/bin/sh runs scripts")
	lines := map[string]string{}
	for _, line := range strings.Split(string(o), "\n") {
		k, v, _ := strings.Cut(line, " ")
		lines[k] = v
	}
	switch g := lines["mu-git"]; {
	case g == "" || g == "none":
		return l.FailRest("git", "git is not installed on the host (or not on the login PATH): install it, e.g. `apt-get install git`.")
	case gitTooOld(g):
		l.Warn("git", g+": older than 2.18, fetch and push fall back to git protocol v0")
	default:
		l.Pass("git", g)
	}
	h := lines["mu-home"]
	if !strings.HasPrefix(h, "ok") {
		l.Fail("home", "the login directory "+strings.TrimPrefix(h, "ro ")+" is not writable: give "+c.r.User+" a writable home directory")
		return l.List()
	}
	l.Pass("home", "login directory "+strings.TrimPrefix(h, "ok ")+" is writable")
	return l.List()
}

// errDetail is an error's message and remedy, for a step's detail.
func errDetail(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		if pe.Remedy != "" {
			return pe.Message + ". To fix: " + pe.Remedy
		}
		return pe.Message
	}
	return err.Error()
}

// resolveDetail says how the destination resolved: the endpoint, the
// route, the resolver and the files it read.
func resolveDetail(r *sshclient.Resolved, m *sshclient.Master) string {
	route := ""
	switch {
	case m != nil:
		route = " through " + m.String()
	case r.ProxyCommand != "":
		route = " through ProxyCommand `" + r.ProxyCommand + "`"
	case len(r.ProxyJump) > 0:
		route = " through ProxyJump " + strings.Join(r.ProxyJump, ",")
	}
	files := strings.Join(r.Files(), ", ")
	if files == "" {
		files = "no config file"
	}
	return fmt.Sprintf("%s is %s@%s port %d%s (%s, %s)", sshclient.SafeName(r.Alias), r.User, r.HostName, r.Port, route, r.Via, files)
}

// gitTooOld reads "git version X.Y…" and says whether it predates 2.18.
func gitTooOld(v string) bool {
	var maj, min int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "git version "), "%d.%d", &maj, &min); err != nil {
		return false
	}
	return maj < 2 || maj == 2 && min < 18
}
