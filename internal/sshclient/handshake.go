package sshclient

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/protocol"
)

// handshake runs the SSH handshake and authentication over nc, all within
// ConnectTimeout (x/crypto's own Timeout covers only a TCP connect). direct
// says nc is a plain TCP connection (ssh-keyscan reaches the host too).
func (d *Dialer) handshake(ctx context.Context, r *Resolved, nc net.Conn, direct bool, route string) (*Client, error) {
	timeout := connectTimeout(r)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	plan, err := r.plan()
	if err != nil {
		nc.Close()
		return nil, err
	}
	tr, err := newTrust(r, d.knownHosts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	tr.direct, tr.sshCmd = direct, d.sshCommand(r.Alias)
	au := newAuth(r, d.identity)
	defer au.close()
	cfg := &gossh.ClientConfig{
		User:              r.User,
		Auth:              au.methods(),
		HostKeyCallback:   tr.callback(),
		HostKeyAlgorithms: tr.algorithms(),
		Timeout:           timeout,
	}
	cfg.KeyExchanges, cfg.Ciphers, cfg.MACs = plan.kex, plan.ciphers, plan.macs
	d.logPlan(r, tr, au, plan, cfg)
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	sc, chans, reqs, err := gossh.NewClientConn(nc, hostKeyAddr(r), cfg)
	stop()
	if err != nil {
		herr := d.handshakeError(ctx, r, tr, au, nc, err, timeout, route)
		nc.Close()
		return nil, herr
	}
	_ = nc.SetDeadline(time.Time{})
	c := d.newClient(r, gossh.NewClient(sc, chans, reqs), nil)
	c.Route = route
	key, how := tr.presented()
	c.HostKey = fmt.Sprintf("%s %s, %s", key.Type(), fingerprint(key, r.FingerprintHash), how)
	c.AuthKey = au.acceptedKey()
	algs := sc.(gossh.AlgorithmsConnMetadata).Algorithms()
	d.log.Info("authenticated", "host", r.Alias, "user", r.User, "key", c.AuthKey, "hostKey", c.HostKey,
		"kex", algs.KeyExchange, "hostKeyAlgorithm", algs.HostKey, "cipher", algs.Write.Cipher, "mac", macName(algs.Write),
		"server", string(sc.ServerVersion()), "route", route)
	return c, nil
}

// sshCommand is `ssh` as this registration connects: its --config,
// --option, --known-hosts and --identity, for remedies.
func (d *Dialer) sshCommand(args ...string) string {
	var extra []string
	if d.knownHosts != "" {
		extra = append(extra, "-o", "UserKnownHostsFile="+d.knownHosts, "-o", "GlobalKnownHostsFile=/dev/null")
	}
	if d.identity != "" {
		extra = append(extra, "-i", d.identity)
	}
	return d.res.sshCommand(append(extra, args...)...)
}

// StageError marks which stage of the connection failed (never on the
// wire), with what was learnt before it: the host key when authentication
// failed.
type StageError struct {
	stage   error
	HostKey string // the verified host key, when a later stage failed
}

func (e *StageError) Error() string { return e.stage.Error() }
func (e *StageError) Unwrap() error { return e.stage }

func macName(a gossh.DirectionAlgorithms) string {
	if strings.Contains(a.Cipher, "gcm") || strings.Contains(a.Cipher, "chacha20") {
		return "<implicit>"
	}
	return a.MAC
}

func (d *Dialer) handshakeError(ctx context.Context, r *Resolved, tr *trust, au *auth, nc net.Conn, err error, timeout time.Duration, route string) error {
	if f := tr.hostKeyFailure(); f != nil {
		d.log.Info("host key refused", "host", r.Alias, "error", f.Message)
		return f
	}
	if strings.Contains(err.Error(), "unable to authenticate") {
		f := au.failure(r, err, func(key string) string {
			if key == "" {
				return d.res.toolCommand("ssh-copy-id", r.Alias)
			}
			return d.res.toolCommand("ssh-copy-id", "-i", key, r.Alias)
		})
		key, how := tr.presented()
		f.Err = &StageError{stage: ErrAuth, HostKey: fmt.Sprintf("%s %s, %s", key.Type(), fingerprint(key, r.FingerprintHash), how)}
		d.log.Info("authentication refused", "host", r.Alias, "offered", strings.Join(au.tried, ", "), "agent", au.agentSrc, "error", f.Message)
		return f
	}
	what := fmt.Sprintf("SSH handshake with %s (%s)", SafeName(r.Alias), route)
	if p, ok := nc.(*proxyConn); ok {
		if st := p.status(); st != "" {
			err = fmt.Errorf("%v; the ProxyCommand %s", err, st)
		}
	}
	if ctx.Err() != nil {
		return protocol.NotStarted(ctx.Err(), fmt.Sprintf("%s did not finish within %s (ConnectTimeout)", what, timeout))
	}
	return protocol.NotStarted(err, what+" failed")
}

// logResolved logs what `ssh -v` tells about the configuration: at info
// the destination and its route (the hops; a ProxyCommand by where it is
// set, its text only at debug), at debug the files read and the rest.
func (d *Dialer) logResolved(r *Resolved, via *Client) {
	route, shown := "direct", "direct"
	switch {
	case via != nil:
		route = "through jump host " + via.Resolved.Alias
		shown = route
	case r.ProxyCommand != "":
		route = "ProxyCommand " + r.ProxyCommand + " (" + r.Where("ProxyCommand") + ")"
		shown = "ProxyCommand (" + r.Where("ProxyCommand") + ")"
	case len(r.ProxyJump) > 0:
		route = "ProxyJump " + strings.Join(r.ProxyJump, ",") + " (" + r.Where("ProxyJump") + ")"
		shown = route
	}
	d.log.Info("connecting", "host", r.Alias, "user", r.User, "hostname", r.HostName, "port", r.Port, "route", shown)
	if !d.log.Enabled(context.Background(), -4) {
		return
	}
	d.log.Debug("resolved", "host", r.Alias, "via", r.Via, "configFiles", strings.Join(r.Files(), ", "),
		"options", strings.Join(d.res.options, " "), "user", r.User, "hostname", r.HostName, "port", r.Port, "route", route)
	if cp := r.ControlPath; cp != "" {
		d.log.Debug("ControlPath", "host", r.Alias, "path", r.show(cp), "controlMaster", r.ControlMaster)
	}
	if nd := r.notDone(); len(nd) > 0 {
		d.log.Debug("set in the config but not done by the plugin (its sessions are `ssh -T host CMD` without them)", "host", r.Alias, "options", strings.Join(nd, ", "))
	}
}

// logPlan logs the keys, host key algorithms and ciphers about to be offered.
func (d *Dialer) logPlan(r *Resolved, tr *trust, au *auth, plan algorithmPlan, cfg *gossh.ClientConfig) {
	d.log.Info("keys to offer", "host", r.Alias, "agent", au.agentSrc, "keys", strings.Join(au.tried, ", "), "identitiesOnly", r.IdentitiesOnly)
	if au.agentErr != "" {
		d.log.Info("agent", "host", r.Alias, "error", au.agentErr)
	}
	if !d.log.Enabled(context.Background(), -4) {
		return
	}
	kh := strings.Join(tr.shownFiles(), ", ")
	if kh == "" {
		kh = "none found"
	}
	d.log.Debug("host keys", "host", r.Alias, "lookup", tr.pattern(), "knownHosts", kh, "hostKeyAlgorithms", strings.Join(cfg.HostKeyAlgorithms, ","))
	if len(plan.missing) > 0 {
		d.log.Debug("algorithms ssh would offer that the plugin does not implement (left out)", "host", r.Alias, "algorithms", strings.Join(plan.missing, ", "))
	}
}
