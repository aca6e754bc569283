package docker

import (
	"context"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/execchan"
)

// dropPool closes ctr's channels (the container is being removed).
func (b *Backend) dropPool(ctr string) { b.hosts.DropPool(ctr) }

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
