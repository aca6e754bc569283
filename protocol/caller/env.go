package caller

import (
	"strings"
)

// localOnlyExact and localOnlyPrefixes are mu's local-only variables, which a
// plugin never gets (spec "Process"):
//
//   - MU_DB_PATH, MU_STATE_DIR, MU_SYNC_DIR: mu's own storage;
//   - MU_WORKSTREAM and every MU_AGENT* variable (MU_AGENT, MU_AGENT_NAME,
//     MU_AGENT_ID, MU_AGENT_INCARNATION…): the calling agent's identity;
//   - every MU_CTL* and MU_SOCKET* variable (MU_CTL_SOCK, MU_CTL_SOCKET,
//     MU_SOCKET…): the control socket.
//
// Every call's target carries the identity a plugin needs instead.
var (
	localOnlyExact    = []string{"MU_DB_PATH", "MU_STATE_DIR", "MU_SYNC_DIR", "MU_WORKSTREAM"}
	localOnlyPrefixes = []string{"MU_AGENT", "MU_CTL", "MU_SOCKET"}
)

// LocalOnly reports whether the environment variable name is one of mu's
// local-only variables, which a plugin never receives.
func LocalOnly(name string) bool {
	for _, n := range localOnlyExact {
		if name == n {
			return true
		}
	}
	for _, p := range localOnlyPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// PluginEnv builds a plugin's environment: base (KEY=VALUE entries, mu's
// own environment) with extra applied over it (a later entry replaces an
// earlier one of the same name), minus every local-only variable, whichever
// list it came from. Entries without '=' are dropped.
func PluginEnv(base, extra []string) []string {
	idx := map[string]int{}
	var out []string
	for _, list := range [][]string{base, extra} {
		for _, kv := range list {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || LocalOnly(k) {
				continue
			}
			if i, seen := idx[k]; seen {
				out[i] = kv
				continue
			}
			idx[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}
