package contract

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// registrationChecks are the rules mu applies to the registered file at
// add and at every start (spec "Registration and trust"). They need no
// process.
func registrationChecks() []check {
	return []check{
		{name: "registration/absolute-path", run: checkRegistrationAbsolutePath},
		{name: "registration/basename", run: checkRegistrationBasename},
		{name: "registration/regular-file", run: checkRegistrationRegularFile},
		{name: "registration/owner", run: checkRegistrationOwner},
		{name: "registration/not-writable", run: checkRegistrationNotWritable},
	}
}

// checkRegistrationAbsolutePath (registration/absolute-path): argv[0] is an
// absolute path.
func checkRegistrationAbsolutePath(t *T) {
	if p := t.s.opts.Argv[0]; !filepath.IsAbs(p) {
		t.Fatalf("%q is not an absolute path", p)
	}
}

// checkRegistrationBasename (registration/basename): its basename is
// `mu-plugin-<registered name>`.
func checkRegistrationBasename(t *T) {
	base := filepath.Base(t.s.opts.Argv[0])
	if !strings.HasPrefix(base, "mu-plugin-") || base == "mu-plugin-" {
		t.Fatalf("the basename %q is not mu-plugin-<name>", base)
	}
	if want := "mu-plugin-" + t.s.opts.Name; base != want {
		t.Fatalf("the basename is %q; registered as %q it must be %q", base, t.s.opts.Name, want)
	}
}

// checkRegistrationRegularFile (registration/regular-file): it (a symlink's
// target) is a regular file.
func checkRegistrationRegularFile(t *T) {
	fi := statPlugin(t)
	if !fi.Mode().IsRegular() {
		t.Fatalf("%s is not a regular file (%s)", t.s.opts.Argv[0], fi.Mode().Type())
	}
}

// checkRegistrationOwner (registration/owner): owned by the user running the
// suite.
func checkRegistrationOwner(t *T) {
	fi := statPlugin(t)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("cannot read the owner of %s", t.s.opts.Argv[0])
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		t.Fatalf("%s is owned by uid %d, not by you (uid %d)", t.s.opts.Argv[0], st.Uid, uid)
	}
}

// checkRegistrationNotWritable (registration/not-writable): neither its
// group nor the world can write it.
func checkRegistrationNotWritable(t *T) {
	fi := statPlugin(t)
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		t.Fatalf("%s is writable by its group or the world (mode %s)", t.s.opts.Argv[0], perm)
	}
}

// statPlugin stats the registered file, following a symlink: the rules are
// on its target.
func statPlugin(t *T) os.FileInfo {
	fi, err := os.Stat(t.s.opts.Argv[0])
	if err != nil {
		t.Fatalf("%v", err)
	}
	return fi
}
