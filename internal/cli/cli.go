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
	"path/filepath"
	"sort"
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
	Name   string // the registered name: the binary is mu-plugin-<Name>
	Short  string // one line: what it is
	Config Config // the backend's configuration, which its flags set
	// Register is what a registration must add after the binary's path
	// (its required flags, e.g. "--image IMAGE"), for the hint a terminal
	// gets.
	Register string
	// Commands are extra sub-commands (argv[1]) the binary answers instead
	// of serving, such as a git transport helper. Each returns an exit code.
	Commands map[string]func(ctx context.Context, args []string) int
}

// Config is a backend's configuration (a *Config of its package): it
// registers its own flags, and once they are parsed builds the plugin.
type Config interface {
	// Flags registers the backend's flags on fs, bound to the config.
	Flags(fs *flag.FlagSet)
	// Open builds the backend the parsed flags describe and returns its
	// Serve options (Name, Version and Logger are Main's to fill in); an
	// error refuses to start.
	Open(ctx context.Context, log *slog.Logger) (protocol.Options, error)
}

// Main runs the plugin and returns the process exit code.
func Main(p Plugin, args []string) int {
	if len(args) > 0 {
		if cmd, ok := p.Commands[args[0]]; ok {
			return cmd(context.Background(), args[1:])
		}
	}
	name := "mu-plugin-" + p.Name
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // --help goes to stdout, errors to stderr, below
	version := fs.Bool("version", false, "print the version and exit")
	envLog, envLevel := envPrefix(p.Name)+"_LOG", envPrefix(p.Name)+"_LOG_LEVEL"
	logFile := fs.String("log-file", "", "append the plugin's own log to `PATH` (mu keeps no plugin stderr); also $"+envLog)
	logLevel := fs.String("log-level", "", "log `LEVEL`: debug, info, warn or error (default warn on stderr, info in a --log-file); also $"+envLevel)
	p.Config.Flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(os.Stdout, fs, p)
			return 0
		}
		fmt.Fprintf(os.Stderr, "%s: %v\nSee %s --help.\n", name, err, name)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q: the plugin takes flags only\nSee %s --help.\n", name, fs.Arg(0), name)
		return 2
	}
	if *version {
		fmt.Printf("%s %s (protocol v%d)\n", name, Version, protocol.Version)
		return 0
	}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		terminalHint(os.Stderr, p)
		return 2
	}
	logFrom, levelFrom := named("--log-file", *logFile, envLog), named("--log-level", *logLevel, envLevel)
	log, closeLog, err := openLog(orEnv(*logFile, envLog), orEnv(*logLevel, envLevel), levelFrom)
	if err != nil {
		var le *logFileError
		if !errors.As(err, &le) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 2
		}
		// A log that cannot be written never stops the plugin: mu would
		// refuse every registration this variable reaches.
		fmt.Fprintf(os.Stderr, "%s: the log file named by %s cannot be written (%v); logging to stderr instead\n", name, logFrom, le.err)
	}
	defer closeLog()

	// A plugin process starts children only through internal/proc: every
	// child that is not a run's leader is an orphan some run left.
	proc.OwnChildren()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	opts, err := p.Config.Open(ctx, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	opts.Name, opts.Version, opts.Logger = p.Name, Version, log
	log.Debug("started", "plugin", name, "version", Version)
	if err := protocol.Serve(ctx, opts); err != nil {
		log.Error("serve", "error", err.Error())
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	return 0
}

// envPrefix is the plugin's environment prefix: MU_PLUGIN_SSH for "ssh".
func envPrefix(name string) string {
	return "MU_PLUGIN_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
}

// named says which of a flag and a variable gave a setting, as a person
// would look for it: the flag when it was passed, else $VAR.
func named(flagName, flagValue, env string) string {
	if flagValue != "" {
		return flagName
	}
	return "$" + env
}

func orEnv(v, env string) string {
	if v != "" {
		return v
	}
	return os.Getenv(env)
}

// terminalHint is what a plugin run by hand in a terminal says: what it
// is, how to register it (with the flags it requires), and what mu would
// refuse about its file, with the fix.
func terminalHint(w io.Writer, p Plugin) {
	name, exe := "mu-plugin-"+p.Name, self()
	reg := exe
	if p.Register != "" {
		reg += " " + p.Register
	}
	fmt.Fprintf(w, "%s is a mu plugin: mu runs it and speaks JSON-RPC to it on stdin.\n"+
		"Register it with:  mu plugin add %s -- %s\nSee --help for its flags.\n", name, p.Name, reg)
	if pr := registrationProblem(exe, p.Name); pr != "" {
		fmt.Fprintf(w, "mu would refuse this file: %s\n", pr)
	}
}

func usage(w io.Writer, fs *flag.FlagSet, p Plugin) {
	fmt.Fprintf(w, "mu-plugin-%s: %s\n\nA mu plugin: mu starts it and speaks JSON-RPC 2.0 on its stdin and stdout.\n\n"+
		"Register:\n  mu plugin add %s -- %s [flags]\n\nFlags:\n", p.Name, p.Short, p.Name, self())
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		text = strings.ReplaceAll(text, "\n", "\n      ")
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && !strings.Contains(text, "default") {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, text)
	})
	if len(p.Commands) > 0 {
		names := make([]string, 0, len(p.Commands))
		for n := range p.Commands {
			names = append(names, n)
		}
		sort.Strings(names)
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

// RegisteredName is a plugin's registered name read from the executable's
// basename as mu runs it: mu-plugin-BASE is BASE, and a link or copy named
// mu-plugin-BASE-<suffix> is BASE-<suffix>, so one binary serves several
// registrations, each with its own name (and channel: a channel's name is
// unique among the registered plugins). Any other basename is BASE.
func RegisteredName(argv0, base string) string {
	b := filepath.Base(argv0)
	if b == "mu-plugin-"+base || (strings.HasPrefix(b, "mu-plugin-"+base+"-") && len(b) > len("mu-plugin-"+base+"-")) {
		return strings.TrimPrefix(b, "mu-plugin-")
	}
	return base
}
