package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/schemas"
)

// The test binary doubles as small plugins that break rules the fake has
// no fault for: run as mu-plugin-testp (programs.Main) with testPluginVar
// naming a mode, it serves that mode instead of testing.
const testPluginVar = "MU_CONTRACT_TEST_PLUGIN"

// testPlugin returns an argv that runs this test binary as plugin mode,
// registered as mu-plugin-testp.
func testPlugin(t *testing.T, mode string) (argv, env []string) {
	t.Helper()
	return []string{programs.Command(t, "mu-plugin-testp")}, []string{testPluginVar + "=" + mode}
}

func linkSeam() protocol.Seams {
	return protocol.Seams{Link: &protocol.LinkSeam{
		Fetch: false, Slots: protocol.SlotsMu, RemoteOnTimeout: protocol.RemoteStopped,
		Quiescence: protocol.QuiescenceProvable, MaxScriptBytes: 64 << 10, Checks: []string{},
	}}
}

// runTestPlugin serves one mode and returns the exit code.
func runTestPlugin(mode string) int {
	switch mode {
	case "leaky":
		return serveLeaky()
	case "digest":
		d := decl(linkSeam())
		d.Schema = "sha256:" + string(bytes.Repeat([]byte("0"), 64))
		return serveRaw(d)
	case "load":
		d := decl(protocol.Seams{Host: &protocol.HostSeam{Acquire: protocol.KeyCaps{Lookup: true}}})
		return serveRaw(d)
	case "answers-anything":
		return serveRaw(decl(linkSeam()))
	case "human-without-remedy":
		humanNoRemedy = true
		return serveRaw(decl(linkSeam()))
	case "batch-array":
		batchArray = true
		return serveRaw(decl(linkSeam()))
	case "cut-liar":
		return serveCutLiar(func(error) bool { return true })
	case "cut-liar-deadline":
		return serveCutLiar(func(err error) bool { return errors.Is(err, context.DeadlineExceeded) })
	}
	return 2
}

func decl(s protocol.Seams) protocol.InitializeResult {
	return protocol.InitializeResult{Protocol: 1, Plugin: protocol.PluginInfo{Name: "testp", Version: "1"},
		Instance: "test", Schema: schemas.V1Digest(), Seams: s}
}

// humanNoRemedy makes serveRaw answer every request but initialize with a
// human error that has no remedy.
var humanNoRemedy bool

// batchArray makes serveRaw answer a method it does not know with an error,
// and a batch (a JSON array) the way a plain JSON-RPC 2.0 server does: with
// an array of the answers to its elements.
var batchArray bool

func notFound(id json.RawMessage) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32601, "message": "method not found", "data": map[string]any{"kind": "permanent"}}}
}

// serveRaw answers initialize with d and every other request with a null
// result, until stdin EOF.
func serveRaw(d protocol.InitializeResult) int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 2<<20)
	for sc.Scan() {
		var batch []struct {
			ID json.RawMessage `json:"id"`
		}
		if batchArray && json.Unmarshal(sc.Bytes(), &batch) == nil {
			var out []any
			for _, el := range batch {
				out = append(out, notFound(el.ID))
			}
			b, _ := json.Marshal(out)
			os.Stdout.Write(append(b, '\n'))
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		var res any
		if m.Method == protocol.MethodInitialize.Name {
			res = d
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res}
		if humanNoRemedy && m.Method != protocol.MethodInitialize.Name {
			reply = map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": map[string]any{"code": -32003, "message": "a person must act", "data": map[string]any{"kind": "human"}}}
		}
		if batchArray && m.Method != protocol.MethodInitialize.Name && m.Method != protocol.MethodShutdown.Name {
			reply = notFound(m.ID)
		}
		b, _ := json.Marshal(reply)
		os.Stdout.Write(append(b, '\n'))
	}
	return 0
}

// serveLink serves a link whose link.exec is run, on a fresh home
// directory, until stdin EOF.
func serveLink(run func(ctx context.Context, home string, p protocol.ExecParams) (any, error)) int {
	home, err := os.MkdirTemp("", "testp-home-")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(home)
	err = protocol.Serve(context.Background(), protocol.Options{
		Name: "testp", Version: "1", Instance: "test", Seams: linkSeam(),
		Handlers: map[string]protocol.Handler{
			protocol.MethodLinkExec.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
				var p protocol.ExecParams
				if err := call.Decode(&p); err != nil {
					return nil, err
				}
				return run(ctx, home, p)
			},
		},
	})
	if err != nil {
		return 1
	}
	return 0
}

// serveLeaky is a link that breaks two rules: a script gets the plugin's
// own environment (the canary with it), and a timed-out script's children
// survive its answer although it declares remoteOnTimeout "stopped".
func serveLeaky() int {
	return serveLink(func(ctx context.Context, home string, p protocol.ExecParams) (any, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(p.TimeoutMs)*time.Millisecond)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", p.Script)
		cmd.Dir = filepath.Join(home, p.Cwd)
		cmd.Env = os.Environ()
		cmd.WaitDelay = 100 * time.Millisecond
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		res := protocol.ExecResult{Stdout: out.String(), Stderr: errb.String()}
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil:
		case err == nil:
			res.ExitCode = new(int)
		case errors.As(err, &ee):
			c := ee.ExitCode()
			res.ExitCode = &c
		default:
			return nil, err
		}
		return res, nil
	})
}

// serveCutLiar is a correct link but for one rule: a run cut by its call's
// deadline or $/cancel (when lie accepts the cut's cause) claims it never
// started (NotStarted: retryable), although its script was running.
func serveCutLiar(lie func(error) bool) int {
	return serveLink(func(ctx context.Context, home string, p protocol.ExecParams) (any, error) {
		tctx, cancel := context.WithTimeout(ctx, protocol.RunTimeout(p.TimeoutMs))
		defer cancel()
		cmd := exec.Command("/bin/sh", "-c", p.Script)
		cmd.Dir = filepath.Join(home, p.Cwd)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		r, err := proc.Run(tctx, cmd, proc.Options{KillLeftovers: true})
		switch {
		case err != nil:
			return nil, protocol.NotStarted(err, "starting the script")
		case r.Stopped && ctx.Err() != nil && lie(ctx.Err()):
			return nil, protocol.NotStarted(ctx.Err(), "the run was cut") // the lie
		case r.Stopped && ctx.Err() != nil:
			return nil, ctx.Err()
		case r.Stopped:
			return protocol.ExecResult{Stdout: out.String(), Stderr: errb.String()}, nil
		}
		return protocol.ExecResult{ExitCode: &r.ExitCode, Stdout: out.String(), Stderr: errb.String()}, nil
	})
}
