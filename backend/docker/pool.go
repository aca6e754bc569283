package docker

import (
	"context"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/execchan"
)

// pool returns ctr's exec channels (internal/execchan over the Engine's
// exec API).
func (b *Backend) pool(ctr string) *execchan.Pool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pools[ctr]
	if p == nil {
		p = execchan.NewPool(execchan.Backend{
			Open: func(ctx context.Context) (*execchan.Session, error) { return openSession(ctx, b.api, ctr) },
			Stop: func(ctx context.Context, mark string) error { return b.stopRun(ctx, ctr, mark) },
			OpenErr: func(err error) error {
				return engineErr(err, "opening an exec channel in container "+short(ctr))
			},
		}, b.cfg.MaxSessions)
		b.pools[ctr] = p
	}
	return p
}

// dropPool closes ctr's channels (the container is being removed).
func (b *Backend) dropPool(ctr string) {
	b.mu.Lock()
	p := b.pools[ctr]
	delete(b.pools, ctr)
	b.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// openSession starts a channel's loop in ctr: Docker's exec setup (about
// 45-60 ms) is paid once per channel, not once per script.
func openSession(ctx context.Context, api execer, ctr string) (*execchan.Session, error) {
	ex, err := api.ExecCreate(ctx, ctr, client.ExecCreateOptions{
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Cmd: []string{"/bin/sh", "-c", execchan.AgentScript},
	})
	if err != nil {
		return nil, err
	}
	hj, err := api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, err
	}
	s := execchan.NewSession(hijacked{hj})
	go func() {
		_, err := stdcopy.StdCopy(s.Stdout(), s.Stderr(), hj.Reader)
		s.End(err)
	}()
	return s, nil
}

// hijacked is an exec's attached stream as an execchan.Conn.
type hijacked struct{ hj client.ExecAttachResult }

func (h hijacked) Write(p []byte) (int, error) { return h.hj.Conn.Write(p) }
func (h hijacked) Close() error                { h.hj.Close(); return nil }
