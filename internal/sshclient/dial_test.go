package sshclient

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
)

// TestDialerStreamLocal: the exported Dialer gives other backends (the
// docker plugin's ssh:// engines) an *gossh.Client resolved as the plugin
// resolves; a unix socket on the host is reachable through it
// (direct-streamlocal), directly and over a running ControlMaster.
func TestDialerStreamLocal(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	dir, err := os.MkdirTemp("", "mu-sl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	sock := filepath.Join(dir, "echo.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(sock, 0o777)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	ctl := filepath.Join(t.TempDir(), "ctl")
	withMaster := testsshd.WriteConfig(t, s.HostBlock("box")+"  ControlPath "+ctl+"\n")
	testsshd.StartMaster(t, withMaster, ctl, "box")
	for name, cfg := range map[string]string{"direct": s.Config, "master": withMaster} {
		t.Run(name, func(t *testing.T) {
			c, err := NewDialer(Config{SSHConfig: cfg}, testlog.Logger(t)).Dial(t.Context(), "box")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Master != (name == "master") || c.Resolved.Alias != "box" || c.HostKey == "" {
				t.Fatalf("client %+v", c)
			}
			nc, err := c.Dial("unix", sock)
			if err != nil {
				t.Fatalf("direct-streamlocal: %v", err)
			}
			defer nc.Close()
			fmt.Fprint(nc, "ping\n")
			line, err := bufio.NewReader(nc).ReadString('\n')
			if err != nil || line != "ping\n" {
				t.Fatalf("echo: %q %v", line, err)
			}
		})
	}
}
