package fake

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// The wire faults write through the fake's own stdout: a line injected
// before a call's reply comes before it, a reply a fault replaced is that
// line alone (the handler's own reply never comes), and what Serve writes
// otherwise passes through untouched.
func TestWireFaultsWriteAroundServe(t *testing.T) {
	s, err := ParseScenario([]byte(`{"faults":[
		{"method":"link.checkSteps","call":1,"fault":"orphan-reply"},
		{"method":"link.checkSteps","call":2,"fault":"not-json"},
		{"method":"link.checkSteps","call":2,"fault":"unknown-field"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f, err := New(Config{Root: t.TempDir(), Scenario: s, Out: outW})
	if err != nil {
		t.Fatal(err)
	}
	opts := f.Options()
	opts.Name, opts.Version, opts.In = Name, "test", inR
	served := make(chan error, 1)
	go func() { served <- protocol.Serve(context.Background(), opts) }()
	defer func() { inW.Close(); <-served }()
	out := bufio.NewReader(outR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want string) {
		t.Helper()
		got, err := out.ReadString('\n')
		if err != nil || strings.TrimSuffix(got, "\n") != want {
			t.Fatalf("got  %q (%v)\nwant %q", got, err, want)
		}
	}
	checkSteps := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"link.checkSteps","params":{"deadline":0,"target":{"host":{"name":"box"}},"phase":"template"}}`
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`)
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	send(checkSteps("2"))
	expect(`{"jsonrpc":"2.0","id":"fake-orphan","result":null}`)
	expect(`{"jsonrpc":"2.0","id":2,"result":[]}`)
	// Two faults replace the reply to "x": both their lines, in file order.
	send(checkSteps(`"x"`))
	expect(`this is not JSON: the fake's injected reply to link.checkSteps`)
	expect(`{"jsonrpc":"2.0","id":"x","result":[],"unknownField":true}`)
	// The next line is the next call's reply: the replaced one never came.
	send(checkSteps("4"))
	expect(`{"jsonrpc":"2.0","id":4,"result":[]}`)
}
