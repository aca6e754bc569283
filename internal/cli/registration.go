package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/mu-org/mu-plugins/protocol/caller"
)

// registrationProblem is what mu would refuse about registering the file
// at path under name (the spec's registration rules, as mu's side checks
// them: caller.CheckRegistration), with its fix; "" when mu accepts it.
func registrationProblem(path, name string) string {
	err := caller.CheckRegistration(name, path)
	var lr *caller.LoadRefusal
	if err == nil || !errors.As(err, &lr) {
		return ""
	}
	fix := ""
	switch lr.Rule {
	case caller.RuleRegWritable:
		fix = fmt.Sprintf("`chmod go-w %s`", path)
	case caller.RuleRegOwner:
		fix = fmt.Sprintf("install it under a folder of yours (make build's bin/, or ~/bin), or `sudo chown %d %s`", os.Geteuid(), path)
	case caller.RuleRegBasename:
		fix = fmt.Sprintf("register a link or copy named mu-plugin-%s", name)
	case caller.RuleRegPath:
		fix = "register it by its absolute path"
	}
	if fix == "" {
		return lr.Detail
	}
	return lr.Detail + "; fix: " + fix
}
