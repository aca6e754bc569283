// Package cmd holds the command-line transcripts of every binary: what a
// person sees from --help, --version, a terminal, and a raw handshake.
package cmd

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol/caller"
	"github.com/mu-org/mu-plugins/schemas"
)

var binaries = []string{"mu-plugin-fake", "mu-plugin-ssh", "mu-plugin-docker", "mu-plugin-k8s", "mu-plugin-contract"}

func TestMain(m *testing.M) { programs.Main(m, nil) }

// bin is the binary name as `make build` ships it, built once.
func bin(t testing.TB, name string) string {
	t.Helper()
	return programs.BuildShipped(t, "github.com/mu-org/mu-plugins/cmd/"+name)
}

func TestScripts(t *testing.T) {
	var path []string
	for _, b := range binaries {
		path = append(path, filepath.Dir(bin(t, b)))
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(e *testscript.Env) error {
			// A copy per script: the scripts run in parallel, and path may have room to append in place.
			e.Setenv("PATH", strings.Join(append(path[:len(path):len(path)], e.Getenv("PATH")), string(os.PathListSeparator)))
			e.Setenv("SCHEMA_DIGEST", schemas.V1Digest())
			return nil
		},
	})
}

// Every binary is static: no interpreter, no shared library.
func TestStatic(t *testing.T) {
	for _, b := range binaries {
		f, err := elf.Open(bin(t, b))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a dynamic interpreter", b)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s links %v", b, libs)
		}
		f.Close()
	}
}

// Run by hand in a terminal, a plugin says what it is and how to register
// it instead of waiting silently for JSON. A real terminal: a tmux pane.
func TestTerminalGuard(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	// The registration line names the flags a registration needs.
	required := map[string]string{"mu-plugin-docker": " --image IMAGE", "mu-plugin-k8s": " --image IMAGE --run-as-user UID"}
	screen := func(name, path string) string {
		tmux("new-session", "-d", "-s", name, "-x", "250", "-y", "30", path+"; echo exit=$?; sleep 60")
		var screen string
		waitfor.Poll(waitfor.Patience, func() bool {
			screen = tmux("capture-pane", "-p", "-J", "-t", "="+name+":")
			return strings.Contains(screen, "exit=")
		})
		return screen
	}
	for _, b := range []string{"mu-plugin-fake", "mu-plugin-ssh", "mu-plugin-docker", "mu-plugin-k8s"} {
		name := strings.TrimPrefix(b, "mu-plugin-")
		s := screen(name, bin(t, b))
		want := "mu plugin add " + name + " -- " + bin(t, b) + required[b] + "\n"
		if !strings.Contains(s, "is a mu plugin") || !strings.Contains(s, want) || !strings.Contains(s, "exit=2") || strings.Contains(s, "would refuse") {
			t.Errorf("%s in a terminal showed:\n%s", b, s)
		}
	}
	// A file mu would refuse (group-writable, as `go build` makes it under
	// umask 002) says so, and how to fix it.
	bad := filepath.Join(t.TempDir(), "mu-plugin-fake")
	data, err := os.ReadFile(bin(t, "mu-plugin-fake"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bad, 0o775); err != nil {
		t.Fatal(err)
	}
	if s := screen("bad", bad); !strings.Contains(s, "mu would refuse this file") || !strings.Contains(s, "writable by its group") || !strings.Contains(s, "chmod go-w "+bad) {
		t.Errorf("a group-writable plugin in a terminal showed:\n%s", s)
	}
}

// BenchmarkIdleRSS reports each plugin's resident memory once it has
// answered the handshake and waits for the next call (target: < 15 MB).
func BenchmarkIdleRSS(b *testing.B) {
	for _, name := range []string{"mu-plugin-fake", "mu-plugin-ssh", "mu-plugin-docker", "mu-plugin-k8s"} {
		b.Run(name, func(b *testing.B) {
			var rss float64
			for i := 0; i < b.N; i++ {
				p, err := caller.Start(context.Background(), caller.Config{Name: strings.TrimPrefix(name, "mu-plugin-"), Argv: idleArgv(b, name)})
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond) // idle: let start-up garbage settle
				status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pgid()))
				for _, l := range strings.Split(string(status), "\n") {
					if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
						var kb float64
						fmt.Sscan(f[1], &kb)
						rss += kb / 1024
					}
				}
				p.Stop()
			}
			b.ReportMetric(rss/float64(b.N), "MB-rss")
		})
	}
}

// idleArgv is how BenchmarkIdleRSS starts plugin name: mu-plugin-k8s
// refuses to start without a kubeconfig, and contacts no cluster before
// its first call, so it is given one naming a server nobody answers.
func idleArgv(b *testing.B, name string) []string {
	if name != "mu-plugin-k8s" {
		return []string{bin(b, name)}
	}
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: idle, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: idle, user: {token: idle}}]
contexts: [{name: idle, context: {cluster: idle, user: idle, namespace: default}}]
current-context: idle
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	return []string{bin(b, name), "--kubeconfig", kc}
}

// `make build` makes files mu accepts whatever the umask: under umask 002
// (a group-writable default) the binary is still not group-writable.
func TestMakeBuildRegistrable(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `umask 002 && exec make --no-print-directory -C .. build PLUGINS=mu-plugin-fake BIN="$1"`, "sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "mu-plugin-fake")
	if err := caller.CheckRegistration("fake", path); err != nil {
		t.Errorf("mu would refuse what make build made under umask 002: %v", err)
	}
}

// The docs install the plugins one way, `make build` (tested above), and
// register them from where it puts them: no `go build -o` into a folder
// that makes a file mu refuses (root's /usr/local/bin as root: "owned by
// uid 0"; any folder under umask 002: group-writable).
func TestDocsInstallWithMakeBuild(t *testing.T) {
	pages, _ := filepath.Glob("../docs/*.md")
	for _, p := range append(pages, "../README.md") {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, "go build -o") || strings.Contains(l, "/usr/local/bin/mu-plugin") {
				t.Errorf("%s:%d installs a plugin mu may refuse: %s (use make build and $PWD/bin/)", p, i+1, l)
			}
		}
	}
}
