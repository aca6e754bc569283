package ssh

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

// `mu-plugin-ssh view` to a host it never reached fails at once, as ssh
// does (issue 26: it retried for 55 s): one connection attempt to a host
// that drops it, and a name that does not resolve is said as such. A
// view that reached its host still rides out a drop (the view's retries
// are for a connection lost mid-view).
func TestViewUnreachableFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := testsshd.WriteConfig(t, fmt.Sprintf("Host dropper\n  HostName 127.0.0.1\n  Port %d\n  BatchMode yes\n", port))
	const handle = "mu-0123456789abcdef01234567"
	for _, c := range []struct{ host, want string }{
		{"dropper", "127.0.0.1"},
		{"nosuch.invalid", "nosuch.invalid"},
	} {
		out, err := exec.Command(pluginBin(t), "view", "--config", cfg, "--host", c.host, "--root", "/tmp/jobs", handle).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("view to %s: %v: %s", c.host, err, out)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connection attempts to a host that drops them, want 1", n)
	}
}
