package tmuxjob

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// LoginRoot is the state root dir on the host r reaches: dir itself when
// absolute, else dir under the login directory of the runs' user (asked
// with one run: `cd && pwd -P`). A backend asks once per host per
// invocation and keeps the answer. err is a run that did not answer
// (retry); a host whose user has no usable login directory is a
// *RootError.
func LoginRoot(ctx context.Context, r Runner, dir string) (string, error) {
	if dir == "" || strings.ContainsAny(dir, "\n\x00") {
		return "", &RootError{Why: fmt.Sprintf("the jobs directory %q is not usable", dir)}
	}
	if path.IsAbs(dir) {
		if path.Clean(dir) == "/" {
			return "", &RootError{Why: "the jobs directory cannot be /"}
		}
		return path.Clean(dir), nil
	}
	out, _, code, err := r.Run(ctx, []string{"/bin/sh", "-c", `cd && pwd -P`}, nil)
	if err != nil {
		return "", err
	}
	home := strings.TrimSpace(string(out))
	if code != 0 || !path.IsAbs(home) {
		return "", &RootError{Why: fmt.Sprintf("the user has no usable login directory (%q)", home)}
	}
	root := path.Join(home, dir)
	if root == "/" {
		return "", &RootError{Why: "the jobs directory resolves to /"}
	}
	return root, nil
}

// RootError: the host gives no usable state root; a retry will not help.
type RootError struct{ Why string }

func (e *RootError) Error() string { return e.Why }
