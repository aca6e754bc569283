// Package cli is what every mu-plugin-* main shares: flags, --help and
// --version, the terminal guard, logging to stderr, signals, and Serve.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/protocol"
)

// Version is the project's version, set at build time with
// -ldflags "-X github.com/mu-org/mu-plugins/internal/cli.Version=…".
var Version = "0.1.0-dev"

// Plugin describes one binary.
type Plugin struct {
	Name  string // the registered name: the binary is mu-plugin-<Name>
	Short string // one line: what it is
	// Flags adds the plugin's flags to fs and returns the function that,
	// after parsing, builds the Serve options (Name and Version are filled
	// in by Main). The function may return an error to refuse to start.
	Flags func(fs *flag.FlagSet) func(ctx context.Context, log *slog.Logger) (protocol.Options, error)
	// Commands are extra sub-commands (argv[1]) the binary answers instead
	// of serving, such as a git transport helper. Each returns an exit code.
	Commands map[string]func(ctx context.Context, args []string) int
}

// Main runs the plugin and returns the process exit code.
func Main(p Plugin, args []string) int {
	if len(args) > 0 {
		if cmd, ok := p.Commands[args[0]]; ok {
			return cmd(context.Background(), args[1:])
		}
	}
	fs := flag.NewFlagSet("mu-plugin-"+p.Name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	version := fs.Bool("version", false, "print the version and exit")
	logLevel := fs.String("log-level", "warn", "stderr log level: debug, info, warn or error")
	build := p.Flags(fs)
	fs.Usage = func() { usage(fs, p) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		fmt.Printf("mu-plugin-%s %s (protocol v%d)\n", p.Name, Version, protocol.Version)
		return 0
	}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprintf(os.Stderr, "mu-plugin-%s is a mu plugin: mu runs it and speaks JSON-RPC to it on stdin.\n"+
			"Register it with:  mu plugin add %s -- %s\nSee --help for its flags.\n", p.Name, p.Name, self())
		return 2
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "mu-plugin-%s: --log-level: %v\n", p.Name, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))

	// A plugin process starts children only through internal/proc: every
	// child that is not a run's leader is an orphan some run left.
	proc.OwnChildren()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	opts, err := build(ctx, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mu-plugin-%s: %v\n", p.Name, err)
		return 1
	}
	opts.Name, opts.Version, opts.Logger = p.Name, Version, log
	if err := protocol.Serve(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	return 0
}

func usage(fs *flag.FlagSet, p Plugin) {
	w := fs.Output()
	fmt.Fprintf(w, "mu-plugin-%s: %s\n\nA mu plugin: mu starts it and speaks JSON-RPC 2.0 on its stdin and stdout.\n\n"+
		"Register:\n  mu plugin add %s -- %s [flags]\n\nFlags:\n", p.Name, p.Short, p.Name, self())
	fs.PrintDefaults()
	if len(p.Commands) > 0 {
		names := make([]string, 0, len(p.Commands))
		for n := range p.Commands {
			names = append(names, n)
		}
		fmt.Fprintf(w, "\nInternal sub-commands: %s\n", strings.Join(names, ", "))
	}
}

func self() string {
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return "/absolute/path/to/mu-plugin"
}

// Discard is a logger that writes nothing.
var Discard = slog.New(slog.NewTextHandler(io.Discard, nil))
