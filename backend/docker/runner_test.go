package docker_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	dockerb "github.com/mu-org/mu-plugins/backend/docker"
	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// runContainer runs the test image (sleep infinity under init), removed at
// the test's end, labelled as this test binary's.
func runContainer(t testing.TB) string {
	t.Helper()
	image := testimage.Ensure(t)
	ctr := dockercli.Docker(t, "run", "-d", "--init", "--label", testimage.Label+"=1", "--label", "org.mu-plugins.testrun="+runID,
		image, "sleep", "infinity")
	t.Cleanup(func() { dockercli.Docker(t, "rm", "-f", "-v", ctr) })
	return ctr
}

// inProcess is a Backend in the test process (for its Runner).
func inProcess(t testing.TB) *dockerb.Backend {
	t.Helper()
	api, err := dockerb.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	b, err := dockerb.New(dockerb.Config{Instance: "runner-test"}, api, nil)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { b.Stop(context.Background()); api.Close() })
	return b
}

// The Runner carries argv and stdin byte for byte over a pooled channel:
// every byte but NUL in arguments (the escape bytes included), empty
// arguments, any byte on stdin; the exit code and both streams come back.
func TestRunnerCarriesArgvAndStdinExactly(t *testing.T) {
	ctr := runContainer(t)
	r := inProcess(t).Runner(ctr)
	ctx := waitfor.Context(t, 2*time.Minute)
	var all, utf []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
		if c < 0xf8 {
			utf = append(utf, byte(c)) // every byte UTF-8 text can hold
		}
	}
	// Every control byte is taken: the separator must be one UTF-8 never
	// holds.
	args := []string{string(utf), "", "\x02\x03\x02\x04\x01\x01", "line1\nline2\n\n", "'\"$(id) `id` *", "  spaced\t", "\x01", "\xfe"}
	stdin := append([]byte("in\x00put\n"), all...)
	script := `for a; do printf '%s' "$a" | od -An -tx1 | tr -d ' \n'; echo; done; od -An -tx1 | tr -d ' \n'; echo; echo err >&2; exit 7`
	out, errb, code, err := r.Run(ctx, append([]string{"/bin/sh", "-c", script, "sh"}, args...), stdin)
	if err != nil {
		t.Fatal(err)
	}
	if code != 7 || string(errb) != "err\n" {
		t.Fatalf("code %d stderr %q", code, errb)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	want := append(append([]string{}, args...), string(stdin))
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(lines), len(want), out)
	}
	for i, w := range want {
		if got := unhex(t, lines[i]); !bytes.Equal(got, []byte(w)) {
			t.Errorf("arg %d: got %q, want %q", i, got, w)
		}
	}
	// The channel stays in step: a second run on it answers its own.
	out, _, code, err = r.Run(ctx, []string{"pwd"}, nil)
	if err != nil || code != 0 || strings.TrimSpace(string(out)) != "/home/mu" {
		t.Fatalf("pwd: %q %d %v", out, code, err)
	}
	if _, _, _, err := r.Run(ctx, []string{"a\x00b"}, nil); err == nil {
		t.Errorf("an argument with NUL was accepted")
	}
	if _, _, _, err := r.Run(ctx, []string{"echo", string(all)}, nil); err == nil {
		t.Errorf("an argv holding every separator byte was accepted")
	}
	// Small runs on one channel, in a row, each answering its own.
	for i := 0; i < 20; i++ {
		out, _, code, err := r.Run(ctx, []string{"echo", fmt.Sprint(i)}, []byte("x"))
		if err != nil || code != 0 || string(out) != fmt.Sprintf("%d\n", i) {
			t.Fatalf("run %d: %q %d %v", i, out, code, err)
		}
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var b []byte
	for i := 0; i+1 < len(s); i += 2 {
		var v byte
		for _, c := range s[i : i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c-'a') + 10
			default:
				t.Fatalf("not hex: %q", s)
			}
		}
		b = append(b, v)
	}
	return b
}

// A run's leftovers are killed when it ends, but not a process that left
// the run's mark behind (tmuxjob's scripts unset it before they start the
// tmux server); a cancelled run is killed before Run returns.
func TestRunnerLeftoversAndCancel(t *testing.T) {
	ctr := runContainer(t)
	r := inProcess(t).Runner(ctr)
	ctx := waitfor.Context(t, 2*time.Minute)
	_, _, code, err := r.Run(ctx, []string{"/bin/sh", "-c", `sleep 301 & (unset MU_EXEC_RUN; exec sleep 302) >/dev/null 2>&1 & echo ok`}, nil)
	if err != nil || code != 0 {
		t.Fatalf("run: %d %v", code, err)
	}
	ps := dockercli.Docker(t, "exec", ctr, "ps", "-eo", "args")
	if strings.Contains(ps, "sleep 301") || !strings.Contains(ps, "sleep 302") {
		t.Errorf("after the run: want sleep 301 killed and the unmarked sleep 302 alive:\n%s", ps)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, _, _, err := r.Run(cctx, []string{"sleep", "303"}, nil); err == nil {
		t.Fatalf("a cancelled run answered without an error")
	}
	if ps := dockercli.Docker(t, "exec", ctr, "ps", "-eo", "args"); strings.Contains(ps, "sleep 303") {
		t.Errorf("a cancelled run still runs:\n%s", ps)
	}
}
