package ssh

import (
	"bytes"
	"context"
	"testing"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testsshd"
)

// TestContractSuite runs the plugin contract suite against mu-plugin-ssh
// and a real sshd (the suite's link checks target the host "contract").
func TestContractSuite(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{Alias: "contract"})
	var out, errb bytes.Buffer
	code := contract.Main(context.Background(), []string{"--host", "contract", "--", pluginBin(t), "--config", s.Config}, &out, &errb)
	t.Log(out.String())
	if code != 0 {
		t.Fatalf("contract suite: exit %d\n%s", code, errb.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("PASS link/exec")) {
		t.Fatal("the suite ran no link check")
	}
}
