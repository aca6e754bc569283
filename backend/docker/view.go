package docker

import (
	"context"
	"flag"
	"os"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
)

// View is the view sub-command: `view --container CTR --root ROOT HANDLE`
// follows the job's terminal output (from its start) onto stdout, through
// the Engine, until the job ends or a signal stops it (tmuxjob.ViewCmd). It
// reads nothing from stdin: mu runs it in a local pane with stdin from
// /dev/null. It exits 0 once the job ended (and its output is shown), 1 on
// an error.
func View(ctx context.Context, args []string) int {
	var ctr, root string
	return tmuxjob.ViewCmd{
		Prog:  "mu-plugin-docker " + ViewCommand,
		Usage: "--container CTR --root DIR HANDLE",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&ctr, "container", "", "the job's container (its ID)")
			fs.StringVar(&root, "root", "", "the jobs directory in the container")
		},
		Open: func(ctx context.Context) (*tmuxjob.Jobs, func(), error) {
			if ctr == "" || root == "" {
				return nil, nil, tmuxjob.ErrUsage
			}
			return viewJobs(ctx, ctr, root)
		},
	}.Main(ctx, args, os.Stdout)
}

// viewJobs reaches the container's jobs through the Engine the view's
// environment pins.
func viewJobs(ctx context.Context, ctr, root string) (*tmuxjob.Jobs, func(), error) {
	ep, err := pinnedEndpoint(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	api, err := ep.NewClient(nil)
	if err != nil {
		return nil, nil, err
	}
	b, err := New(Config{Instance: "view", Endpoint: ep}, api, nil)
	if err != nil {
		api.Close()
		return nil, nil, err
	}
	release := func() {
		b.Stop(context.WithoutCancel(ctx))
		api.Close()
	}
	j, err := tmuxjob.New(b.Runner(ctr), tmuxjob.Options{Root: root, Kind: "docker", Channel: ChannelName})
	if err != nil {
		release()
		return nil, nil, err
	}
	return j, release, nil
}
