package docker_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dockerb "github.com/mu-org/mu-plugins/backend/docker"
)

// contextStore writes a docker CLI configuration directory: contexts as
// the CLI's store keeps them (meta.json under the sha256 of the name, TLS
// files beside), and config.json's currentContext when current is set.
type contextStore struct {
	t   testing.TB
	dir string
}

func newContextStore(t testing.TB, current string) contextStore {
	t.Helper()
	s := contextStore{t, t.TempDir()}
	if current != "" {
		s.write("config.json", []byte(`{"auths":{},"currentContext":"`+current+`"}`))
	}
	return s
}

func (s contextStore) write(rel string, b []byte) {
	s.t.Helper()
	p := filepath.Join(s.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		s.t.Fatal(err)
	}
}

// add writes context name with host; tls (ca.pem, cert.pem, key.pem by
// file name) goes to the store's TLS directory for it.
func (s contextStore) add(name, host string, skipVerify bool, tls map[string][]byte) {
	s.t.Helper()
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	meta, _ := json.Marshal(map[string]any{"Name": name, "Metadata": map[string]any{},
		"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": skipVerify}}})
	s.write(filepath.Join("contexts", "meta", id, "meta.json"), meta)
	for f, b := range tls {
		s.write(filepath.Join("contexts", "tls", id, "docker", f), b)
	}
}

// cliEndpoint asks the real docker CLI which context and host it resolves
// with env (and no other variable) and the --context flag.
func cliEndpoint(t *testing.T, env map[string]string, flagContext string) (string, string) {
	t.Helper()
	args := []string{}
	if flagContext != "" {
		args = append(args, "--context", flagContext)
	}
	args = append(args, "context", "inspect", "--format", "{{.Name}}|{{.Endpoints.docker.Host}}")
	cmd := exec.Command("docker", args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v with %v: %v\n%s", args, env, err, out)
	}
	name, host, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
	return name, host
}

// The endpoint is resolved exactly as the docker CLI resolves it: each
// case is checked against the real CLI (`docker context inspect`, which
// shows the context the CLI would use) with the same flag and environment.
func TestResolveEndpointAsTheDockerCLI(t *testing.T) {
	ca, _ := newTestPKI(t, "ca-right")
	store := newContextStore(t, "a")
	store.add("a", "unix:///tmp/mu-ctx-a.sock", false, nil)
	store.add("b", "tcp://10.0.0.2:2376", false, map[string][]byte{"ca.pem": ca.certPEM})
	store.write("ca.pem", ca.certPEM) // the default context's TLS CA (DOCKER_CERT_PATH unset)
	noCurrent := newContextStore(t, "")
	home := t.TempDir() // an empty ~/.docker
	cases := []struct {
		name string
		flag string
		env  map[string]string
	}{
		{"current context", "", map[string]string{"DOCKER_CONFIG": store.dir}},
		{"DOCKER_CONTEXT over the current", "", map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_CONTEXT": "b"}},
		{"DOCKER_HOST over DOCKER_CONTEXT", "", map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_CONTEXT": "b", "DOCKER_HOST": "unix:///tmp/mu-h.sock"}},
		{"--context over DOCKER_HOST", "b", map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_HOST": "unix:///tmp/mu-h.sock"}},
		{"DOCKER_CONTEXT=default", "", map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_CONTEXT": "default"}},
		{"no current context", "", map[string]string{"DOCKER_CONFIG": noCurrent.dir}},
		{"no DOCKER_CONFIG: ~/.docker", "", map[string]string{"HOME": home}},
		{"tcp without a port", "", map[string]string{"HOME": home, "DOCKER_HOST": "tcp://example.org"}},
		{"no scheme is tcp", "", map[string]string{"HOME": home, "DOCKER_HOST": "10.1.1.1:3000"}},
		{"tcp:// alone", "", map[string]string{"HOME": home, "DOCKER_HOST": "tcp://"}},
		{"unix:// alone", "", map[string]string{"HOME": home, "DOCKER_HOST": "unix://"}},
		{"tcp with a path", "", map[string]string{"HOME": home, "DOCKER_HOST": "tcp://h:2375/base"}},
		{"ssh", "", map[string]string{"HOME": home, "DOCKER_HOST": "ssh://me@gpu:2222"}},
		{"TLS with no host", "", map[string]string{"DOCKER_CONFIG": noCurrent.dir, "DOCKER_CERT_PATH": store.dir, "DOCKER_TLS_VERIFY": "1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantName, wantHost := cliEndpoint(t, c.env, c.flag)
			ep, err := dockerb.ResolveEndpoint(c.flag, func(k string) string { return c.env[k] })
			if err != nil {
				t.Fatalf("ResolveEndpoint: %v (the CLI: %s %s)", err, wantName, wantHost)
			}
			if ep.Context != wantName || ep.Host != wantHost {
				t.Errorf("resolved context %q host %q; the docker CLI: context %q host %q", ep.Context, ep.Host, wantName, wantHost)
			}
		})
	}
}

// TLS material: a context's from the store; the default context's from
// DOCKER_CERT_PATH (or the config directory) when DOCKER_TLS_VERIFY or
// DOCKER_TLS asks for TLS, verified only with DOCKER_TLS_VERIFY;
// DOCKER_CERT_PATH alone turns nothing on (as in the CLI).
func TestResolveEndpointTLS(t *testing.T) {
	ca, client := newTestPKI(t, "ca-tls")
	store := newContextStore(t, "")
	store.add("secure", "tcp://10.0.0.3:2376", false, map[string][]byte{"ca.pem": ca.certPEM, "cert.pem": client.certPEM, "key.pem": client.keyPEM})
	store.add("skip", "tcp://10.0.0.4:2376", true, nil)
	store.add("plain", "tcp://10.0.0.5:2375", false, nil)
	certs := t.TempDir()
	for f, b := range map[string][]byte{"ca.pem": ca.certPEM, "cert.pem": client.certPEM, "key.pem": client.keyPEM} {
		if err := os.WriteFile(filepath.Join(certs, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	resolve := func(flag string, env map[string]string) dockerb.Endpoint {
		t.Helper()
		env["DOCKER_CONFIG"] = store.dir
		ep, err := dockerb.ResolveEndpoint(flag, func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s %v: %v", flag, env, err)
		}
		return ep
	}
	if ep := resolve("secure", map[string]string{}); ep.TLS == nil || ep.TLS.SkipVerify || string(ep.TLS.CA) != string(ca.certPEM) || ep.TLS.Cert == nil || ep.TLS.Key == nil {
		t.Errorf("context with TLS files: %+v", ep.TLS)
	}
	if ep := resolve("skip", map[string]string{}); ep.TLS == nil || !ep.TLS.SkipVerify {
		t.Errorf("context with SkipTLSVerify: %+v", ep.TLS)
	}
	if ep := resolve("plain", map[string]string{}); ep.TLS != nil {
		t.Errorf("context without TLS: %+v", ep.TLS)
	}
	ep := resolve("", map[string]string{"DOCKER_HOST": "tcp://10.0.0.6:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certs})
	if ep.TLS == nil || ep.TLS.SkipVerify || ep.TLS.Dir != certs || ep.TLS.Cert == nil {
		t.Errorf("DOCKER_TLS_VERIFY: %+v", ep.TLS)
	}
	if ep := resolve("", map[string]string{"DOCKER_HOST": "tcp://10.0.0.6:2376", "DOCKER_TLS": "1", "DOCKER_CERT_PATH": certs}); ep.TLS == nil || !ep.TLS.SkipVerify {
		t.Errorf("DOCKER_TLS alone: %+v", ep.TLS)
	}
	if ep := resolve("", map[string]string{"DOCKER_HOST": "tcp://10.0.0.6:2376", "DOCKER_CERT_PATH": certs}); ep.TLS != nil {
		t.Errorf("DOCKER_CERT_PATH alone turned TLS on: %+v", ep.TLS)
	}
	env := map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_HOST": "tcp://10.0.0.6:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": t.TempDir()}
	if _, err := dockerb.ResolveEndpoint("", func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "ca.pem") {
		t.Errorf("TLS with no CA: %v, want an error naming ca.pem", err)
	}
	env = map[string]string{"DOCKER_CONFIG": store.dir}
	if _, err := dockerb.ResolveEndpoint("nope", func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), `context "nope" does not exist`) {
		t.Errorf("a missing context: %v", err)
	}
}

// pinnedOver is a sub-command's environment: hostile, with ep's PinEnv
// (made in the plugin's environment env) over it.
func pinnedOver(hostile map[string]string, ep dockerb.Endpoint, env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range hostile {
		out[k] = v
	}
	for k, v := range ep.PinEnv(func(k string) string { return env[k] }) {
		out[k] = v
	}
	return out
}

// PinEnv makes a sub-command (a job's view, git's bridge) resolve the same
// endpoint whatever its own environment says.
func TestPinEnvResolvesTheSameEndpoint(t *testing.T) {
	ca, client := newTestPKI(t, "ca-pin")
	store := newContextStore(t, "a")
	store.add("a", "unix:///tmp/mu-ctx-a.sock", false, nil)
	store.add("b", "tcp://10.0.0.2:2376", false, map[string][]byte{"ca.pem": ca.certPEM})
	certs := t.TempDir()
	for f, b := range map[string][]byte{"ca.pem": ca.certPEM, "cert.pem": client.certPEM, "key.pem": client.keyPEM} {
		if err := os.WriteFile(filepath.Join(certs, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hostile := map[string]string{"DOCKER_HOST": "unix:///tmp/elsewhere.sock", "DOCKER_CONTEXT": "a",
		"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": t.TempDir(), "DOCKER_CONFIG": t.TempDir()}
	for _, c := range []struct {
		flag string
		env  map[string]string
	}{
		{"", map[string]string{"DOCKER_CONFIG": store.dir}},
		{"b", map[string]string{"DOCKER_CONFIG": store.dir}},
		{"", map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_HOST": "tcp://10.0.0.7:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certs}},
		{"", map[string]string{"HOME": t.TempDir()}},
	} {
		ep, err := dockerb.ResolveEndpoint(c.flag, func(k string) string { return c.env[k] })
		if err != nil {
			t.Fatal(err)
		}
		env := pinnedOver(hostile, ep, c.env)
		again, err := dockerb.ResolveEndpoint("", func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("resolving the pinned env %v: %v", env, err)
		}
		if again.Host != ep.Host || again.Context != ep.Context || (again.TLS == nil) != (ep.TLS == nil) ||
			(ep.TLS != nil && (again.TLS.SkipVerify != ep.TLS.SkipVerify || string(again.TLS.CA) != string(ep.TLS.CA))) {
			t.Errorf("%q %v: pinned %+v resolves %+v", c.flag, c.env, ep, again)
		}
	}
}
