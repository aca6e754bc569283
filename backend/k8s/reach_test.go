package k8s_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The plugin asks the API server nothing before the handshake, and its
// first call's reach is bounded: against a server that refuses and one that
// accepts and never answers, the handshake answers, a read is unknown and
// an effect a retryable error with a remedy (nothing was done).
func TestReachIsBoundedAndAfterTheHandshake(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() { // accept and hold every connection, never answering
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for name, server := range map[string]string{"refused": "https://127.0.0.1:1", "silent": "https://" + silent.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			kc := filepath.Join(t.TempDir(), "config")
			text := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
				"\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: ns1}\ncurrent-context: c\n"
			if err := os.WriteFile(kc, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			sp := sandboxtest.Start(t, caller.Config{Name: "k8s", Argv: []string{binPath(t), "--kubeconfig", kc, "--image", "img"}}, 3*time.Minute)
			p := &plugin{Plugin: sp, decl: sp.Declaration()}
			st := sandboxtest.Must(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams("mu-x"))
			if st.State != protocol.HostUnknown || !strings.Contains(st.Reason, "API server") {
				t.Errorf("status with the server %s: %+v", name, st)
			}
			err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("k", nil))
			if err == nil || err.Kind != "retryable" || err.Remedy == "" {
				t.Errorf("acquire with the server %s: %+v, want retryable with a remedy", name, err)
			}
		})
	}
}
