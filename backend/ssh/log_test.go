package ssh

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

// TestLogFile: --log-file at debug level tells what `ssh -v` tells: the
// config files read, the resolved destination, the route (here a
// ProxyCommand), the keys offered and the one accepted, the host key's type
// and fingerprint, the algorithms agreed; the same through the environment
// variables. It never holds an environment value: the canary is in the
// plugin's environment and in a directory the config reaches through
// ${VAR}, and must not appear.
func TestLogFile(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	canary := "mu-canary-7f3e9a1c"
	agentDir := filepath.Join(t.TempDir(), canary)
	os.Mkdir(agentDir, 0o700)
	// The key, known_hosts and control path live where the canary is, and
	// the config reaches them through ${MU_TEST_AGENT_DIR}.
	os.WriteFile(filepath.Join(agentDir, "id"), mustRead(t, s.UserKey), 0o600)
	os.WriteFile(filepath.Join(agentDir, "kh"), mustRead(t, s.KnownHosts), 0o600)
	block := strings.Replace(s.HostBlock("box"), "IdentityFile "+s.UserKey, "IdentityFile ${MU_TEST_AGENT_DIR}/id", 1)
	block = strings.Replace(block, "UserKnownHostsFile "+s.KnownHosts, "UserKnownHostsFile ${MU_TEST_AGENT_DIR}/kh", 1)
	cfg := testsshd.WriteConfig(t, block+"  ControlPath ${MU_TEST_AGENT_DIR}/ctl-%C\n"+
		"  IdentityAgent ${MU_TEST_AGENT_DIR}/agent.sock\n"+
		"  ProxyCommand sh -c 'test -n \"$MU_PLUGIN_CANARY\" && exec busybox nc \"$0\" \"$1\"' %h %p\n"+
		"  ForwardAgent yes\n  SetEnv SECRET_TOKEN="+canary+"\n")
	fp := keygenFingerprint(t, s.HostKeyFile+".pub")
	env := []string{"MU_PLUGIN_CANARY=" + canary, "MU_TEST_AGENT_DIR=" + agentDir}
	for _, how := range []string{"flags", "environment"} {
		t.Run(how, func(t *testing.T) {
			logf := filepath.Join(t.TempDir(), "plugin.log")
			args := []string{"--config", cfg}
			e := env
			if how == "flags" {
				args = append(args, "--log-file", logf, "--log-level", "debug")
			} else {
				e = append(e, "MU_PLUGIN_SSH_LOG="+logf, "MU_PLUGIN_SSH_LOG_LEVEL=debug")
			}
			d := subproc(t, e, args...)
			d.mustExec("box", "true")
			d.steps("box")
			d.CloseStdin()
			log := string(mustRead(t, logf))
			for _, want := range []string{
				"configFiles=" + cfg,
				"hostname=" + s.Host, fmt.Sprintf("port=%d", s.Port), "user=" + s.User,
				"route=\"ProxyCommand sh -c", "msg=\"executing ProxyCommand\"",
				"msg=\"keys to offer\"", "keys=\"${MU_TEST_AGENT_DIR}/id (as written)\"",
				"msg=authenticated", "key=\"${MU_TEST_AGENT_DIR}/id (as written) (ED25519 SHA256:",
				"hostKey=\"ssh-ed25519 " + fp + ", verified against known_hosts (${MU_TEST_AGENT_DIR}/kh (as written) line 1)\"",
				"msg=\"ControlPath: no master running; connecting directly (the plugin never starts one)\"",
				"controlPath=\"${MU_TEST_AGENT_DIR}/ctl-%C (as written)\"",
				"kex=curve25519-sha256", "cipher=",
				"cannot reach the agent at IdentityAgent ${MU_TEST_AGENT_DIR}/agent.sock (as written)",
				"not done by the plugin", "ForwardAgent, SetEnv",
				fmt.Sprintf("pid=%d", d.Pgid()),
			} {
				if !strings.Contains(log, want) {
					t.Errorf("the log lacks %q:\n%s", want, log)
				}
			}
			if strings.Contains(log, canary) || strings.Contains(d.Stderr.String(), canary) {
				t.Errorf("the canary leaked into the log or stderr:\n%s\n%s", log, d.Stderr)
			}
			if st, err := os.Stat(logf); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("log file mode %v %v, want 0600", st.Mode(), err)
			}
		})
	}
}

// TestLogDefaultLevel: a --log-file at its default level (info) is what a
// person reads after a failure (issue 26): a refused key leaves the call
// (method, target, kind, message, remedy) and the connection's path (the
// destination and route, the keys and agent offered, the refusal), and
// no environment value.
func TestLogDefaultLevel(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	stranger := filepath.Join(t.TempDir(), "stranger")
	testsshd.KeyGen(t, stranger, "ed25519", "")
	cfg := s.WithIdentity(t, stranger, "  IdentitiesOnly yes", "  IdentityAgent none")
	canary := "mu-canary-51c0de"
	logf := filepath.Join(t.TempDir(), "plugin.log")
	d := subproc(t, []string{"MU_PLUGIN_CANARY=" + canary}, "--config", cfg, "--log-file", logf)
	if _, r := d.exec("box", "echo "+canary, ".", 30*time.Second); r == nil || r.Kind != "human" {
		t.Fatalf("exec with a refused key: %+v, want human", r)
	}
	d.CloseStdin()
	log := string(mustRead(t, logf))
	for _, want := range []string{
		"msg=connecting", "host=box user=" + s.User, "hostname=" + s.Host, "route=direct",
		"msg=\"keys to offer\"", "agent=\"none (IdentityAgent none)\" keys=" + stranger,
		"msg=\"authentication refused\"", "host=box offered=" + stranger,
		"msg=call", "method=link.exec", "target=\"host=box\"", "outcome=error kind=human", "refused the keys", "remedy=",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, canary) {
		t.Errorf("the canary leaked into the log:\n%s", log)
	}
}
