package sshlink

import (
	"context"
	"errors"
	"fmt"
	"github.com/mu-org/mu-plugins/internal/outcap"
	"net"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// reachProbe runs on the host in one session: the shell, git and its
// version, and whether the login directory is writable.
const reachProbe = `echo "mu-sh ok"
if command -v git >/dev/null 2>&1; then echo "mu-git $(git --version 2>&1)"; else echo "mu-git none"; fi
t=".mu-check-$$"; if ( : > "$t" ) 2>/dev/null; then rm -f "$t"; echo "mu-home ok $(pwd)"; else echo "mu-home ro $(pwd)"; fi
`

// checkSteps serves link.checkSteps: the reach phase's steps, in order;
// after a failure the rest are skipped (null). Each failure says what to do.
func (b *Backend) checkSteps(ctx context.Context, call *protocol.Call) (any, error) {
	var p protocol.CheckStepsParams
	if err := call.Decode(&p); err != nil {
		return nil, err
	}
	if p.Phase != protocol.PhaseReach {
		return []protocol.Step{}, nil
	}
	dest := p.Target.Host.Name
	var steps []protocol.Step
	names := []string{"resolve", "tcp", "hostkey", "auth", "sh", "git", "home"}
	pass := func(name, detail string) {
		steps = append(steps, protocol.Step{Step: name, OK: protocol.StepPassed, Detail: detail})
	}
	warn := func(name, detail string) {
		steps = append(steps, protocol.Step{Step: name, OK: protocol.StepWarn, Detail: detail})
	}
	failRest := func(name, detail string) []protocol.Step {
		steps = append(steps, protocol.Step{Step: name, OK: protocol.StepFailed, Detail: detail})
		for _, n := range names[len(steps):] {
			steps = append(steps, protocol.Step{Step: n, OK: protocol.StepSkipped, Detail: "skipped: " + name + " failed"})
		}
		return steps
	}

	r, err := b.pool.res.Resolve(ctx, dest)
	if err != nil {
		return failRest("resolve", fmt.Sprintf("cannot resolve %s: %v. Check the SSH configuration (`ssh -G %s`).", safeName(dest), err, safeName(dest))), nil
	}
	via := ""
	if len(r.ProxyJump) > 0 {
		via = " via ProxyJump " + strings.Join(r.ProxyJump, ",")
	}
	pass("resolve", fmt.Sprintf("%s@%s port %d%s (%s)", r.User, r.HostName, r.Port, via, r.Via))

	if len(r.ProxyJump) == 0 {
		t := r.ConnectTimeout
		if t <= 0 {
			t = 10 * time.Second
		}
		d := net.Dialer{Timeout: t}
		nc, err := d.DialContext(ctx, "tcp", r.Addr())
		if err != nil {
			return failRest("tcp", fmt.Sprintf("cannot reach %s: %v. Check the host is up, HostName/Port in the SSH config, and any firewall.", r.Addr(), err)), nil
		}
		nc.Close()
		pass("tcp", "connected to "+r.Addr())
	} else {
		steps = append(steps, protocol.Step{Step: "tcp", OK: protocol.StepSkipped, Detail: "the host is reached through its jump host(s)" + via + ": see the hostkey step"})
	}

	c, err := b.pool.get(ctx, dest)
	if err != nil {
		var pe *protocol.Error
		detail := err.Error()
		if errors.As(err, &pe) {
			detail = pe.Message
			if pe.Remedy != "" {
				detail += ". To fix: " + pe.Remedy
			}
		}
		switch {
		case errors.Is(err, errHostKey):
			return failRest("hostkey", detail), nil
		case errors.Is(err, errAuth):
			pass("hostkey", "host key verified")
			return failRest("auth", detail), nil
		}
		return failRest("hostkey", detail+". Check the host runs an SSH server on that port."), nil
	}
	pass("hostkey", "host key verified")
	pass("auth", "authenticated as "+r.User)

	out, errb := outcap.New(64<<10), outcap.New(64<<10)
	run, err := b.start(ctx, c, runSpec{until: time.Now().Add(8 * time.Second), cwd: ".", stdin: scriptStdin(reachProbe), stdout: out, stderr: errb})
	if err != nil {
		return failRest("sh", fmt.Sprintf("cannot start /bin/sh on the host: %v. The account must allow a shell (not nologin) and the server must allow sessions.", err)), nil
	}
	exit, err := b.outcome(ctx, run)
	o, _ := out.Bytes()
	e, _ := errb.Bytes()
	if err != nil || exit == nil || !strings.Contains(string(o), "mu-sh ok") {
		return failRest("sh", fmt.Sprintf("/bin/sh did not run the probe (%s): %s. The host needs a POSIX /bin/sh and an account whose login shell runs commands.", errString(err), firstLine(string(e)))), nil
	}
	pass("sh", "/bin/sh runs scripts")
	lines := map[string]string{}
	for _, l := range strings.Split(string(o), "\n") {
		k, v, _ := strings.Cut(l, " ")
		lines[k] = v
	}
	switch g := lines["mu-git"]; {
	case g == "" || g == "none":
		return failRest("git", "git is not installed on the host (or not on the login PATH): install it, e.g. `apt-get install git`."), nil
	case gitTooOld(g):
		warn("git", g+": older than 2.18, fetch and push fall back to git protocol v0")
	default:
		pass("git", g)
	}
	h := lines["mu-home"]
	if !strings.HasPrefix(h, "ok") {
		steps = append(steps, protocol.Step{Step: "home", OK: protocol.StepFailed,
			Detail: "the login directory " + strings.TrimPrefix(h, "ro ") + " is not writable: give " + r.User + " a writable home directory"})
		return steps, nil
	}
	pass("home", "login directory "+strings.TrimPrefix(h, "ok ")+" is writable")
	return steps, nil
}

// gitTooOld reads "git version X.Y…" and says whether it predates 2.18.
func gitTooOld(v string) bool {
	var maj, min int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "git version "), "%d.%d", &maj, &min); err != nil {
		return false
	}
	return maj < 2 || maj == 2 && min < 18
}
