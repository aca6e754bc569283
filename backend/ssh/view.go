package ssh

import (
	"context"
	"flag"
	"os"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
)

// View is the view sub-command: `view [--config F] [--known-hosts F]
// [--identity F] [--option K=V]… --host DEST --root DIR HANDLE` follows
// the job's terminal output from its start onto stdout, over an SSH
// connection of its own resolved and trusted exactly as the plugin's
// (the same flags travel in the command), until the job ends or a signal
// stops it (tmuxjob.ViewCmd). It reads nothing from stdin: mu runs it in a
// local pane with stdin from /dev/null.
func View(ctx context.Context, args []string) int {
	var cfg Config
	var dest, root string
	return tmuxjob.ViewCmd{
		Prog:  "mu-plugin-ssh " + ViewCommand,
		Usage: "[--config F] [--known-hosts F] [--identity F] [--option K=V]… --host DEST --root DIR HANDLE",
		Flags: func(fs *flag.FlagSet) {
			cfg.Flags(fs)
			fs.StringVar(&dest, "host", "", "the job's host, as link.exec's target names it")
			fs.StringVar(&root, "root", "", "the jobs directory on the host")
		},
		Open: func(ctx context.Context) (*tmuxjob.Jobs, func(), error) {
			if dest == "" || root == "" {
				return nil, nil, tmuxjob.ErrUsage
			}
			if err := cfg.Check(); err != nil {
				return nil, nil, err
			}
			b := New(cfg, nil)
			j, err := b.newJobs(dest, root)
			if err != nil {
				b.Close()
				return nil, nil, err
			}
			return j, b.Close, nil
		},
	}.Main(ctx, args, os.Stdout)
}
