package protocol

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// envName is a POSIX shell variable name: what a JobSpec's env may name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvName reports whether name can name a JobSpec env variable: a POSIX
// shell variable name, so never one holding `=`, a newline or a NUL.
func EnvName(name string) bool { return envName.MatchString(name) }

// CheckEnv checks a JobSpec's env as every backend here takes it
// (docs/protocol.md): each name a shell variable name (EnvName), each value
// free of NUL (no process can carry one). Names are checked in sorted
// order, so the first one refused is always the same.
func CheckEnv(env map[string]string) error {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch {
		case !EnvName(k):
			return fmt.Errorf("env name %q is not a shell variable name", k)
		case strings.ContainsRune(env[k], 0):
			return fmt.Errorf("env %s holds a NUL byte", k)
		}
	}
	return nil
}
