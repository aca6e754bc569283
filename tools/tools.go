//go:build tools

// Package tools pins the modules the project's code and tests import, so that
// go.mod lists them before the packages that use them land.
package tools

import (
	_ "github.com/creachadair/jrpc2"
	_ "github.com/kevinburke/ssh_config"
	_ "github.com/moby/moby/api/types/container"
	_ "github.com/moby/moby/client"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/skeema/knownhosts"
	_ "golang.org/x/crypto/ssh"
	_ "golang.org/x/sys/unix"
)
