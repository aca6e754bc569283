package sshclient

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sampleConfig = `Host box
  HostName 10.1.2.3
  User alice
  Port 2222
  IdentityFile /keys/box_ed25519
  CertificateFile /keys/box_ed25519-cert.pub
  IdentitiesOnly yes
  ProxyJump bastion,inner
  UserKnownHostsFile /kh/one /kh/two
  StrictHostKeyChecking accept-new
  ConnectTimeout 7
  ServerAliveInterval 9

Match exec "true"
  User matched

Host *
  ServerAliveCountMax 4
`

func TestResolve(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte(sampleConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, via := range []string{"ssh -G", "ssh_config"} {
		t.Run(via, func(t *testing.T) {
			r := newResolver(cfg, nil)
			if via == "ssh_config" {
				r.sshBin = "" // as on a machine without the OpenSSH client
			} else if r.sshBin == "" {
				t.Fatal("the OpenSSH client (ssh) is required: apt-get install -y openssh-client")
			}
			res, err := r.Resolve(context.Background(), "box")
			if err != nil {
				t.Fatal(err)
			}
			if res.Via != via || res.HostName != "10.1.2.3" || res.User != "alice" || res.Port != 2222 ||
				res.IdentityFiles[0] != "/keys/box_ed25519" || res.CertificateFiles[0] != "/keys/box_ed25519-cert.pub" ||
				!res.IdentitiesOnly || strings.Join(res.ProxyJump, ",") != "bastion,inner" ||
				strings.Join(res.UserKnownHostsFiles, " ") != "/kh/one /kh/two" || res.StrictHostKeyChecking != "accept-new" ||
				res.ConnectTimeout != 7*time.Second || res.ServerAliveInterval != 9*time.Second || res.ServerAliveCountMax != 4 {
				t.Fatalf("resolved %+v", res)
			}
			other, err := r.Resolve(context.Background(), "ssh://bob@other:2200")
			if err != nil {
				t.Fatal(err)
			}
			if other.HostName != "other" || other.User != "bob" || other.Port != 2200 {
				t.Fatalf("resolved %+v", other)
			}
		})
	}
	if _, err := newResolver(cfg, nil).Resolve(context.Background(), "-oProxyCommand=x"); err == nil {
		t.Fatal("a destination starting with - must be refused")
	}
}

func TestHopDest(t *testing.T) {
	for in, want := range map[string]string{
		"bastion":                "ssh://bastion",
		"alice@bastion:2222":     "ssh://alice@bastion:2222",
		"fe80::1":                "ssh://[fe80::1]",
		"ssh://alice@bastion:22": "ssh://alice@bastion:22", // ProxyJump takes URIs too
		"alice@[fe80::1]:2222":   "ssh://alice@[fe80::1]:2222",
	} {
		if got := hopDest(in); got != want {
			t.Errorf("hopDest(%q) = %q, want %q", in, got, want)
		}
	}
}
