package k8s

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mu-org/mu-plugins/internal/hostresult"
	"github.com/mu-org/mu-plugins/protocol"
)

// knownParams are host.acquire's --param names.
var knownParams = []string{"cpu", "cpuRequest", "idle", "image", "maxJobs", "memory", "memoryRequest",
	"nodeSelector", "pullPolicy", "runAsUser", "runtimeClass", "serviceAccount", "ttl"}

// The defaults of a pod's resources: small requests, so that many hosts fit
// a node, and limits always set.
const (
	DefaultCPU           = "2"
	DefaultMemory        = "2Gi"
	DefaultCPURequest    = "50m"
	DefaultMemoryRequest = "64Mi"
)

// acquireSpec is host.acquire's params, parsed.
type acquireSpec struct {
	hostresult.Terms // ttl, idle, maxJobs
	Image            string
	Limits           corev1.ResourceList
	Requests         corev1.ResourceList
	NodeSelector     map[string]string
	ServiceAccount   string // "": automountServiceAccountToken stays false under the namespace's default
	RuntimeClass     string
	PullPolicy       corev1.PullPolicy
	RunAsUser        int64 // 0: the image's
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// parseParams reads the --param map. An unknown or malformed param is a
// permanent error naming the known ones.
func parseParams(p map[string]string, cfg Config) (acquireSpec, error) {
	s := acquireSpec{Image: cfg.Image, RunAsUser: cfg.RunAsUser, PullPolicy: corev1.PullIfNotPresent,
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(DefaultCPU), corev1.ResourceMemory: resource.MustParse(DefaultMemory)},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(DefaultCPURequest), corev1.ResourceMemory: resource.MustParse(DefaultMemoryRequest)}}
	bad := func(k, why string) error {
		return protocol.Errorf(protocol.Permanent, "param %s=%q: %s (known params: %s)", k, p[k], why, strings.Join(knownParams, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if err := s.set(k, p[k], bad); err != nil {
			return s, err
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, l := s.Requests[r], s.Limits[r]; q.Cmp(l) > 0 {
			return s, protocol.Errorf(protocol.Permanent, "the %s request %s is above its limit %s", r, q.String(), l.String())
		}
	}
	if s.Image == "" {
		return s, protocol.HumanError("register the plugin with --image IMAGE (mu plugin add k8s -- mu-plugin-k8s --image IMAGE), or pass --param image=IMAGE; docs/k8s.md says what an image needs",
			"no image: mu-plugin-k8s has no default image, and this acquire names none")
	}
	return s, nil
}

// set reads one param into s.
func (s *acquireSpec) set(k, v string, bad func(k, why string) error) error {
	if ok, why := s.Terms.Set(k, v, time.Second); ok {
		if why != "" {
			return bad(k, why)
		}
		return nil
	}
	switch k {
	case "image":
		if v == "" || strings.ContainsAny(v, " \t\n") {
			return bad(k, "an image reference is required")
		}
		s.Image = v
	case "cpu", "cpuRequest", "memory", "memoryRequest":
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() <= 0 {
			return bad(k, "want a positive quantity such as 500m, 2 (CPU) or 512Mi, 2Gi (memory)")
		}
		r := corev1.ResourceCPU
		if strings.HasPrefix(k, "memory") {
			r = corev1.ResourceMemory
		}
		if strings.HasSuffix(k, "Request") {
			s.Requests[r] = q
		} else {
			s.Limits[r] = q
		}
	case "nodeSelector":
		s.NodeSelector = map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			a, b, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || len(validation.IsQualifiedName(a)) > 0 || len(validation.IsValidLabelValue(b)) > 0 {
				return bad(k, "want label=value pairs separated by commas, such as disktype=ssd,zone=a")
			}
			s.NodeSelector[a] = b
		}
	case "serviceAccount", "runtimeClass":
		if !nameRE.MatchString(v) {
			return bad(k, "want the name of a "+map[string]string{"serviceAccount": "ServiceAccount in the namespace", "runtimeClass": "RuntimeClass"}[k])
		}
		if k == "serviceAccount" {
			s.ServiceAccount = v
		} else {
			s.RuntimeClass = v
		}
	case "pullPolicy":
		switch pp := corev1.PullPolicy(v); pp {
		case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
			s.PullPolicy = pp
		default:
			return bad(k, "want Always, IfNotPresent or Never")
		}
	case "runAsUser":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1<<31-1 {
			return bad(k, "want a non-root numeric UID such as 1000")
		}
		s.RunAsUser = n
	default:
		return protocol.Errorf(protocol.Permanent, "unknown param %q (known params: %s)", k, strings.Join(knownParams, ", "))
	}
	return nil
}

// storedResult is the acquire result kept in the pod's AnnotResult.
type storedResult = hostresult.Stored

func parseResult(s string) (storedResult, error) {
	return hostresult.ParseAt("annotation "+AnnotResult, s)
}
