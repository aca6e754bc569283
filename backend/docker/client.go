package docker

import (
	"context"
	"os"

	"github.com/moby/moby/client"
)

// The backend's view of the Engine: small consumer-side interfaces over the
// moby client, each naming only the calls one part of the plugin makes. The
// real *client.Client satisfies all of them; tests that need a fault the real
// Engine cannot show substitute one.

// containers is what host.acquire, lookup, status and release use.
type containers interface {
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerStart(ctx context.Context, container string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerInspect(ctx context.Context, container string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerRemove(ctx context.Context, container string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ImageList(ctx context.Context, options client.ImageListOptions) (client.ImageListResult, error)
}

// execer is what the link uses to run processes in a container.
type execer interface {
	ExecCreate(ctx context.Context, container string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, options client.ExecInspectOptions) (client.ExecInspectResult, error)
}

// system is what the handshake and the reach checks ask the Engine.
type system interface {
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)
	ImageInspect(ctx context.Context, image string, options ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ClientVersion() string
}

// engine is all of the above.
type engine interface {
	containers
	execer
	system
}

var _ engine = (*client.Client)(nil)

// NewClient is a client for the Engine the plugin's sub-commands (a job's
// view, git's bridge) address: pinnedEndpoint's.
func NewClient() (*Client, error) {
	ep, err := pinnedEndpoint(os.Getenv)
	if err != nil {
		return nil, err
	}
	return ep.NewClient(nil)
}

// pinnedEndpoint is the endpoint a sub-command's environment names: chosen
// as the docker CLI chooses it (ResolveEndpoint, no --context), with the SSH
// settings of an ssh:// endpoint. The plugin pins that environment to its
// own endpoint (Endpoint.PinEnv).
func pinnedEndpoint(getenv func(string) string) (Endpoint, error) {
	ep, err := ResolveEndpoint("", getenv)
	if err != nil {
		return Endpoint{}, err
	}
	if ep.Scheme() == "ssh" {
		if err := ep.UseSSH(sshFlagsFromEnv(getenv)); err != nil {
			return Endpoint{}, err
		}
	}
	return ep, nil
}
