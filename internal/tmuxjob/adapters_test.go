package tmuxjob_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// A print-mode adapter under test: the harness mu names, the command line
// it runs, and the name its double's replies carry.
type printCase struct{ harness, cmd, who string }

var printCases = []printCase{
	{"", "codex", "codex"},               // chosen by the program cmd runs
	{"claude-print", "claude", "claude"}, // chosen by spec.harness
}

// adapterHost is a local job host with the CLIs' doubles installed on a
// PATH the jobs get, served by a plugin driven through protocol/caller.
type adapterHost struct {
	*host
	p   *drive.Plugin
	bin string
	cwd string
}

func newAdapterHost(t *testing.T, mod ...func(*tmuxjob.Options)) *adapterHost {
	h := newHost(t, mod...)
	a := &adapterHost{host: h, bin: filepath.Join(h.root, "bin"), cwd: t.TempDir()}
	// The jobs' home is a person's who has used Claude Code in the test's
	// folder: its first-run screens are answered (TestClaudeTUIFirstRun…
	// starts from a fresh one).
	seed, _ := json.Marshal(map[string]any{"hasCompletedOnboarding": true, "projects": map[string]any{a.cwd: map[string]bool{"hasTrustDialogAccepted": true}}})
	if err := os.WriteFile(filepath.Join(h.root, ".claude.json"), seed, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range agent.DoubleNames {
		if err := agent.InstallDouble(context.Background(), h.r, n, filepath.Join(a.bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	opts := protocol.Options{Name: "tmuxtest", Version: "0.1.0", Instance: "local",
		Seams:    tmuxjob.Seams("tmux", "tmux-test", nil),
		Handlers: tmuxjob.Handlers(func(context.Context, protocol.Target) (*tmuxjob.Jobs, error) { return h.jobs, nil })}
	a.p = drive.Start(t, caller.Config{Name: "tmuxtest", Local: &opts})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(h.root, "jobs", "*", "log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("the terminal of %s:\n%s", l, b[max(0, len(b)-3000):])
		}
	})
	return a
}

// start starts the adapter's job under key with role and waits for its
// first state.
func (a *adapterHost) start(t *testing.T, c printCase, key, role string) protocol.Target {
	t.Helper()
	return a.startSpec(t, key, a.specOf(c, role))
}

// specOf is the spec of the adapter's job with role, its doubles on PATH.
func (a *adapterHost) specOf(c printCase, role string) protocol.JobSpec {
	s := spec(c.cmd)
	s.Harness, s.Role, s.Cwd = c.harness, role, a.cwd
	s.Env = map[string]string{"PATH": a.bin + ":" + os.Getenv("PATH"), "HOME": a.root}
	return s
}

// startSpec starts the job s under key and waits for its first state.
func (a *adapterHost) startSpec(t *testing.T, key string, s protocol.JobSpec) protocol.Target {
	t.Helper()
	drive.Call(t, a.p, protocol.MethodJobStart, protocol.JobStartParams{Base: base(key), Key: key, Spec: s})
	jt := base(key).Target
	t.Cleanup(func() {
		_ = drive.Err(t, a.p, protocol.MethodJobStop, protocol.KeyParams{Base: base(key), Key: key})
	})
	drive.Baseline(t, context.Background(), a.p.Plugin, jt)
	return jt
}

func (a *adapterHost) send(t *testing.T, key, msgID, text string) protocol.SendResult {
	t.Helper()
	return drive.Call(t, a.p, protocol.MethodChannelSend,
		protocol.SendParams{Base: base(key), Text: text, MsgID: msgID, Mode: protocol.ModeFollowUp})
}

func (a *adapterHost) fresh(t *testing.T, key, msgID, text string) {
	t.Helper()
	drive.Call(t, a.p, protocol.MethodChannelFresh, protocol.FreshParams{Base: base(key), Text: text, MsgID: msgID})
}

func (a *adapterHost) command(t *testing.T, key, name, instructions string) {
	t.Helper()
	drive.Call(t, a.p, protocol.MethodChannelCommand, protocol.CommandParams{Base: base(key), Name: name, Instructions: instructions})
}

// interrupt starts a long turn (after `after` settled turns), interrupts it
// with text, and returns the cut turn's and the interrupt's observations.
func (a *adapterHost) interrupt(t *testing.T, key string, jt protocol.Target, after int64, text string) (cut, next protocol.Observation) {
	t.Helper()
	a.send(t, key, "long", "long [[ms:60000]]")
	waitfor.Eventually(t, "busy", func() bool { return a.reading(t, key).State == protocol.TurnBusy })
	res := drive.Call(t, a.p, protocol.MethodChannelInterrupt,
		protocol.InterruptParams{Base: base(key), Text: text, MsgID: "intr", TimeoutMs: 30000})
	if res.Pending {
		t.Fatalf("interrupt: %+v", res)
	}
	return a.settled(t, jt, after), a.settled(t, jt, after+1)
}

// eachPrint runs test for each print-mode adapter, on a host of its own,
// with a job of the adapter started (full-access) under a key made of
// prefix.
func eachPrint(t *testing.T, prefix string, test func(t *testing.T, a *adapterHost, c printCase, key string, jt protocol.Target)) {
	for _, c := range printCases {
		t.Run(c.who, func(t *testing.T) {
			a := newAdapterHost(t)
			key := prefix + "-" + c.who
			test(t, a, c, key, a.start(t, c, key, "full-access"))
		})
	}
}

func (a *adapterHost) settled(t *testing.T, jt protocol.Target, after int64) protocol.Observation {
	t.Helper()
	return drive.Settled(t, context.Background(), a.p.Plugin, jt, after)
}

// Deliveries of any bytes reach the CLI exactly once, in order, each its
// own process resuming the one session: the double numbers a session's
// turns.
func TestPrintAdaptersDeliverExactlyOnceInOrder(t *testing.T) {
	eachPrint(t, "pe", func(t *testing.T, a *adapterHost, c printCase, key string, jt protocol.Target) {
		texts := []string{
			`quotes ' " \ and $(touch pwned) $HOME ` + "`id`",
			"lines\none\n\ntwo\r\n\ttab\n",
			strings.Repeat("0123456789abcdef", 200<<10/16) + "\n[end]",
			"-p --resume x", // an option-like text is still the prompt
		}
		for i, text := range texts {
			a.send(t, key, "m"+string(rune('a'+i)), text)
		}
		for i, text := range texts {
			o := a.settled(t, jt, int64(i))
			want := c.who + "[" + string(rune('1'+i)) + "]: " + text
			if o.LastText != want || o.LastError != "" {
				t.Fatalf("turn %d: lastText %.80q (%d bytes), error %q; want %.80q (%d bytes)", i+1, o.LastText, len(o.LastText), o.LastError, want, len(want))
			}
		}
		if _, err := os.Stat(filepath.Join(a.cwd, "pwned")); err == nil {
			t.Fatal("a delivery's $(…) ran")
		}
		// A resend of an accepted msgId makes no second turn.
		r := a.send(t, key, "ma", texts[0])
		if r.Baseline == nil || *r.Baseline != 0 {
			t.Fatalf("the resend answered %+v, not the first one's baseline 0", r)
		}
		a.send(t, key, "mz", "last")
		if o := a.settled(t, jt, int64(len(texts))); o.LastText != c.who+"[5]: last" {
			t.Fatalf("after the resend: %q", o.LastText)
		}
		turns, _ := filepath.Glob(filepath.Join(a.jobs.ChannelDir(key), "out", "turns", "*"))
		if len(turns) != len(texts)+1 {
			t.Fatalf("%d turn records, want %d", len(turns), len(texts)+1)
		}
	})
}

// fresh starts a new session; a command reaches the CLI as `/NAME
// instructions`; a failed turn settles with the CLI's error.
func TestPrintAdaptersFreshCommandError(t *testing.T) {
	eachPrint(t, "pf", func(t *testing.T, a *adapterHost, c printCase, key string, jt protocol.Target) {
		a.send(t, key, "m1", "one")
		a.send(t, key, "m2", "two")
		a.settled(t, jt, 1)
		a.fresh(t, key, "m3", "anew")
		if o := a.settled(t, jt, 2); o.LastText != c.who+"[1]: anew" {
			t.Fatalf("fresh: %q, want a new session's first turn", o.LastText)
		}
		a.command(t, key, "compact", "keep the plan")
		if o := a.settled(t, jt, 3); o.LastText != c.who+"[2]: /compact keep the plan" {
			t.Fatalf("command: %q", o.LastText)
		}
		a.send(t, key, "m4", "fail [[error:boom]]")
		if o := a.settled(t, jt, 4); !strings.Contains(o.LastError, "exited 1") {
			t.Fatalf("a failed turn: text %q, error %q", o.LastText, o.LastError)
		}
	})
}

// An interrupt cuts the CLI's turn (settled interrupted) and its text
// makes the next turn.
func TestPrintAdaptersInterrupt(t *testing.T) {
	eachPrint(t, "pi", func(t *testing.T, a *adapterHost, c printCase, key string, jt protocol.Target) {
		cut, next := a.interrupt(t, key, jt, 0, "after")
		if cut.LastError != "interrupted" || !strings.HasSuffix(next.LastText, "]: after") || next.LastError != "" {
			t.Fatalf("the cut turn %+v, the interrupt's %+v", cut, next)
		}
	})
}

// The read-only role reaches the CLI as its own read-only setting (the
// double refuses the write: codex's sandbox, Claude Code's plan mode);
// full-access lets it write.
func TestAdaptersReadOnlyRole(t *testing.T) {
	for _, c := range append(printCases, claudeTUI) {
		t.Run(c.who, func(t *testing.T) {
			a := newAdapterHost(t)
			jt := a.start(t, c, "ro-"+c.who, "read-only")
			a.send(t, "ro-"+c.who, "m1", "[[write]]")
			if o := a.settled(t, jt, 0); !strings.Contains(o.LastText, "refused: read-only") {
				t.Fatalf("read-only: %q", o.LastText)
			}
			if _, err := os.Stat(filepath.Join(a.cwd, "mu-agent.txt")); err == nil {
				t.Fatal("a read-only job wrote")
			}
			jt = a.start(t, c, "rw-"+c.who, "full-access")
			a.send(t, "rw-"+c.who, "m1", "[[write]]")
			a.settled(t, jt, 0)
			if _, err := os.Stat(filepath.Join(a.cwd, "mu-agent.txt")); err != nil {
				t.Fatalf("a full-access job did not write: %v", err)
			}
		})
	}
}

// A read-only role for a harness that cannot enforce it is refused, with
// a remedy, and starts nothing.
func TestReadOnlyRefusedWithoutAnAdapter(t *testing.T) {
	a := newAdapterHost(t)
	s := spec("exec sh " + words.ShQuote(a.agent))
	s.Role = "read-only"
	re := drive.Err(t, a.p, protocol.MethodJobStart, protocol.JobStartParams{Base: base("ro"), Key: "ro", Spec: s})
	if re == nil || re.Kind != protocol.Permanent || !strings.Contains(string(re.Data), `"remedy"`) || !strings.Contains(re.Message, "read-only") {
		t.Fatalf("job.start read-only with the test agent: %+v", re)
	}
	if _, err := os.Stat(a.jobs.JobDir("ro")); err == nil {
		t.Fatal("the refused start made the job's directory")
	}
}

// A CLI that is not on the job's PATH is named, with how to install it:
// a print-mode turn settles with it as its error; the TUI's job, which
// never reports a state, says it in readStates' reason.
func TestAdaptersCLINotFound(t *testing.T) {
	a := newAdapterHost(t)
	s := a.specOf(printCases[0], "full-access")
	s.Env["PATH"] = "/usr/bin:/bin"
	jt := a.startSpec(t, "nf-codex", s)
	a.send(t, "nf-codex", "m1", "hello")
	if o := a.settled(t, jt, 0); !strings.Contains(o.LastError, "codex exited 127: codex was not found on the host") ||
		!strings.Contains(o.LastError, "npm install -g @openai/codex") {
		t.Fatalf("codex not found: %+v", o)
	}
	s = a.specOf(claudeTUI, "full-access")
	s.Env["PATH"] = "/usr/bin:/bin"
	drive.Call(t, a.p, protocol.MethodJobStart, protocol.JobStartParams{Base: base("nf-claude"), Key: "nf-claude", Spec: s})
	var r protocol.Reading
	waitfor.Eventually(t, "readStates names the missing CLI", func() bool {
		r = a.reading(t, "nf-claude")
		return strings.Contains(r.Reason, "the harness failed: claude was not found on the host") && strings.Contains(r.Reason, "npm install -g @anthropic-ai/claude-code")
	})
}

// job.checkSteps' agents step names each agent CLI the adapters wire:
// its version when it is on the PATH, how to install it when not.
func TestCheckStepsNameTheAgentCLIs(t *testing.T) {
	a := newAdapterHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	t.Setenv("PATH", "/usr/bin:/bin")
	steps, err := a.jobs.CheckSteps(ctx, protocol.PhaseAgent)
	if err != nil || len(steps) != 5 || steps[4].Step != "agents" || steps[4].OK != protocol.StepPassed ||
		steps[4].Detail != "claude not installed (npm install -g @anthropic-ai/claude-code); codex not installed (npm install -g @openai/codex)" {
		t.Fatalf("without the CLIs: %+v %v", steps, err)
	}
	t.Setenv("PATH", a.bin+":/usr/bin:/bin")
	steps, err = a.jobs.CheckSteps(ctx, protocol.PhaseAgent)
	if err != nil || len(steps) != 5 || steps[4].Detail != "claude 2.1.79 (Claude Code); codex codex-cli 0.0.0" {
		t.Fatalf("with the doubles: %+v %v", steps, err)
	}
}
