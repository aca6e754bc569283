// Package cmd holds the command-line transcripts of every binary: what a
// person sees from --help, --version, a terminal, and a raw handshake.
package cmd

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mu-org/mu-plugins/schemas"
)

var binaries = []string{"mu-plugin-fake", "mu-plugin-ssh", "mu-plugin-docker", "mu-plugin-contract"}

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mu-cmd-test-")
	if err != nil {
		panic(err)
	}
	for _, b := range binaries {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, b), "./"+b)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b, err, out)
			os.Exit(1)
		}
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", binDir+string(os.PathListSeparator)+e.Getenv("PATH"))
			e.Setenv("SCHEMA_DIGEST", schemas.V1Digest())
			return nil
		},
	})
}

// Every binary is static: no interpreter, no shared library.
func TestStatic(t *testing.T) {
	for _, b := range binaries {
		f, err := elf.Open(filepath.Join(binDir, b))
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
	for _, b := range []string{"mu-plugin-fake", "mu-plugin-ssh", "mu-plugin-docker"} {
		name := strings.TrimPrefix(b, "mu-plugin-")
		tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "20", filepath.Join(binDir, b)+"; echo exit=$?; sleep 60")
		want := "mu plugin add " + name + " -- " + filepath.Join(binDir, b)
		var screen string
		for i := 0; i < 200; i++ {
			screen = tmux("capture-pane", "-p", "-t", "="+name+":")
			if strings.Contains(screen, "exit=") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(screen, "is a mu plugin") || !strings.Contains(screen, want) || !strings.Contains(screen, "exit=2") {
			t.Errorf("%s in a terminal showed:\n%s", b, screen)
		}
	}
}

// BenchmarkIdleRSS reports each plugin's resident memory once it has
// answered the handshake and waits for the next call (target: < 15 MB).
func BenchmarkIdleRSS(b *testing.B) {
	for _, name := range []string{"mu-plugin-fake", "mu-plugin-ssh", "mu-plugin-docker"} {
		b.Run(name, func(b *testing.B) {
			var rss float64
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(filepath.Join(binDir, name))
				stdin, _ := cmd.StdinPipe()
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`)
				buf := make([]byte, 4096)
				if _, err := stdout.Read(buf); err != nil {
					b.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond) // idle: let start-up garbage settle
				status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
				for _, l := range strings.Split(string(status), "\n") {
					if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
						var kb float64
						fmt.Sscan(f[1], &kb)
						rss += kb / 1024
					}
				}
				stdin.Close()
				cmd.Wait()
			}
			b.ReportMetric(rss/float64(b.N), "MB-rss")
		})
	}
}
