package layers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mu-org/mu-plugins"

// moduleImports lists every import between the module's packages, their
// tests' included, the integration suite's too (build tag integration),
// from `go list`.
func moduleImports(t *testing.T) []Import {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "-tags", "integration", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var imports []Import
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
			Error                              *struct{ Err string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		from := strings.TrimPrefix(p.ImportPath, module+"/")
		add := func(list []string, test bool) {
			for _, to := range list {
				if rel, ok := strings.CutPrefix(to, module+"/"); ok {
					imports = append(imports, Import{From: from, To: rel, Test: test})
				}
			}
		}
		add(p.Imports, false)
		add(p.TestImports, true)
		add(p.XTestImports, true)
	}
	return imports
}

// TestTreeIsOneWayDown: every import in the module follows Layers: no
// package outside cmd/ and integration/ imports a plugin under backend/, no
// plugin imports another, non-test code never imports a test helper, and
// no arrow runs back up. A failure names both packages and their layers.
func TestTreeIsOneWayDown(t *testing.T) {
	imports := moduleImports(t)
	// The listing is the tree's: a known edge is in it.
	if !slices.Contains(imports, Import{From: "cmd/mu-plugin-ssh", To: "backend/ssh"}) {
		t.Fatalf("go list gave %d imports, without cmd/mu-plugin-ssh -> backend/ssh", len(imports))
	}
	for _, msg := range Check(imports) {
		t.Error(msg)
	}
}

// TestCheckCatchesArrowsBackUp: the check fails on each kind of wrong
// arrow, naming both packages, and passes the right ones.
func TestCheckCatchesArrowsBackUp(t *testing.T) {
	for _, c := range []struct {
		im   Import
		want string // "" is allowed
	}{
		{Import{From: "internal/sandbox", To: "backend/docker"}, "internal/sandbox (provider) imports backend/docker (backend): an arrow back up"},
		{Import{From: "backend/docker", To: "backend/ssh"}, "backend/docker (backend) imports backend/ssh (backend): the backend layer's packages never import each other"},
		{Import{From: "contract", To: "backend/fake", Test: true}, "contract (contract) imports backend/fake (backend) in its tests: an arrow back up"},
		{Import{From: "protocol", To: "internal/proc"}, "protocol (protocol) imports internal/proc (base): an arrow back up"},
		{Import{From: "internal/gitlink", To: "internal/sandbox"}, "internal/gitlink (engine) imports internal/sandbox (provider): an arrow back up"},
		{Import{From: "backend/ssh", To: "internal/testutil"}, "backend/ssh (backend) imports internal/testutil (testsupport): only tests may import"},
		{Import{From: "internal/testutil/drive", To: "backend/fake"}, "an arrow back up"},
		{Import{From: "internal/newthing", To: "protocol"}, "internal/newthing is in no layer"},
		{Import{From: "cmd/mu-plugin-ssh", To: "cmd/mu-plugin-fake"}, "the top layer's packages never import each other"},
		{Import{From: "cmd/mu-plugin-ssh", To: "backend/ssh"}, ""},
		{Import{From: "backend/docker", To: "internal/sshclient"}, ""},
		{Import{From: "backend/docker", To: "backend/docker", Test: true}, ""},
		{Import{From: "backend/docker", To: "contract", Test: true}, ""},
		{Import{From: "protocol", To: "internal/testutil/drive", Test: true}, ""},
		{Import{From: "internal/tmuxjob", To: "internal/tmuxjob/agent", Test: true}, ""},
		{Import{From: "internal/sandbox", To: "internal/execchan"}, ""},
		{Import{From: "protocol/caller", To: "protocol"}, ""},
		{Import{From: "integration", To: "backend/ssh", Test: true}, ""},
	} {
		got := Check([]Import{c.im})
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%+v refused: %v", c.im, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%+v: got %q, want one message holding %q", c.im, got, c.want)
		}
	}
}

// TestArchitectureDocMatches: docs/architecture.md's table has a row per
// layer, with its rank and every package prefix of it.
func TestArchitectureDocMatches(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, "|"); len(f) > 3 {
			rows[strings.TrimSpace(f[1])+" "+strings.TrimSpace(f[2])] = line
		}
	}
	for _, l := range Layers {
		row, ok := rows[fmt.Sprintf("%d %s", l.Rank, l.Name)]
		if !ok {
			t.Errorf("docs/architecture.md has no row | %d | %s |", l.Rank, l.Name)
			continue
		}
		for _, p := range l.Packages {
			if !strings.Contains(row, "`"+p) {
				t.Errorf("docs/architecture.md's %s row does not name %s", l.Name, p)
			}
		}
	}
}
