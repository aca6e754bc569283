package k8s

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
)

// View is the view sub-command: `view --pod POD --root ROOT HANDLE`
// follows the job's terminal output (from its start) onto stdout, over
// pods/exec, until the job ends or a signal stops it. It reads nothing from
// stdin: mu runs it in a local pane with stdin from /dev/null. It prints
// nothing on stdout but the job's terminal, and exits 0 once the job ended
// (and its output is shown), 1 on an error. The job does not depend on it:
// it runs under tmux in the pod.
func View(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("mu-plugin-k8s "+ViewCommand, flag.ContinueOnError)
	pod := fs.String("pod", "", "the job's pod")
	root := fs.String("root", "", "the jobs directory in the pod")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *pod == "" || *root == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mu-plugin-k8s view --pod POD --root DIR HANDLE (a job's view, as job.start gives it)")
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := view(ctx, *pod, *root, fs.Arg(0), os.Stdout); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintln(os.Stderr, "mu-plugin-k8s view:", err)
		return 1
	}
	return 0
}

func view(ctx context.Context, pod, root, handle string, w io.Writer) error {
	b, err := subBackend()
	if err != nil {
		return err
	}
	defer b.Stop(context.WithoutCancel(ctx))
	j, err := tmuxjob.New(b.hosts.Pool(pod), tmuxjob.Options{Root: root, Kind: ChannelName, Channel: ChannelName})
	if err != nil {
		return err
	}
	err = j.Follow(ctx, handle, w)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// subBackend is the backend of a sub-command (a view, git's bridge): the
// cluster and namespace its environment pins (Target.Env).
func subBackend() (*Backend, error) {
	t, err := pinnedTarget()
	if err != nil {
		return nil, err
	}
	return New(Config{Target: t, Instance: "sub"}, nil)
}

// streamStdio is an exec's streams on this process's stdin, stdout and
// stderr.
func streamStdio() remotecommand.StreamOptions {
	return remotecommand.StreamOptions{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}
