package protocol_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/schemas"
)

// A plugin whose link runs nothing but says what it was asked: its
// declaration, one typed handler in its method table, and Serve, which does
// the rest. Here mu is played by two pipes; a real plugin leaves In and Out
// unset (stdin and stdout).
func ExampleServe() {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- protocol.Serve(context.Background(), protocol.Options{
			Name: "box", Version: "0.1.0", Instance: "prod-eu",
			Seams: protocol.Seams{Link: &protocol.LinkSeam{
				Fetch: false, Slots: protocol.SlotsSelf, RemoteOnTimeout: protocol.RemoteUnknown,
				Quiescence: protocol.QuiescenceProvable, MaxScriptBytes: 131072, Checks: []string{protocol.PhaseReach},
			}},
			Handlers: protocol.NewMethods(
				protocol.MethodLinkExec.Serve(func(ctx context.Context, c *protocol.Call, p protocol.ExecParams) (protocol.ExecResult, error) {
					exit := 0
					return protocol.ExecResult{ExitCode: &exit, Stdout: "would run: " + p.Script}, nil
				}),
			),
			Stop: func(ctx context.Context) { /* stop what is still running */ },
			In:   inR,
			Out:  outW,
		})
	}()
	replies := bufio.NewReader(outR)
	call := func(line string) {
		fmt.Fprintln(inW, line)
		reply, _ := replies.ReadString('\n')
		fmt.Print(strings.ReplaceAll(reply, schemas.V1Digest(), "sha256:…"))
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`)
	call(`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{"deadline":0,"target":{"host":{"name":"box"}},"script":"make test","cwd":".","timeoutMs":0}}`)
	// A misspelt field never reaches the handler: Serve refuses it.
	call(`{"jsonrpc":"2.0","id":3,"method":"link.exec","params":{"deadline":0,"target":{"host":{"name":"box"}},"script":"true","cwd":".","timoutMs":0}}`)
	inW.Close() // stdin EOF: the plugin exits
	fmt.Println("served:", <-served)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocol":1,"plugin":{"name":"box","version":"0.1.0"},"instance":"prod-eu","schema":"sha256:…","seams":{"link":{"fetch":false,"slots":"self","remoteOnTimeout":"unknown","quiescence":"provable","maxScriptBytes":131072,"checks":["reach"]}}}}
	// {"jsonrpc":"2.0","id":2,"result":{"exitCode":0,"stdout":"would run: make test","stderr":"","partial":false}}
	// {"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"link.exec: invalid params: json: unknown field \"timoutMs\"","data":{"kind":"permanent"}}}
	// served: <nil>
}
