package sshlink

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/protocol"
)

func (d *driver) steps(host string) []protocol.Step {
	d.t.Helper()
	p := base(host, 10*time.Second)
	p["phase"] = "reach"
	r := d.call("link.checkSteps", p)
	if r.Error != nil {
		d.t.Fatalf("checkSteps: %s", r.Error.Message)
	}
	var steps []protocol.Step
	if err := json.Unmarshal(r.Result, &steps); err != nil {
		d.t.Fatal(err)
	}
	return steps
}

func stepMap(steps []protocol.Step) (names []string, ok map[string]string, detail map[string]string) {
	ok, detail = map[string]string{}, map[string]string{}
	for _, s := range steps {
		names = append(names, s.Step)
		ok[s.Step] = s.OK.String()
		detail[s.Step] = s.Detail
	}
	return
}

func TestCheckStepsReach(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	d, _, _ := inproc(t, cfg)
	names, ok, detail := stepMap(d.steps("box"))
	if strings.Join(names, ",") != "resolve,tcp,hostkey,auth,sh,git,home" {
		t.Fatalf("steps %v", names)
	}
	for _, n := range names {
		if ok[n] != "true" {
			t.Errorf("%s: %s %s", n, ok[n], detail[n])
		}
	}
	if !strings.Contains(detail["git"], "git version") || !strings.Contains(detail["home"], s.Home) {
		t.Errorf("details: git %q home %q", detail["git"], detail["home"])
	}
}

func TestCheckStepsFailures(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	t.Run("hostkey", func(t *testing.T) {
		cfg, _ := clientConfig(t, s, "yes")
		d, _, _ := inproc(t, Config{SSHConfig: cfg})
		_, ok, detail := stepMap(d.steps("box"))
		if ok["tcp"] != "true" || ok["hostkey"] != "false" || ok["auth"] != "null" || ok["home"] != "null" {
			t.Fatalf("%v", ok)
		}
		if !strings.Contains(detail["hostkey"], "ssh-keyscan") {
			t.Errorf("hostkey detail says no fix: %q", detail["hostkey"])
		}
	})
	t.Run("auth", func(t *testing.T) {
		d, _, _ := inproc(t, Config{SSHConfig: withIdentity(t, s, filepath.Join(t.TempDir(), "none"))})
		_, ok, detail := stepMap(d.steps("box"))
		if ok["hostkey"] != "true" || ok["auth"] != "false" || ok["sh"] != "null" {
			t.Fatalf("%v", ok)
		}
		if !strings.Contains(detail["auth"], "ssh-keygen") {
			t.Errorf("auth detail says no fix: %q", detail["auth"])
		}
	})
	t.Run("tcp", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "c")
		os.WriteFile(cfg, []byte("Host box\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 5\n"), 0o600)
		d, _, _ := inproc(t, Config{SSHConfig: cfg})
		_, ok, detail := stepMap(d.steps("box"))
		if ok["resolve"] != "true" || ok["tcp"] != "false" || ok["hostkey"] != "null" {
			t.Fatalf("%v", ok)
		}
		if !strings.Contains(detail["tcp"], "Check") {
			t.Errorf("tcp detail says no fix: %q", detail["tcp"])
		}
	})
}
