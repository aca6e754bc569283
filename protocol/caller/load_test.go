package caller

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestLoadRulesRefuseByName: each load rule, broken alone, refuses the
// plugin (exit 4) naming the rule, and the plugin is stopped.
func TestLoadRulesRefuseByName(t *testing.T) {
	edit := func(f func(d *protocol.InitializeResult)) func(t testing.TB) string {
		return func(t testing.TB) string {
			d := testDecl("raw")
			f(&d)
			return words.JSON(d)
		}
	}
	raw := func(s string) func(testing.TB) string { return func(testing.TB) string { return s } }
	hostSeams := func(d *protocol.InitializeResult) {
		d.Seams.Host = &protocol.HostSeam{Acquire: protocol.KeyCaps{Lookup: true}}
	}
	cases := []struct {
		name      string
		behaviour string
		decl      func(testing.TB) string
		cfg       func(*Config)
		rule      string
	}{
		{"version", "", edit(func(d *protocol.InitializeResult) { d.Protocol = 2 }), nil, protocol.RuleProtocol},
		{"handshake error", "handshake-error", nil, nil, RuleHandshakeError},
		{"name", "", edit(func(d *protocol.InitializeResult) { d.Plugin.Name = "other" }), nil, RuleName},
		{"digest", "", edit(func(d *protocol.InitializeResult) { d.Schema = "sha256:" + strings.Repeat("0", 64) }), nil, RuleDigest},
		{"configured digest", "", nil, func(c *Config) { c.Digest = "sha256:" + strings.Repeat("1", 64) }, RuleDigest},
		{"unknown field", "", func(t testing.TB) string {
			return strings.Replace(words.JSON(testDecl("raw")), `"instance"`, `"extra":1,"instance"`, 1)
		}, nil, RuleSchema},
		{"unknown seam", "", func(t testing.TB) string {
			return strings.Replace(words.JSON(testDecl("raw")), `"seams":{`, `"seams":{"teleport":{},`, 1)
		}, nil, RuleSchema},
		{"unknown value", "", edit(func(d *protocol.InitializeResult) { d.Seams.Link.Slots = "many" }), nil, RuleSchema},
		{"missing field", "", func(t testing.TB) string {
			return strings.Replace(words.JSON(testDecl("raw")), `"instance":"test",`, ``, 1)
		}, nil, RuleSchema},
		{"not an object", "", raw(`"hello"`), nil, RuleSchema},
		{"no seam", "", edit(func(d *protocol.InitializeResult) { d.Seams = protocol.Seams{} }), nil, protocol.RuleNoSeam},
		{"host without job", "", edit(func(d *protocol.InitializeResult) { hostSeams(d); d.Seams.Job = nil }), nil, protocol.RuleHostNeedsLink},
		{"host key caps", "", edit(func(d *protocol.InitializeResult) { hostSeams(d); d.Seams.Host.Acquire = protocol.KeyCaps{} }), nil, protocol.RuleKeyCaps},
		{"channel watch", "", edit(func(d *protocol.InitializeResult) { d.Seams.Channel.Caps.Watch = "poll" }), nil, protocol.RuleChannelCaps},
		{"settleText none", "", edit(func(d *protocol.InitializeResult) { d.Seams.Channel.Caps.SettleText = "none" }), nil, protocol.RuleChannelCaps},
		{"job channel", "", edit(func(d *protocol.InitializeResult) { d.Seams.Job.Channel = "elsewhere" }), nil, protocol.RuleJobChannel},
		{"at-start", "", edit(func(d *protocol.InitializeResult) { d.Seams.Job.FirstTurn = protocol.FirstTurnAtStart }), nil, protocol.RuleFirstTurn},
		{"honours env", "", edit(func(d *protocol.InitializeResult) {
			d.Seams.Job.Channel = ""
			d.Seams.Job.Honours = &protocol.Honours{Env: false, Roles: []string{"full-access"}}
		}), nil, protocol.RuleHonoursEnv},
		{"needed seam", "", nil, func(c *Config) { c.Need = []string{"link", "host"} }, RuleNeededSeam},
		{"recorded", "", nil, func(c *Config) {
			d := testDecl("raw")
			d.Instance = "recorded-elsewhere"
			c.Recorded, _ = json.Marshal(d)
		}, RuleRecorded},
		{"no answer", "handshake-hang", nil, func(c *Config) { c.HandshakeTimeout = 300e6 }, RuleHandshakeReply},
		{"invalid answer", "", raw(`{"protocol":1,` + "\xff" + `}`), nil, RuleHandshakeReply},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if c.decl != nil {
				env = append(env, envDecl+"="+c.decl(t))
			}
			h := newHarness(t, "raw", "raw:"+c.behaviour, env...)
			if c.cfg != nil {
				c.cfg(&h.cfg)
			}
			p, err := Start(context.Background(), h.cfg)
			if p != nil || err == nil {
				t.Fatal("the plugin was loaded")
			}
			var lr *LoadRefusal
			if !errors.As(err, &lr) || lr.Rule != c.rule || lr.ExitCode() != 4 {
				t.Fatalf("error %v, want a refusal by rule %s", err, c.rule)
			}
			if !slices.Contains(lr.Rules, c.rule) || lr.Name != "raw" {
				t.Fatalf("refusal %+v", lr)
			}
			// Refused means stopped: the sequence ran to shutdown.
			if len(h.tr.Containing(Out, `"method":"shutdown"`)) != 1 {
				t.Errorf("no shutdown after the refusal: %q", h.tr.Lines(Out))
			}
		})
	}
}

// TestRecordedSameDeclarationLoads: a recorded declaration that differs
// only in key order and spacing is the same declaration.
func TestRecordedSameDeclarationLoads(t *testing.T) {
	h := newHarness(t, "raw", "raw:ok")
	var m map[string]any
	if err := json.Unmarshal([]byte(words.JSON(testDecl("raw"))), &m); err != nil {
		t.Fatal(err)
	}
	rec, _ := json.MarshalIndent(m, "", "  ") // sorted keys, other spacing
	h.cfg.Recorded = rec
	h.cfg.Need = []string{"link", "job", "channel"}
	p := h.start(t)
	if p.Declaration().Instance != "test" {
		t.Fatalf("declaration %+v", p.Declaration())
	}
}

func TestSameJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b":[1,2], "a":1.0}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":null}`, `{}`, false},
	} {
		if got, err := SameJSON([]byte(c.a), []byte(c.b)); err != nil || got != c.same {
			t.Errorf("SameJSON(%s, %s) = %v, %v", c.a, c.b, got, err)
		}
	}
}

// TestRegistrationChecks: each registration check refuses by name; the
// same checks run in Start, before anything is started.
func TestRegistrationChecks(t *testing.T) {
	dir := t.TempDir()
	good := dir + "/mu-plugin-x"
	if err := os.WriteFile(good, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, mode os.FileMode) string {
		d := t.TempDir()
		p := d + "/" + name
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // chmod: the umask does not apply
			t.Fatal(err)
		}
		return p
	}
	world := mk("mu-plugin-x", 0o757)
	group := mk("mu-plugin-x", 0o775)
	notOwned := mk("mu-plugin-x", 0o755)
	if err := os.Chown(notOwned, 65534, 65534); err != nil {
		t.Fatalf("chown (the test runs as root): %v", err)
	}
	linkDir := t.TempDir()
	linkGood := linkDir + "/mu-plugin-x"
	if err := os.Symlink(good, linkGood); err != nil {
		t.Fatal(err)
	}
	linkBad := t.TempDir() + "/mu-plugin-x"
	if err := os.Symlink(world, linkBad); err != nil {
		t.Fatal(err)
	}
	aDir := t.TempDir() + "/mu-plugin-x"
	if err := os.Mkdir(aDir, 0o755); err != nil {
		t.Fatal(err)
	}
	noExec := mk("mu-plugin-x", 0o644)
	if err := CheckRegistration("x", noExec); err != nil {
		t.Fatalf("a non-executable file fails at start, not at registration: %v", err)
	}
	var lr *LoadRefusal
	if _, err := Start(context.Background(), Config{Name: "x", Argv: []string{noExec}}); !errors.As(err, &lr) || lr.Rule != RuleRegStart {
		t.Fatalf("starting a non-executable file: %v", err)
	}
	for _, c := range []struct {
		what, name, path, rule string
	}{
		{"good", "x", good, ""},
		{"symlink to a good file", "x", linkGood, ""},
		{"relative path", "x", "mu-plugin-x", RuleRegPath},
		{"dot-relative path", "x", "./bin/mu-plugin-x", RuleRegPath},
		{"wrong basename", "y", good, RuleRegBasename},
		{"empty name", "", good, RuleRegName},
		{"world writable", "x", world, RuleRegWritable},
		{"group writable", "x", group, RuleRegWritable},
		{"symlink to a writable file", "x", linkBad, RuleRegWritable},
		{"not owned", "x", notOwned, RuleRegOwner},
		{"missing", "x", t.TempDir() + "/mu-plugin-x", RuleRegFile},
		{"a directory", "x", aDir, RuleRegFile},
	} {
		err := CheckRegistration(c.name, c.path)
		var lr *LoadRefusal
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s: refused: %v", c.what, err)
		case c.rule != "" && (!errors.As(err, &lr) || lr.Rule != c.rule):
			t.Errorf("%s: got %v, want rule %s", c.what, err, c.rule)
		}
		if c.rule != "" {
			tr := &Record{}
			_, err := Start(context.Background(), Config{Name: c.name, Argv: []string{c.path}, Transcript: tr.Add})
			if !errors.As(err, &lr) || lr.Rule != c.rule || len(tr.Events()) != 0 {
				t.Errorf("%s: Start: %v (%d messages)", c.what, err, len(tr.Events()))
			}
		}
	}
}
