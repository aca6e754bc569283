package caller

import (
	"context"
	"os"

	"github.com/mu-org/mu-plugins/protocol"
)

// startLocal serves c.Local in this process on the plugin's ends of the
// pipes (inR, outW); the caller keeps inW and outR, as for a process. The
// leader's exit is Serve's return, which closes the plugin's ends.
func startLocal(c Config, raw bool, inR, inW, outR, outW *os.File) *Plugin {
	opts := *c.Local
	opts.In, opts.Out = inR, outW
	p := newPlugin(c, raw, inW, outR)
	close(p.stderrDone) // a Local plugin logs through its Options.Logger
	go p.waitLeader(func() error {
		err := protocol.Serve(context.Background(), opts)
		inR.Close()
		outW.Close()
		return err
	})
	go p.readLoop()
	return p
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
