package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// RegistrationProblems is what mu would refuse about registering the file
// at path under name (spec "Registration and trust": an absolute path to
// a regular file named mu-plugin-<name>, owned by the user, that neither
// group nor world can write), each with its fix. None: mu accepts it.
func RegistrationProblems(path, name string) []string {
	var out []string
	if !filepath.IsAbs(path) {
		out = append(out, fmt.Sprintf("%s is not an absolute path: register it by its absolute path", path))
	}
	if want := "mu-plugin-" + name; filepath.Base(path) != want {
		out = append(out, fmt.Sprintf("its name %s is not %s: register a copy or link named %s", filepath.Base(path), want, want))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return append(out, err.Error())
	}
	if !fi.Mode().IsRegular() {
		out = append(out, fmt.Sprintf("%s is not a regular file (%s)", path, fi.Mode().Type()))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		out = append(out, fmt.Sprintf("%s is owned by uid %d, not by you (uid %d): install it under a folder of yours (make build's bin/, or ~/bin), or `sudo chown %d %s`", path, st.Uid, os.Geteuid(), os.Geteuid(), path))
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		who := []string{}
		if perm&0o020 != 0 {
			who = append(who, "its group")
		}
		if perm&0o002 != 0 {
			who = append(who, "the world")
		}
		out = append(out, fmt.Sprintf("%s is writable by %s (mode %s): `chmod go-w %s`", path, strings.Join(who, " and "), perm, path))
	}
	return out
}
