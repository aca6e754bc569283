package k8s

import (
	"context"
	"errors"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/internal/sandbox"
)

// The cluster is a sandbox.Provider: pods/exec, the API's errors, and the
// environment that pins git's bridge to this cluster and namespace; its
// host methods (Acquire, Lookup, Status, Release, CheckSteps) and its
// gate (Reach).
var _ sandbox.Provider = (*Backend)(nil)

// HostName names a pod in a message.
func (b *Backend) HostName(pod string) string { return "pod " + pod }

// HandleIs says what a k8s host's handle is.
func (b *Backend) HandleIs() string { return "a pod name" }

// ProviderName names the API server in a call's error.
func (b *Backend) ProviderName() string { return "the API server" }

// ExecOnce runs argv in the pod as a one-off exec: its exit code and
// stderr.
func (b *Backend) ExecOnce(ctx context.Context, pod string, argv []string) (int, []byte, error) {
	code, _, stderr, err := b.execOnce(ctx, pod, argv, nil)
	return code, stderr, err
}

// APIError classifies an API server error for a reply.
func (b *Backend) APIError(err error, what string) error { return apiErr(err, what) }

// BridgeEnv pins git's bridge to this cluster and namespace.
func (b *Backend) BridgeEnv(context.Context) (map[string]string, func(), error) {
	return b.cfg.Target.Env(), func() {}, nil
}

// dropPool closes the pod's channels and forgets what was learnt of it
// (it is being deleted, or gone).
func (b *Backend) dropPool(pod string) { b.hosts.Forget(pod) }

// executor is an exec of argv in the pod's container: WebSocket (one round
// trip cheaper), falling back to SPDY for an API server that refuses the
// upgrade.
func executor(cfg *rest.Config, cs restClient, ns, pod string, argv []string, stdin bool) (remotecommand.Executor, error) {
	req := cs.Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: containerName, Command: argv, Stdin: stdin, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// restClient is the core API's REST client (what an exec request is built on).
type restClient interface{ Post() *rest.Request }

// OpenSession starts a channel's loop in the pod over one exec stream:
// the exec's setup (a round trip to the API server and the kubelet) is
// paid once per channel, not once per script.
func (b *Backend) OpenSession(ctx context.Context, pod string) (*execchan.Session, error) {
	ex, err := executor(b.cfg.Target.REST, b.cs.CoreV1().RESTClient(), b.ns, pod, []string{"/bin/sh", "-c", execchan.AgentScript}, true)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := execchan.NewSession(pipeConn{pw, cancel})
	go func() {
		err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: pr, Stdout: s.Stdout(), Stderr: s.Stderr()})
		if err == nil {
			err = errors.New("the exec channel ended")
		}
		_ = pr.CloseWithError(err) // a later write fails instead of blocking
		cancel()
		s.End(err)
	}()
	return s, nil
}

// pipeConn is an exec stream's stdin and its teardown as an execchan.Conn.
type pipeConn struct {
	w      *io.PipeWriter
	cancel context.CancelFunc
}

func (c pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c pipeConn) Close() error {
	_ = c.w.Close()
	c.cancel()
	return nil
}

// execOnce runs argv in the pod as a one-off exec, with stdin if given,
// and returns its exit code once its output ended.
func (b *Backend) execOnce(ctx context.Context, pod string, argv []string, stdin io.Reader) (int, []byte, []byte, error) {
	ex, err := executor(b.cfg.Target.REST, b.cs.CoreV1().RESTClient(), b.ns, pod, argv, stdin != nil)
	if err != nil {
		return -1, nil, nil, err
	}
	out, errb := outcap.New(outcap.MaxStream), outcap.New(outcap.MaxStream)
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: out, Stderr: errb})
	return exitOf(err, out.Kept(), errb.Kept())
}

// exitOf is a finished exec's exit code: a non-zero exit is an error of
// client-go's that carries it.
func exitOf(err error, out, errs []byte) (int, []byte, []byte, error) {
	var ce utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, out, errs, nil
	case errors.As(err, &ce):
		return ce.ExitStatus(), out, errs, nil
	}
	return -1, out, errs, err
}
