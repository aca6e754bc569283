// Command mu-plugin-contract is the plugin contract suite, a one-call wire
// tool, and the demo (docs/contract.md).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mu-org/mu-plugins/contract"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := contract.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
