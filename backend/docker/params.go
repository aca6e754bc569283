package docker

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/mu-org/mu-plugins/internal/hostresult"
	"github.com/mu-org/mu-plugins/protocol"
)

// knownParams are host.acquire's --param names.
var knownParams = []string{"capDrop", "cpus", "idle", "image", "maxJobs", "memory", "network", "pids", "ttl", "user"}

// DefaultPids is a host's process limit when the pids param does not set
// one: room for an agent, its tools and parallel builds; a fork bomb stops
// there instead of taking the Engine's machine.
const DefaultPids = 4096

// acquireSpec is host.acquire's params, parsed.
type acquireSpec struct {
	hostresult.Terms // ttl, idle, maxJobs
	Image            string
	NanoCPUs         int64
	Memory           int64
	Pids             int64
	Network          string   // "": the Engine's default network
	User             string   // "": the image's user
	CapDrop          []string // capabilities dropped from the Engine's default set
}

var (
	networkRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
	userRE    = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,31}(:[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,31})?$`)
	capRE     = regexp.MustCompile(`^(CAP_)?[A-Z][A-Z_]{1,30}$`)
)

// parseParams reads the --param map. An unknown or malformed param is a
// permanent error naming the known ones.
func parseParams(p map[string]string, defImage string) (acquireSpec, error) {
	s := acquireSpec{Image: defImage, Pids: DefaultPids}
	bad := func(k, why string) error {
		return protocol.Errorf(protocol.Permanent, "param %s=%q: %s (known params: %s)", k, p[k], why, strings.Join(knownParams, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		v := p[k]
		if ok, why := s.Terms.Set(k, v, time.Nanosecond); ok {
			if why != "" {
				return s, bad(k, why)
			}
			continue
		}
		switch k {
		case "image":
			if v == "" {
				return s, bad(k, "an image name is required")
			}
			s.Image = v
		case "cpus":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f > 1024 || math.IsNaN(f) {
				return s, bad(k, "want a positive number of CPUs such as 1.5")
			}
			s.NanoCPUs = int64(f * 1e9)
		case "memory":
			n, err := units.RAMInBytes(v)
			if err != nil || n < 6*1024*1024 {
				return s, bad(k, "want a size of at least 6m such as 512m or 2g")
			}
			s.Memory = n
		case "pids":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 64 || n > 1<<22 {
				return s, bad(k, "want a process limit from 64 to 4194304")
			}
			s.Pids = n
		case "network":
			if !networkRE.MatchString(v) || v == "host" {
				return s, bad(k, "want none, bridge or the name of a network on the Engine (never host, nor container:…)")
			}
			s.Network = v
		case "user":
			if !userRE.MatchString(v) {
				return s, bad(k, "want a user of the image, or UID[:GID], such as 1000:1000")
			}
			s.User = v
		case "capDrop":
			for _, c := range strings.Split(v, ",") {
				c = strings.ToUpper(strings.TrimSpace(c))
				if c != "ALL" && !capRE.MatchString(c) {
					return s, bad(k, "want ALL or capability names separated by commas, such as NET_RAW,MKNOD")
				}
				s.CapDrop = append(s.CapDrop, c)
			}
		default:
			return s, protocol.Errorf(protocol.Permanent, "unknown param %q (known params: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	if s.Image == "" {
		return s, protocol.HumanError("register the plugin with --image IMAGE (mu plugin add NAME -- mu-plugin-docker --image IMAGE), or pass --param image=IMAGE; docs/docker.md, Images, says what an image needs",
			"no image: mu-plugin-docker has no default image, and this acquire names none")
	}
	return s, nil
}

// storedResult is the acquire result kept in the container's LabelResult.
type storedResult = hostresult.Stored

func parseResult(label string) (storedResult, error) {
	return hostresult.ParseAt("label "+LabelResult, label)
}
