package tmuxjob

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// ViewCmd is a plugin's view sub-command (the command job.start's and
// job.attach's view runs): its flags say how to reach the job's host, its
// one argument is the job's handle. It follows the job's terminal output
// (Follow) from the start onto stdout until the job ends or a signal stops
// it, reads nothing from stdin (mu runs it with stdin from /dev/null), and
// prints nothing on stdout but the job's terminal and the last line saying
// the job ended.
type ViewCmd struct {
	Prog  string // e.g. "mu-plugin-docker view", for messages
	Usage string // the synopsis after Prog
	// Flags registers the sub-command's flags on fs.
	Flags func(fs *flag.FlagSet)
	// Open builds the Jobs the parsed flags name, and what releases it; an
	// ErrUsage error is a usage error (exit 2).
	Open func(ctx context.Context) (*Jobs, func(), error)
}

// ErrUsage: the flags are not enough to reach a job.
var ErrUsage = errors.New("usage")

// Main runs the sub-command with args and returns its exit code: 0 once the
// job ended (and its output is shown) or a signal stopped it, 1 on an
// error, 2 on a usage error.
func (v ViewCmd) Main(ctx context.Context, args []string, stdout io.Writer) int {
	fs := flag.NewFlagSet(v.Prog, flag.ContinueOnError)
	v.Flags(fs)
	usage := func() int {
		fmt.Fprintf(os.Stderr, "usage: %s %s (a job's view, as job.start gives it)\n", v.Prog, v.Usage)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		return usage()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	j, release, err := v.Open(ctx)
	if errors.Is(err, ErrUsage) {
		return usage()
	}
	if err == nil {
		defer release()
		err = j.Follow(ctx, fs.Arg(0), stdout)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", v.Prog, err)
		return 1
	}
	return 0
}
