package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/protocol"
)

// CredentialCommand is the sub-command a kubeconfig's exec credential
// helper runs under (docs/k8s.md, "Credential helpers"): client-go runs a
// helper itself, with no time bound, no bound on what it prints and while
// holding the lock every request takes, so a helper that hangs silenced
// every call. The plugin points client-go at this sub-command, which runs
// the helper bounded.
const CredentialCommand = "credential-helper"

// credTimeout bounds one run of the helper (below ReachTimeout, so the
// first call's reach says why); credOutput what it may print on stdout (an
// ExecCredential is a few KiB).
const (
	credTimeout = 4 * time.Second
	credOutput  = 1 << 20
)

// wrapCredentialHelper points cfg's exec credential helper, if any, at
// self's CredentialCommand, and returns the helper's command ("" when the
// kubeconfig has none).
func wrapCredentialHelper(cfg *rest.Config, self string) string {
	ep := cfg.ExecProvider
	if ep == nil || self == "" {
		return ""
	}
	helper := ep.Command
	ep.Args = append([]string{CredentialCommand, "--", helper}, ep.Args...)
	ep.Command = self
	return helper
}

// CredentialHelper is the CredentialCommand: `-- HELPER ARGS…` runs the
// helper with this process's environment (client-go's, with
// KUBERNETES_EXEC_INFO) and stdin, copies what it printed to stdout once it
// exited, and exits with its status. A helper that runs past credTimeout or
// prints more than credOutput is stopped with everything it started, and
// the sub-command exits 1 saying so on stderr.
func CredentialHelper(ctx context.Context, args []string) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "usage: mu-plugin-k8s "+CredentialCommand+" -- HELPER [ARG…] (a kubeconfig's exec credential helper, run bounded)")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, credTimeout)
	defer cancel()
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin = os.Stdin
	out := &capped{max: credOutput, over: cancel}
	cmd.Stdout, cmd.Stderr = out, &capped{w: os.Stderr, max: credOutput}
	res, err := proc.Run(ctx, cmd, proc.Options{KillLeftovers: true})
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "cannot run %s: %v\n", args[1], err)
		return 1
	case out.cut:
		fmt.Fprintf(os.Stderr, "%s printed more than %d bytes and was stopped\n", args[1], credOutput)
		return 1
	case res.Stopped:
		fmt.Fprintf(os.Stderr, "%s did not finish within %v and was stopped, with everything it started\n", args[1], credTimeout)
		return 1
	}
	_, _ = os.Stdout.Write(out.b)
	return res.ExitCode
}

// capped keeps (in b, or passes to w) at most max bytes; past them it
// drops the rest and calls over.
type capped struct {
	mu   sync.Mutex
	w    io.Writer
	b    []byte
	n    int
	max  int
	cut  bool
	over func()
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := c.max - c.n; len(p) > room {
		p, c.cut = p[:room], true
		if c.over != nil {
			c.over()
		}
	}
	c.n += len(p)
	if c.w != nil {
		_, _ = c.w.Write(p)
	} else {
		c.b = append(c.b, p...)
	}
	return n, nil
}

// credentialError is err, from a request whose credentials the helper
// could not give, as the error a person can act on: it names the helper
// and the fix. nil when err is not the helper's.
func (b *Backend) credentialError(err error) error {
	h := b.cfg.Target.Helper
	if h == "" || err == nil || !strings.Contains(err.Error(), "getting credentials") && !errors.Is(err, errStalled) {
		return nil
	}
	return &protocol.Error{Kind: protocol.Human, Err: err,
		Message: fmt.Sprintf("the kubeconfig's exec credential helper %s gave no credentials in time (it failed, printed more than %d bytes, or ran past %v and was stopped): %v", h, credOutput, credTimeout, err),
		Remedy: fmt.Sprintf("run %s by hand (or `kubectl version`) to see why, log in again or fix the helper, or point the plugin at another context (chosen by %s)",
			h, b.cfg.Target.Source)}
}

// deadlineBound is a RoundTripper that returns when the request's context
// ends, whatever the one it wraps is doing: client-go's exec authenticator
// waits for a helper without looking at any context.
type deadlineBound struct{ rt http.RoundTripper }

func (d deadlineBound) RoundTrip(req *http.Request) (*http.Response, error) {
	type result struct {
		r   *http.Response
		err error
	}
	ch := make(chan result, 1)
	go func() {
		r, err := d.rt.RoundTrip(req)
		ch <- result{r, err}
	}()
	select {
	case r := <-ch:
		return r.r, r.err
	case <-req.Context().Done():
		go func() {
			if r := <-ch; r.r != nil {
				_ = r.r.Body.Close()
			}
		}()
		return nil, fmt.Errorf("%w: %w", errStalled, req.Context().Err())
	}
}

// errStalled: a request's context ended while client-go still held it
// (waiting for credentials, or for the server).
var errStalled = errors.New("the request got no credentials or answer before its call ended")
