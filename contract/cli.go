package contract

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/cli"
	"github.com/mu-org/mu-plugins/protocol"
)

// paramFlag is the repeatable --param k=v.
type paramFlag map[string]string

func (p paramFlag) String() string { return "" }
func (p paramFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want k=v, got %q", s)
	}
	p[k] = v
	return nil
}

// Main is the mu-plugin-contract command: the suite, `call` and `demo`. It
// returns the exit code: 0, 1 when a check failed (or the call or demo
// did), 2 for a usage error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "suite"
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintf(stdout, "mu-plugin-contract %s (protocol v%d)\n", cli.Version, protocol.Version)
		return 0
	}
	if len(args) > 0 {
		switch args[0] {
		case "call", "demo", "list":
			cmd, args = args[0], args[1:]
		case "help":
			args = []string{"--help"} // never a plugin named "help"
		}
	}
	fs := flag.NewFlagSet("mu-plugin-contract "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts Options
	params := paramFlag{}
	fs.StringVar(&opts.Run, "run", "", "run only the checks whose name matches this regexp")
	fs.StringVar(&opts.Host, "host", "contract", "target.host.name for calls on a host not acquired (a link profile's name)")
	fs.Var(params, "param", "a host.acquire param k=v (repeatable)")
	fs.StringVar(&opts.Name, "name", "", "the registered name (default: from the basename mu-plugin-NAME)")
	fs.DurationVar(&opts.Timeout, "timeout", 2*time.Minute, "bound on each check (call: on the call)")
	fs.StringVar(&opts.JobHarness, "job-harness", "", `spec.harness of the jobs the checks start (default "contract")`)
	fs.StringVar(&opts.JobCmd, "job-cmd", "", `spec.cmd of the jobs the checks start (default "true"): an agent that follows the channel's contract`)
	fs.BoolVar(&opts.Verbose, "v", false, "print the whole wire transcript of a failed check")
	var usage strings.Builder // on stdout for --help, on stderr after a usage error
	fs.Usage = func() {
		fs.SetOutput(&usage)
		defer fs.SetOutput(stderr)
		fmt.Fprint(&usage, `usage:
  mu-plugin-contract [flags] -- /abs/path/mu-plugin-NAME [args…]    run the contract suite
  mu-plugin-contract call [flags] -- PLUGIN [args…] METHOD 'JSON'   one call the way mu makes it, with its wire transcript
  mu-plugin-contract demo -- /abs/path/mu-plugin-fake [args…]        drive the fake through every seam, narrated
  mu-plugin-contract list                                           list every check
flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			io.WriteString(stdout, usage.String())
			return 0
		}
		io.WriteString(stderr, usage.String())
		return 2
	}
	opts.Params = params
	return runCommand(ctx, cmd, opts, fs.Args(), stdout, stderr)
}

// runCommand runs the parsed command: list, call, demo, or the suite.
func runCommand(ctx context.Context, cmd string, opts Options, argv []string, stdout, stderr io.Writer) int {
	switch cmd {
	case "list":
		for _, n := range Names() {
			fmt.Fprintln(stdout, n)
		}
		return 0
	case "call":
		if len(argv) < 3 {
			fmt.Fprintln(stderr, "call: want -- PLUGIN [args…] METHOD 'JSON'")
			return 2
		}
		opts.Argv = argv[:len(argv)-2]
		return Call(ctx, opts, argv[len(argv)-2], argv[len(argv)-1], stdout, stderr)
	case "demo":
		if len(argv) == 0 {
			fmt.Fprintln(stderr, "demo: want -- /abs/path/mu-plugin-fake [args…]")
			return 2
		}
		if err := Demo(ctx, argv, stdout); err != nil {
			fmt.Fprintf(stderr, "demo: %v\n", err)
			return 1
		}
		return 0
	}
	opts.Argv, opts.Out = argv, stdout
	rep, err := Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "mu-plugin-contract: %v\n", err)
		return 2
	}
	if _, failed, _ := rep.Counts(); failed > 0 {
		return 1
	}
	return 0
}
