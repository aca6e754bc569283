package k8s_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// A kubeconfig whose exec credential helper never returns (leaving a child
// behind), or prints without end: every call still answers by its
// deadline, naming the helper and the fix, and nothing of the helper is
// left running. No API server is needed: the helper runs first.
func TestCredentialHelperBounded(t *testing.T) {
	for name, body := range map[string]string{
		"hangs":  "sleep 600 &\necho $! > \"$0.pid\"\nwait\n",
		"floods": "sleep 600 &\necho $! > \"$0.pid\"\nexec yes\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			helper := filepath.Join(dir, "helper-"+name)
			if err := os.WriteFile(helper, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
				t.Fatal(err)
			}
			kc := filepath.Join(dir, "config")
			text := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n" +
				"users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: " + helper + "\n      interactiveMode: Never\n" +
				"contexts:\n- name: c\n  context: {cluster: c, user: u, namespace: ns1}\ncurrent-context: c\n"
			if err := os.WriteFile(kc, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			p := sandboxtest.Start(t, caller.Config{Name: "k8s", Argv: []string{binPath(t), "--kubeconfig", kc, "--image", "img"}}, 30*time.Second)
			// Each call's deadline is the plugin's 30 s budget (the caller
			// sets it at the send).
			// A read: unknown, or the hand-back, naming the helper either way.
			if st, err := sandboxtest.Ask(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams("mu-x")); err != nil {
				if err.Kind != "human" || !strings.Contains(err.Message, helper) {
					t.Errorf("host.status: %+v, want a hand-back naming the helper", err)
				}
			} else if st.State != protocol.HostUnknown || !strings.Contains(st.Reason, helper) {
				t.Errorf("host.status: %+v, want unknown naming the helper", st)
			}
			err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("k", nil))
			if err == nil || !strings.Contains(err.Message, helper) || !strings.Contains(err.Remedy, "by hand") {
				t.Errorf("host.acquire: %+v, want an error naming the helper and the fix", err)
			}
			if err := sandboxtest.Err(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams("mu-x", "true", ".", 5000)); err == nil {
				t.Errorf("link.exec answered without credentials")
			}
			b, rerr := os.ReadFile(helper + ".pid")
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if rerr != nil || pid <= 1 {
				t.Fatalf("the helper never ran: %v", rerr)
			}
			waitfor.Eventually(t, "the helper's child is gone", func() bool { return syscall.Kill(pid, 0) != nil })
		})
	}
}
