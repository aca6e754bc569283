package docker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
)

// View is the view sub-command: `view --container CTR --root ROOT HANDLE`
// follows the job's terminal output (from its start) onto stdout, through
// the Engine, until the job ends or a signal stops it. It reads nothing
// from stdin: mu runs it in a local pane with stdin from /dev/null. It
// prints nothing on stdout but the job's terminal, and exits 0 once the
// job ended (and its output is shown), 1 on an error.
func View(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("mu-plugin-docker "+ViewCommand, flag.ContinueOnError)
	ctr := fs.String("container", "", "the job's container (its ID)")
	root := fs.String("root", "", "the jobs directory in the container")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *ctr == "" || *root == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mu-plugin-docker view --container CTR --root DIR HANDLE (a job's view, as job.start gives it)")
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := view(ctx, *ctr, *root, fs.Arg(0), os.Stdout); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintln(os.Stderr, "mu-plugin-docker view:", err)
		return 1
	}
	return 0
}

func view(ctx context.Context, ctr, root, handle string, w io.Writer) error {
	ep, err := pinnedEndpoint(os.Getenv)
	if err != nil {
		return err
	}
	api, err := ep.NewClient(nil)
	if err != nil {
		return err
	}
	defer api.Close()
	b, err := New(Config{Instance: "view", Endpoint: ep}, api, nil)
	if err != nil {
		return err
	}
	defer b.Stop(context.WithoutCancel(ctx))
	j, err := tmuxjob.New(b.Runner(ctr), tmuxjob.Options{Root: root, Kind: "docker", Channel: ChannelName})
	if err != nil {
		return err
	}
	err = j.Follow(ctx, handle, w)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
