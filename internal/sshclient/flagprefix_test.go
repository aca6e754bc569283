package sshclient

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/protocol"
)

// A plugin that embeds the SSH layer under its own flag names
// (mu-plugin-docker's --ssh-option, --ssh-identity) gets messages and
// remedies that name its flags, not mu-plugin-ssh's.
func TestFlagPrefixNamesTheEmbeddingPluginsFlags(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	stranger := filepath.Join(t.TempDir(), "stranger")
	testsshd.KeyGen(t, stranger, "ed25519", "")
	for _, c := range []struct {
		name   string
		cfg    Config
		msg    string
		remedy string
	}{
		{"refused-option", Config{SSHConfig: s.Config, Options: []string{"CheckHostIP=yes"}, FlagPrefix: "ssh-"},
			"(--ssh-option CheckHostIP=yes) is not supported by the plugin's SSH layer", "add `--ssh-option CheckHostIP=…`"},
		{"refused-key", Config{SSHConfig: s.WithIdentity(t, stranger), FlagPrefix: "ssh-"}, "refused the keys", "or pass --ssh-identity with the right key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewDialer(c.cfg, nil).Dial(context.Background(), "box")
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Kind != protocol.Human || !strings.Contains(pe.Message, c.msg) || !strings.Contains(pe.Remedy, c.remedy) {
				t.Fatalf("got %v (remedy %q), want a hand-back with %q and remedy %q", err, remedyOf(pe), c.msg, c.remedy)
			}
			if strings.Contains(pe.Message+pe.Remedy, "--option") || strings.Contains(pe.Message+pe.Remedy, " --identity") {
				t.Errorf("names mu-plugin-ssh's flags: %s; %s", pe.Message, pe.Remedy)
			}
		})
	}
	if err := (Config{Options: []string{"Nope=1"}, FlagPrefix: "ssh-"}).Check(); err == nil || !strings.HasPrefix(err.Error(), "--ssh-option") {
		t.Errorf("Check: %v, want it to name --ssh-option", err)
	}
	if err := (Config{Options: []string{"User=a\nUser=b"}}).Check(); err == nil {
		t.Errorf("Check accepted an option with a newline")
	}
}

func remedyOf(pe *protocol.Error) string {
	if pe == nil {
		return ""
	}
	return pe.Remedy
}
