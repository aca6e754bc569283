package caller

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CheckRegistration runs the spec's registration checks on a registered
// name and its argv[0]: the path is absolute, its basename is
// mu-plugin-<name>, and the file (a symlink's target) is a regular file
// owned by the current (effective) uid that neither its group nor the world
// can write. mu runs them at add and every time it starts the plugin; Start
// runs them too. A failure is a *LoadRefusal naming the check.
func CheckRegistration(name, path string) error {
	refuse := func(rule, format string, args ...any) error {
		return &LoadRefusal{Name: name, Rule: rule, Rules: []string{rule}, Detail: fmt.Sprintf(format, args...)}
	}
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return refuse(RuleRegName, "%q is not a plugin name", name)
	}
	if !filepath.IsAbs(path) {
		return refuse(RuleRegPath, "%q is not an absolute path", path)
	}
	if want := "mu-plugin-" + name; filepath.Base(path) != want {
		return refuse(RuleRegBasename, "the executable's basename is %q, not %q", filepath.Base(path), want)
	}
	fi, err := os.Stat(path) // follows symlinks: the checks are on the target
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return refuse(RuleRegFile, "%s does not exist", path)
		}
		return refuse(RuleRegFile, "%s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return refuse(RuleRegFile, "%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return refuse(RuleRegOwner, "%s: cannot read its owner", path)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return refuse(RuleRegOwner, "%s is owned by uid %d, not by you (uid %d)", path, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return refuse(RuleRegWritable, "%s is writable by its group or the world (mode %s)", path, fi.Mode().Perm())
	}
	return nil
}
