package caller

// The test binary doubles as the plugins these tests drive (the
// hashicorp/go-plugin pattern, through programs.Main): run as
// mu-plugin-<name>, it runs a plugin instead of the tests, in the mode
// CALLER_TEST_PLUGIN names. "good" is a real plugin on protocol.Serve;
// "raw:<behaviour>" writes crafted lines to break one rule each.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/schemas"
)

const (
	envMode = "CALLER_TEST_PLUGIN"
	envDecl = "CALLER_TEST_DECL"
	// sleeperCmd is a child that ignores the polite signals and sleeps.
	sleeperCmd = "caller-test-sleeper"
)

// pluginNames are the names the test plugins run under (newHarness).
var pluginNames = []string{"good", "raw", "wrong"}

func TestMain(m *testing.M) {
	cmds := map[string]func(){sleeperCmd: func() {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		time.Sleep(time.Hour)
	}}
	for _, name := range pluginNames {
		cmds["mu-plugin-"+name] = func() { os.Exit(runTestPlugin(name, os.Getenv(envMode))) }
	}
	programs.Main(m, cmds)
}

func testSeams() protocol.Seams {
	return protocol.Seams{
		Link: &protocol.LinkSeam{Fetch: true, Slots: protocol.SlotsSelf, RemoteOnTimeout: protocol.RemoteStopped,
			Quiescence: protocol.QuiescenceProvable, MaxScriptBytes: 131072, Checks: []string{protocol.PhaseReach}},
		Job: &protocol.JobSeam{Kind: "t", View: protocol.ViewBound, Handle: protocol.HandlePane,
			Start: protocol.KeyCaps{Lookup: true}, Channel: "tchan", Checks: []string{}},
		Channel: &protocol.ChannelSeam{Name: "tchan", Caps: protocol.ChannelCaps{
			Fence: "none", Receipt: "exact", Dedupe: "exact", Steer: "none", Interrupt: "none",
			Fresh: "none", Watch: "stream", SettleText: "full"}},
	}
}

func testDecl(name string) protocol.InitializeResult {
	return protocol.InitializeResult{Protocol: 1, Plugin: protocol.PluginInfo{Name: name, Version: "0.1.0"},
		Instance: "test", Schema: schemas.V1Digest(), Seams: testSeams()}
}

func runTestPlugin(name, mode string) int {
	if b, ok := strings.CutPrefix(mode, "raw:"); ok {
		return runRaw(name, b)
	}
	if run, ok := extraPlugins[mode]; ok {
		return run(name)
	}
	if mode != "good" {
		fmt.Fprintln(os.Stderr, "unknown test plugin mode", mode)
		return 2
	}
	d := testDecl(name)
	err := protocol.Serve(context.Background(), protocol.Options{
		Name: name, Version: d.Plugin.Version, Instance: d.Instance, Seams: d.Seams,
		Handlers: goodHandlers(),
		Stop:     func(context.Context) { stopOnce.Do(func() { close(stopping) }) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stopping is closed when the good plugin stops (its Stop hook).
var (
	stopping = make(chan struct{})
	stopOnce sync.Once
)

// extraPlugins are more test plugin modes, added by other test files.
var extraPlugins = map[string]func(name string) int{}

var obs = protocol.Observation{Status: protocol.TurnIdle, Settled: true, Since: 1, Runs: 1, Incarnation: "s1"}

func goodHandlers() map[string]protocol.Handler {
	var retries atomic.Int64
	var watches atomic.Int64
	return map[string]protocol.Handler{
		protocol.MethodLinkExec.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.ExecParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			ok := func(out string) (any, error) {
				return protocol.ExecResult{ExitCode: new(int), Stdout: out}, nil
			}
			switch p.Script {
			case "env-names": // the names (never the values) of MU_* variables
				var names []string
				for _, kv := range os.Environ() {
					if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MU_") {
						names = append(names, k)
					}
				}
				sort.Strings(names)
				return ok(strings.Join(names, " "))
			case "sleep":
				<-ctx.Done()
				fmt.Fprintln(os.Stderr, "exec cancelled:", ctx.Err())
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					// The caller's timer ends the call at this same deadline:
					// answer only once it stops the plugin, so its deadline,
					// not this answer (unknown-outcome: a cut run), is what
					// the tests see.
					<-stopping
				}
				return nil, ctx.Err()
			case "retry-twice":
				if retries.Add(1) <= 2 {
					return nil, protocol.Errorf(protocol.Retryable, "busy, try again")
				}
				return ok("third time")
			case "retry-always":
				return nil, protocol.Errorf(protocol.Retryable, "busy, try again")
			case "human":
				return nil, protocol.HumanError("log in first", "not logged in")
			}
			return ok("ok")
		},
		protocol.MethodChannelBaseline.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			return nil, nil
		},
		protocol.MethodJobStop.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.KeyParams
			return nil, call.Decode(&p)
		},
		protocol.MethodJobStatus.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			return protocol.JobStatus{State: protocol.JobRunning}, nil
		},
		protocol.MethodChannelWatch.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.WatchParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			id := fmt.Sprintf("w%d", watches.Add(1))
			never := p.AfterRuns != nil && *p.AfterRuns == 99
			call.Watch(id, func(ctx context.Context) (string, any) {
				if never {
					<-ctx.Done()
					fmt.Fprintln(os.Stderr, "watch ended:", id)
					return "", nil
				}
				return protocol.NotifyWatchSettled, protocol.WatchSettled{WatchID: id, Observation: obs}
			})
			return protocol.WatchResult{WatchID: id, Initial: obs}, nil
		},
	}
}

const (
	obsJSON = `{"status":"idle","settled":true,"since":1,"runs":1,"incarnation":"s1"}`
	okExec  = `{"jsonrpc":"2.0","id":{id},"result":{"exitCode":0,"stdout":"ok","stderr":"","partial":false}}`
	watchOK = `{"jsonrpc":"2.0","id":{id},"result":{"watchId":"w1","initial":` + obsJSON + `}}`
	settled = `{"jsonrpc":"2.0","method":"watch/settled","params":{"watchId":"w1","observation":` + obsJSON + `}}`
)

// rawLines are the crafted answers to the first call after the handshake.
var rawLines = map[string][]string{
	"ok":                 {okExec},
	"no-pending":         {`{"jsonrpc":"2.0","id":999,"result":null}`},
	"unknown-field":      {`{"jsonrpc":"2.0","id":{id},"result":{"exitCode":0,"stdout":"ok","stderr":"","partial":false},"extra":1}`},
	"unknown-result-key": {`{"jsonrpc":"2.0","id":{id},"result":{"exitCode":0,"stdout":"ok","stderr":"","partial":false,"extra":1}}`},
	"not-json":           {`this is not json`},
	"empty-line":         {``},
	"array":              {`[1,2]`},
	"bad-utf8":           {"{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{\"exitCode\":0,\"stdout\":\"\xff\",\"stderr\":\"\",\"partial\":false}}"},
	"overlong":           {`{"jsonrpc":"2.0","id":{id},"result":{"exitCode":0,"stdout":"` + strings.Repeat("a", protocol.MaxLine) + `","stderr":"","partial":false}}`},
	"request":            {`{"jsonrpc":"2.0","id":7,"method":"mu.run","params":{}}`},
	"third-notification": {`{"jsonrpc":"2.0","method":"watch/other","params":{"watchId":"w1"}}`},
	"unknown-watch":      {okExec, `{"jsonrpc":"2.0","method":"watch/settled","params":{"watchId":"nope","observation":` + obsJSON + `}}`},
	"two-notifications":  {watchOK, settled, settled},
	"early-notification": {settled, watchOK},
	"one-notification":   {watchOK, settled},
	"bad-result":         {`{"jsonrpc":"2.0","id":{id},"result":{"exitCode":"zero","stdout":"","stderr":"","partial":false}}`},
	"bad-kind":           {`{"jsonrpc":"2.0","id":{id},"error":{"code":-32000,"message":"x","data":{"kind":"oops"}}}`},
	"no-kind":            {`{"jsonrpc":"2.0","id":{id},"error":{"code":-32000,"message":"x"}}`},
	"both":               {`{"jsonrpc":"2.0","id":{id},"result":null,"error":{"code":-32000,"message":"x","data":{"kind":"permanent"}}}`},
	"bad-version":        {`{"jsonrpc":"1.0","id":{id},"result":null}`},
	"dup-key":            {`{"jsonrpc":"2.0","id":{id},"id":{id},"result":null}`},
	"two-values":         {okExec + ` {}`},
	"hang":               nil,
}

// runRaw is a hand-written plugin: it answers initialize (with
// CALLER_TEST_DECL when set), answers the first later call with
// rawLines[behaviour], every later one with okExec, and logs the control
// messages it sees to stderr.
func runRaw(name, behaviour string) int {
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	br := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	write := func(id, s string) {
		out.WriteString(strings.ReplaceAll(s, "{id}", id) + "\n")
		out.Flush()
	}
	first := true
	for {
		line, err := protocol.ReadLine(br, protocol.MaxLine)
		if err != nil {
			fmt.Fprintln(os.Stderr, "eof")
			if behaviour == "ignore-eof" || behaviour == "ignore-eof-child" {
				time.Sleep(time.Hour)
			}
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(line, &req)
		id := string(req.ID)
		switch req.Method {
		case protocol.MethodInitialize.Name:
			switch behaviour {
			case "handshake-error":
				write(id, `{"jsonrpc":"2.0","id":{id},"error":{"code":-32002,"message":"no backend configured","data":{"kind":"permanent"}}}`)
				continue
			case "handshake-hang":
				continue
			}
			decl := os.Getenv(envDecl)
			if decl == "" {
				b, _ := json.Marshal(testDecl(name))
				decl = string(b)
			}
			write(id, `{"jsonrpc":"2.0","id":{id},"result":`+decl+`}`)
			switch behaviour {
			case "stall": // stops reading its stdin
				time.Sleep(time.Hour)
			case "ignore-eof-child", "leave-child":
				c := exec.Command(sleeperCmd) // on PATH (programs.Main)
				if err := c.Start(); err != nil {
					fmt.Fprintln(os.Stderr, "child:", err)
					return 1
				}
				fmt.Fprintln(os.Stderr, "child", c.Process.Pid)
				if behaviour == "leave-child" {
					return 0
				}
			case "stderr-long":
				fmt.Fprintln(os.Stderr, strings.Repeat("é", 1000))
				fmt.Fprintln(os.Stderr, "second line")
			}
		case protocol.MethodCancel.Name:
			fmt.Fprintln(os.Stderr, "cancel", string(req.Params))
			if behaviour == "cancel-crossing" && strings.Contains(string(req.Params), "watchId") {
				write("", settled)
			}
			var c struct {
				ID json.RawMessage `json:"id"`
			}
			if behaviour == "watch-reply-crossing" && json.Unmarshal(req.Params, &c) == nil && c.ID != nil {
				// The held channel.watch answers only now, then its watch
				// settles: both cross the cancel.
				write(string(c.ID), watchOK)
				write("", settled)
			}
		case protocol.MethodShutdown.Name:
			fmt.Fprintln(os.Stderr, "shutdown")
			write(id, `{"jsonrpc":"2.0","id":{id},"result":null}`)
		default:
			if behaviour != "quiet" {
				fmt.Fprintln(os.Stderr, "call", req.Method)
			}
			if behaviour == "hang" || behaviour == "watch-reply-crossing" && req.Method == protocol.MethodChannelWatch.Name {
				continue
			}
			lines := []string{okExec}
			if req.Method == protocol.MethodChannelWatch.Name {
				lines = []string{watchOK}
			}
			if first {
				if l, ok := rawLines[behaviour]; ok {
					lines = l
				}
				first = false
			}
			for _, l := range lines {
				write(id, l)
			}
		}
	}
}

// register is the registered path of the test plugin named name: this
// test binary as mu-plugin-<name>.
func register(t testing.TB, name string) string {
	t.Helper()
	return programs.Command(t, "mu-plugin-"+name)
}
