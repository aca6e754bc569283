package testsshd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// WriteConfig writes an ssh_config and returns its path.
func WriteConfig(t testing.TB, body string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// WithIdentity writes an ssh_config for s whose IdentityFile is key, with
// the extra lines after its Host block.
func (s *Server) WithIdentity(t testing.TB, key string, extra ...string) string {
	t.Helper()
	block := strings.Replace(s.HostBlock("box"), "IdentityFile "+s.UserKey, "IdentityFile "+key, 1)
	block += strings.Join(extra, "\n") + "\n"
	return WriteConfig(t, block)
}

// StartMaster runs `ssh -M -N` for alias with cfg (which names the
// ControlPath ctl, or -S ctl when it does not) and waits for its socket. The
// test started it; the test's cleanup kills it.
func StartMaster(t testing.TB, cfg, ctl, alias string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ssh", "-F", cfg, "-M", "-S", ctl, "-N", "-o", "ControlPersist=no", alias)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitfor.Eventually(t, "the ControlMaster answering", func() bool { return exec.Command("ssh", "-S", ctl, "-O", "check", alias).Run() == nil })
	return cmd
}
