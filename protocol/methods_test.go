package protocol_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A handler of another result type than its method's, or a call that
// takes another, does not compile; the right types do (so the check is
// not vacuous). Each snippet is built as a package of this module through
// an overlay.
func TestMethodTypesAreCheckedByTheCompiler(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	const header = "package typed\n\nimport (\n\t\"context\"\n\n\t\"github.com/mu-org/mu-plugins/protocol\"\n\t\"github.com/mu-org/mu-plugins/protocol/caller\"\n)\n\nvar _ = caller.Invoke[protocol.Null, protocol.Null]\n\n"
	for _, c := range []struct {
		name, body string
		compiles   bool
	}{
		{"the handler's own result type", `var _ = protocol.MethodJobStart.Serve(func(ctx context.Context, c *protocol.Call, p protocol.JobStartParams) (protocol.JobStartResult, error) {
	return protocol.JobStartResult{}, nil
})`, true},
		{"a handler of another result type", `var _ = protocol.MethodJobStart.Serve(func(ctx context.Context, c *protocol.Call, p protocol.JobStartParams) (protocol.JobStatus, error) {
	return protocol.JobStatus{}, nil
})`, false},
		{"a handler of other params", `var _ = protocol.MethodJobStatus.Serve(func(ctx context.Context, c *protocol.Call, p protocol.KeyParams) (protocol.JobStatus, error) {
	return protocol.JobStatus{}, nil
})`, false},
		{"the call's own result type", `func f(ctx context.Context, p *caller.Plugin) (protocol.JobStatus, error) {
	return caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{})
}`, true},
		{"a call taken as another result type", `func f(ctx context.Context, p *caller.Plugin) (protocol.JobStartResult, error) {
	return caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{})
}`, false},
	} {
		dir := t.TempDir()
		src := filepath.Join(dir, "x.go")
		if err := os.WriteFile(src, []byte(header+c.body+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		pkg := filepath.Join(root, "protocol", "internal", "typedcheck")
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkg, "x.go"): src}})
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(goBin, "build", "-overlay", ov, "./protocol/internal/typedcheck")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		switch {
		case c.compiles && err != nil:
			t.Errorf("%s: does not compile: %v\n%s", c.name, err, out)
		case !c.compiles && err == nil:
			t.Errorf("%s: compiles", c.name)
		case !c.compiles && !strings.Contains(string(out), "cannot use"):
			t.Errorf("%s: fails otherwise than on its types:\n%s", c.name, out)
		}
	}
}
