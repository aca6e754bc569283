package tmuxjob

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/mu-org/mu-plugins/protocol"
)

// LoginRoot is the state root dir on the host r reaches: dir itself when
// absolute, else dir under the login directory of the runs' user (`cd &&
// pwd -P`), in one run that also checks the root and its jobs/ folder
// (scripts/root.sh): a folder another user owns or may write is refused,
// with a remedy. err is a run that did not answer (retry); a host whose
// user has no usable login directory, or whose root is not safe, is a
// *RootError.
func LoginRoot(ctx context.Context, r Runner, dir string) (string, error) {
	if dir == "" || strings.ContainsAny(dir, "\n\x00") {
		return "", &RootError{Why: fmt.Sprintf("the jobs directory %q is not usable", dir)}
	}
	root := path.Clean(dir)
	if path.IsAbs(dir) && root == "/" {
		return "", &RootError{Why: "the jobs directory cannot be /"}
	}
	out, errb, code, err := r.Run(ctx, []string{"/bin/sh", "-c", script("root"), "mu-tmuxjob", "/", "-", "", dir}, nil)
	if err != nil {
		return "", err
	}
	o, perr := parseOut(out)
	switch {
	case perr != nil || code != 0:
		return "", fmt.Errorf("checking the jobs directory: exit %d: %s", code, firstLine(errb))
	case o.has("nohome"):
		return "", &RootError{Why: "the user has no usable login directory"}
	case o.has("home"):
		home := o.get("home")
		if !path.IsAbs(home) {
			return "", &RootError{Why: fmt.Sprintf("the user has no usable login directory (%q)", home)}
		}
		root = path.Join(home, dir)
	}
	if root == "/" {
		return "", &RootError{Why: "the jobs directory resolves to /"}
	}
	if why := o.get("unsafe"); why != "" {
		return "", &RootError{Why: "the jobs directory is not safe: " + why + ": another user could swap a job's folder, and the plugin would report forged state",
			Remedy: "chmod 700 the folder and make it yours (chown), or register the plugin with --jobs-root naming a directory only you can write"}
	}
	if !o.has("ok") {
		return "", fmt.Errorf("checking the jobs directory: no answer (%q)", firstLine(out))
	}
	return root, nil
}

// RootError: the host gives no usable state root; a retry will not help.
// With a Remedy a person must act (human), else it is permanent.
type RootError struct{ Why, Remedy string }

func (e *RootError) Error() string { return e.Why }

// Roots keeps each host's state root for the invocation: LoginRoot is
// asked once per host. The zero value is ready.
type Roots struct {
	mu sync.Mutex
	m  map[string]string
}

// Get is host's state root (LoginRoot(ctx, r, dir)), as a protocol error
// naming where (e.g. "container 3f2a…"): permanent when the host has no
// usable root, retryable when the run did not answer.
func (c *Roots) Get(ctx context.Context, host string, r Runner, dir, where string) (string, error) {
	c.mu.Lock()
	root, ok := c.m[host]
	c.mu.Unlock()
	if ok {
		return root, nil
	}
	root, err := LoginRoot(ctx, r, dir)
	var re *RootError
	switch {
	case errors.As(err, &re) && re.Remedy != "":
		return "", &protocol.Error{Kind: protocol.Human, Message: where + ": " + re.Why, Remedy: re.Remedy}
	case errors.As(err, &re):
		return "", protocol.Errorf(protocol.Permanent, "%s: %s", where, re.Why)
	case err != nil:
		return "", protocol.Wrap(protocol.Retryable, err, "finding the login directory on "+where)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[host] = root
	c.mu.Unlock()
	return root, nil
}

// Forget drops host's root: the next Get asks again (the host is gone, and
// another of the same name may come).
func (c *Roots) Forget(host string) {
	c.mu.Lock()
	delete(c.m, host)
	c.mu.Unlock()
}
