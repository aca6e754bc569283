package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/protocol"
)

// ReachTimeout bounds the first contact with the Engine in a plugin's life
// (and each host check's ping): an Engine that accepts and never answers,
// or a tcp endpoint that drops packets, is answered within it.
const ReachTimeout = 2 * time.Second

// Reach makes sure the Engine answers before the first call that needs it.
// Nothing is asked of the Engine before the handshake; the first call pings
// it, bounded by ReachTimeout (which also negotiates the API version, so
// the call's own requests do not ping again), and later calls go straight
// through. An ssh:// endpoint's SSH connection is made (or made again,
// once it dropped) first, bounded by the call and the SSH layer's
// ConnectTimeout: its errors (a host key or a key a person must fix) are
// the call's.
func (b *Backend) Reach(ctx context.Context) error {
	if b.ssh != nil {
		if _, err := b.ssh.connect(ctx); err != nil {
			return err
		}
	}
	if b.reached.Load() {
		return nil
	}
	if _, err := b.ping(ctx); err != nil {
		return err
	}
	b.reached.Store(true)
	return nil
}

// ping asks the Engine for its API version within ReachTimeout. Its error
// names the endpoint, says what to check, and is retryable: nothing was
// done. Over an ssh:// endpoint the channel to the Engine's socket is
// opened first, bounded by the call and not by ReachTimeout: the SSH
// layer's answer (no socket there, a socket the SSH user may not open,
// forwarding refused by sshd) is the call's whenever it arrives, never cut
// short into "no reply" by a slow hop (issue 29).
func (b *Backend) ping(ctx context.Context) (client.PingResult, error) {
	if b.ssh != nil {
		if err := b.ssh.probe(ctx); err != nil {
			b.log.Warn("the Docker Engine's socket cannot be opened over SSH", "endpoint", b.cfg.Endpoint.Host, "from", b.cfg.Endpoint.Source, "err", err)
			return client.PingResult{}, err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	res, err := b.api.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var pe *protocol.Error
	if errors.As(err, &pe) && pctx.Err() == nil {
		b.log.Warn("the Docker Engine cannot be reached", "endpoint", b.cfg.Endpoint.Host, "from", b.cfg.Endpoint.Source, "err", pe.Message)
		return res, pe
	}
	what := "is unreachable"
	if errors.Is(err, context.DeadlineExceeded) {
		what = fmt.Sprintf("did not answer within %v", ReachTimeout)
		err = errors.New("no reply")
	}
	b.log.Warn("the Docker Engine does not answer", "endpoint", b.cfg.Endpoint.Host, "from", b.cfg.Endpoint.Source, "err", err)
	return res, &protocol.Error{Kind: protocol.Retryable,
		Message: fmt.Sprintf("the Docker Engine at %s %s: %v", b.cfg.Endpoint, what, err),
		Remedy:  b.reachRemedy()}
}

// reachRemedy says what to check when the Engine does not answer.
func (b *Backend) reachRemedy() string {
	ep := b.cfg.Endpoint
	check := "DOCKER_HOST=" + ep.Host + " docker info"
	if ep.Context != DefaultContext {
		check = "docker --context " + ep.Context + " info"
	}
	return fmt.Sprintf("start the Docker Engine at %s, or point the plugin at one that runs (chosen by %s; see docs/docker.md, Endpoints); `%s` shows what the docker CLI gets there", ep.Host, ep.Source, check)
}
