// Package gitlink holds the link seam's conventions that every backend
// shares (mu-plugin-fake, mu-plugin-docker, mu-plugin-k8s, mu-plugin-ssh): where a pushed
// commit lands, what a full sha is, the script that readies a remote
// repository for link.push and what its exit codes mean, and how a phase's
// check steps are built.
package gitlink

import (
	_ "embed"

	"github.com/mu-org/mu-plugins/protocol"
)

// PushedRef is the ref a pushed rev lands on in the remote repository:
// one ref per rev, under refs/mu/pushed/, never checked out. A non-bare
// repository with a branch checked out takes the push too, and the commit
// stays reachable (no gc drops it).
func PushedRef(rev string) string { return "refs/mu/pushed/" + rev }

// Refspec is the push refspec for rev: rev onto PushedRef(rev).
func Refspec(rev string) string { return rev + ":" + PushedRef(rev) }

// IsFullSHA reports whether rev is a full object name: 40 (SHA-1) or 64
// (SHA-256) lowercase hex digits. The spec's link.push takes only those.
func IsFullSHA(rev string) bool {
	if len(rev) != 40 && len(rev) != 64 {
		return false
	}
	for i := 0; i < len(rev); i++ {
		if c := rev[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// CheckRev refuses (permanent) a link.push rev that is not a full sha.
func CheckRev(rev string) error {
	if IsFullSHA(rev) {
		return nil
	}
	if len(rev) > 100 {
		rev = rev[:100] + "…"
	}
	return protocol.Errorf(protocol.Permanent, "link.push: rev %q is not a full lowercase sha (40 or 64 hex digits)", rev)
}

// PrepareScript readies the remote repository for link.push. It runs on
// the host as `sh -c PrepareScript NAME REPO REV` (or fed on stdin with
// REPO and REV as its positional parameters), in the login directory, so
// a relative REPO is relative to it. REPO is created as a git repository
// when it is not one; its exit code then says what the push must do:
// PrepareReady, PrepareHasRev, or any other code for a failure (git's
// message on stderr).
//
//go:embed scripts/push-prepare.sh
var PrepareScript string

// The push-preparation script's exit codes.
const (
	// PrepareReady: REPO is a repository that does not hold REV: push it.
	PrepareReady = 0
	// PrepareHasRev: REPO already holds REV: link.push succeeds with
	// nothing pushed, the repository untouched (the spec's idempotence).
	PrepareHasRev = 3
)
