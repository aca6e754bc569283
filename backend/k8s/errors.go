package k8s

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mu-org/mu-plugins/protocol"
)

// notSent tells an error whose request never reached the API server (the
// connection was refused), so nothing was done.
func notSent(err error) bool {
	var oe *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &oe) && oe.Op == "dial")
}

// apiErr classifies an API error for a read or a link call: one a person
// must fix (RBAC) is human; a missing or invalid object permanent;
// anything else (an API server that does not answer, a cancelled call)
// retryable: a read changes nothing.
func apiErr(err error, what string) error {
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return &protocol.Error{Kind: protocol.Human, Message: what + ": " + err.Error(),
			Remedy: "grant the plugin's user get, create, delete on pods and create on pods/exec in the namespace (kubectl auth can-i), or point it at another context"}
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return protocol.Wrap(protocol.Permanent, err, what)
	}
	return protocol.Wrap(protocol.Retryable, err, what)
}

// createErr classifies a pod create's error other than AlreadyExists: a
// request that never reached the API server, or one it refused, did
// nothing; any other may have created the pod.
func createErr(err error, s acquireSpec) error {
	switch {
	case notSent(err):
		return protocol.Wrap(protocol.Retryable, err, "the API server is unreachable")
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		return &protocol.Error{Kind: protocol.Human, Message: "the namespace's ResourceQuota refused the pod: " + err.Error(),
			Remedy: "release other hosts, raise the namespace's quota (kubectl describe resourcequota), or ask for less with the cpu, memory, cpuRequest and memoryRequest params"}
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "serviceaccount"):
		return &protocol.Error{Kind: protocol.Human, Message: "the service account " + s.ServiceAccount + " was refused: " + err.Error(),
			Remedy: "create the ServiceAccount in the namespace, or pass another --param serviceAccount="}
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return apiErr(err, "creating the pod")
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsNotFound(err):
		return protocol.Wrap(protocol.Permanent, err, "the API server refused the pod")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return protocol.Wrap(protocol.UnknownOutcome, err, "creating the pod")
	}
	return protocol.Wrap(protocol.UnknownOutcome, err, "creating the pod")
}
