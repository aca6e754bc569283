package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/protocol"
)

// A host's default limits when the cpus and memory params do not set
// them: the k8s provider's pod limits (2 CPU, 2 GiB), so one agent cannot
// take the Engine's machine. The cpus default is the Engine's CPU count
// when it has fewer (the Engine refuses more CPUs than it has).
const (
	DefaultNanoCPUs = 2e9
	DefaultMemory   = 2 << 30
)

// defaultLimits fills in the limits the params left unset.
func (b *Backend) defaultLimits(ctx context.Context, s *acquireSpec) {
	if s.Memory == 0 {
		s.Memory = DefaultMemory
	}
	if s.NanoCPUs != 0 {
		return
	}
	s.NanoCPUs = DefaultNanoCPUs
	if info, err := b.api.Info(ctx, client.InfoOptions{}); err == nil && info.Info.NCPU > 0 && int64(info.Info.NCPU)*1e9 < s.NanoCPUs {
		s.NanoCPUs = int64(info.Info.NCPU) * 1e9
	}
}

// isRoot reports whether a container user (the image's USER or the user
// param: name or UID, each with an optional :group) is root.
func isRoot(user string) bool {
	u, _, _ := strings.Cut(user, ":")
	return u == "" || u == "root" || u == "0"
}

// refuseRoot refuses a host whose agent would run as root without a user
// param asking for it: an image with no USER (or USER root) runs as root
// otherwise. An image the Engine does not have is left to create's error.
func (b *Backend) refuseRoot(ctx context.Context, s acquireSpec) error {
	if s.User != "" {
		return nil // the param chose, root included
	}
	ins, err := b.api.ImageInspect(ctx, s.Image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		return protocol.Wrap(protocol.Retryable, err, "inspecting image "+s.Image)
	}
	user := ""
	if ins.Config != nil {
		user = ins.Config.User
	}
	if !isRoot(user) {
		return nil
	}
	return protocol.HumanError(
		"give the image a non-root USER with a home (docs/docker.md, Images), or pass --param user=UID[:GID] of a non-root user it has; --param user=root runs the agent as root knowingly",
		"image %s runs as root (its USER is %q) and no user param says so: mu-plugin-docker runs agents as a non-root user unless asked", s.Image, user)
}

// containerStep is host check's container step of a running container:
// passed, or a warning when its processes run as root (a user param asked
// for it, or the user maps to uid 0).
func (b *Backend) containerStep(ctx context.Context, s *gitlink.Steps, ctr string) {
	r, err := b.hosts.Pool(ctr).Script(ctx, "id -u", ".", 10*time.Second)
	if err == nil && r.ExitCode != nil && *r.ExitCode == 0 && strings.TrimSpace(r.Stdout) == "0" {
		s.Warn("container", fmt.Sprintf("container %s is running, as root (uid 0): its agent can do anything in the container; pass --param user=UID[:GID] of a non-root user for another host", short(ctr)))
		return
	}
	s.Pass("container", fmt.Sprintf("container %s is running", short(ctr)))
}
