package tmuxjob

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// jobID names a job on the host: the first 24 hex digits of the key's
// sha256. The key itself (any string) is kept in the job's directory.
func jobID(key string) string {
	s := sha256.Sum256([]byte("mu-job\x00" + key))
	return hex.EncodeToString(s[:12])
}

// handleFor is a job's handle: its tmux session's name.
func handleFor(id string) string { return "mu-" + id }

// deliveryHash names a delivery by its msgId (or, for a command, by what
// it carries).
func deliveryHash(parts ...string) string {
	s := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(s[:16])
}

// shQuote quotes s as one POSIX sh word.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// reservedEnv may not be set by a spec: the wrapper and tmux own them.
var reservedEnv = map[string]bool{"MU_CHANNEL_DIR": true, "TMUX": true, "TMUX_PANE": true}

// envFile renders env as a file the wrapper sources: one `export NAME='v'`
// per variable, each value quoted as one word. It refuses what
// protocol.CheckEnv refuses (a name that is not a shell name, a value
// holding NUL) and a name the wrapper owns.
func envFile(env map[string]string) (string, error) {
	if err := protocol.CheckEnv(env); err != nil {
		return "", err
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# written by mu-plugins tmuxjob: the job's spec.env\n")
	for _, k := range names {
		v := env[k]
		if reservedEnv[k] {
			return "", fmt.Errorf("env name %q is reserved for the job's wrapper", k)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shQuote(v))
	}
	return b.String(), nil
}

// incName is what a harness may name an incarnation: it becomes part of a
// file name.
var incName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func validInc(s string) bool { return incName.MatchString(s) && s != "." && s != ".." }

// noNUL reports whether s can travel as an argument.
func noNUL(s string) bool { return !strings.ContainsRune(s, 0) }
