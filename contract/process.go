package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// slack is what the suite adds to the spec's 5 s before it calls a
// process late: scheduling on a loaded machine, not a second grace.
const slack = 2 * time.Second

// processChecks are the process rules (spec "Process"), each on a fresh
// process driven below the caller side (rawproc.go).
func processChecks() []check {
	return []check{
		{name: "process/eof-exit", run: checkProcessEOFExit},
		{name: "process/cancel", run: checkProcessCancel},
		{name: "process/shutdown", run: checkProcessShutdown},
		{name: "process/shutdown-notification", run: checkProcessShutdownNotification},
	}
}

// checkProcessEOFExit (process/eof-exit): with a call in flight (`link.exec`
// of `sleep 60`), stdin EOF empties the plugin's process group within 5 s.
func checkProcessEOFExit(t *T) {
	r := t.StartRaw()
	what := t.inFlight(r, 2)
	r.closeStdin()
	if !r.groupEmptyWithin(protocol.Grace + slack) {
		t.Failf("stdin closed with %s in flight: the plugin's process group was not empty within 5 s", what)
	}
}

// checkProcessCancel (process/cancel): `$/cancel {id}` ends a running
// `link.exec` (`sleep 60`): its reply comes within 5 s, and the plugin then
// answers another call.
func checkProcessCancel(t *T) {
	if t.Decl().Seams.Link == nil {
		t.Skipf("no call that blocks: the plugin declares no link")
	}
	r := t.StartRaw()
	tg := t.rawTarget(r)
	r.call(2, protocol.MethodLinkExec.Name, protocol.ExecParams{
		Base: protocol.Base{Target: tg}, Script: "sleep 60", Cwd: ".", TimeoutMs: 60000}, 65*time.Second)
	time.Sleep(300 * time.Millisecond) // let it start: not an assertion
	r.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":2}}`)
	if _, ok := r.waitReply("2", protocol.Grace); !ok {
		t.Failf("$/cancel did not end link.exec (sleep 60): no reply within 5 s")
	}
	// The plugin goes on serving after a cancel.
	r.call(3, protocol.MethodLinkExec.Name, protocol.ExecParams{
		Base: protocol.Base{Target: tg}, Script: "true", Cwd: ".", TimeoutMs: 10000}, 15*time.Second)
	if _, ok := r.waitReply("3", 15*time.Second); !ok {
		t.Failf("after a $/cancel the plugin answers no other call")
	}
}

// checkProcessShutdown (process/shutdown): `shutdown` is answered (not with
// an error), and with stdin closed the group empties within 5 s.
func checkProcessShutdown(t *T) {
	r := t.StartRaw()
	r.send(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	line, ok := r.waitReply("2", protocol.Grace)
	if !ok {
		t.Failf("no answer to shutdown within 5 s")
	}
	if strings.Contains(string(line), `"error"`) {
		t.Errorf("shutdown answered with an error")
	}
	r.closeStdin()
	if !r.groupEmptyWithin(protocol.Grace + slack) {
		t.Failf("after shutdown and stdin EOF the plugin's process group was not empty within 5 s")
	}
}

// checkProcessShutdownNotification (process/shutdown-notification): the spec
// leaves shutdown's form open, so a shutdown sent as a notification (no id)
// stops the plugin as the request does. Stdin stays open: only the
// notification can have stopped it, and its group must empty within 5 s. A
// notification is never answered.
func checkProcessShutdownNotification(t *T) {
	r := t.StartRaw()
	r.send(`{"jsonrpc":"2.0","method":"shutdown"}`)
	if !r.groupEmptyWithin(protocol.Grace + slack) {
		t.Failf("shutdown sent as a notification, stdin left open: the plugin's process group was not empty within 5 s")
	}
	if l, ok := r.waitLine(0, func(l []byte) bool { return replyID(l) != "1" }); ok {
		t.Failf("a shutdown notification was answered: %s", clip(string(l)))
	}
}

// inFlight sends a call that stays in flight (a long link.exec, on an
// acquired host for a provider, else a read) and names it.
func (t *T) inFlight(r *rawProc, id int) string {
	d := t.Decl()
	switch {
	case d.Seams.Link != nil:
		r.call(id, protocol.MethodLinkExec.Name, protocol.ExecParams{
			Base: protocol.Base{Target: t.rawTarget(r)}, Script: "sleep 60", Cwd: ".", TimeoutMs: 60000}, 65*time.Second)
		time.Sleep(300 * time.Millisecond) // let it start: not an assertion
		return "link.exec (sleep 60)"
	case d.Seams.Channel != nil:
		r.call(id, protocol.MethodChannelReadStates.Name, protocol.ReadStatesParams{
			Base: protocol.Base{Target: t.hostTarget()}, Targets: []protocol.AgentName{{Workstream: "contract", Name: "none"}}}, 10*time.Second)
		return "channel.readStates"
	default:
		return "no call"
	}
}

// rawTarget is linkTarget for a raw process: a provider's host is acquired
// on it, and released afterwards from a fresh process (the raw one may
// have been made to exit).
func (t *T) rawTarget(r *rawProc) protocol.Target {
	d := t.Decl()
	if d.Seams.Host == nil {
		return t.hostTarget()
	}
	key := t.Unique("host")
	r.call(90, protocol.MethodHostAcquire.Name, t.acquireParams(key), caller.DefaultReadTimeout)
	line, ok := r.waitReply("90", caller.DefaultReadTimeout)
	var rep struct {
		Result *protocol.AcquireResult `json:"result"`
	}
	if !ok || json.Unmarshal(line, &rep) != nil || rep.Result == nil {
		t.Failf("host.acquire (to have a host to run on) gave no result")
	}
	t.Cleanup(func() {
		if p, err := t.tryStart(); err == nil {
			_, _ = p.Call(t.Ctx(), protocol.MethodHostRelease.Name, protocol.KeyParams{Base: protocol.Base{Target: t.hostTarget()}, Key: key}, 0)
		}
	})
	return protocol.Target{Host: protocol.HostRef{Name: t.s.opts.Host, Handle: rep.Result.Handle, Instance: d.Instance}}
}

// processSummaryChecks judge every plugin process of the run.
func processSummaryChecks() []check {
	return []check{
		{name: "process/stop", summary: true, run: checkProcessStop},
		{name: "process/group", summary: true, run: checkProcessGroup},
		{name: "secrets/canary", summary: true, run: checkSecretsCanary},
	}
}

// checkProcessStop (process/stop, a summary): every stop of the run emptied
// the group by itself: mu never had to kill it.
func checkProcessStop(t *T) {
	t.probeIfAlone()
	var bad []string
	t.s.mu.Lock()
	bad = append(bad, t.s.slowStops...)
	t.s.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("mu's stop ($/cancel, shutdown, stdin EOF) did not empty the group within 5 s: had to kill it %d time(s): %s",
			len(bad), strings.Join(bad, "; "))
	}
}

// checkProcessGroup (process/group, a summary): nothing the plugin started
// left its process group: looked for when each session ends, and every 20
// ms while a call whose processes run is in flight (`link.exec`,
// `link.fetch`, `link.push`, `job.start`, `job.stop`, `host.acquire`,
// `host.release`), so a process that leaves the group only while it runs (a
// script started with `setsid`) is seen.
func checkProcessGroup(t *T) {
	t.probeIfAlone()
	t.s.mu.Lock()
	esc := append([]observed{}, t.s.escapes...)
	t.s.mu.Unlock()
	if len(esc) > 0 {
		var where []string
		for _, e := range esc {
			where = append(where, fmt.Sprintf("in %s: %s", e.check, e.text))
		}
		t.Fatalf("%d process(es) the plugin started left its process group: %s", len(esc), strings.Join(where, "; "))
	}
}

// checkSecretsCanary (secrets/canary, a summary): the canary never
// appeared in a message or on stderr; the check also asks the link to
// print $MU_PLUGIN_CANARY, which a link that hands its own environment to
// scripts leaks.
func checkSecretsCanary(t *T) {
	t.canaryProbe()
	t.s.mu.Lock()
	leaks := append([]observed{}, t.s.leaks...)
	t.s.mu.Unlock()
	if len(leaks) > 0 {
		var where []string
		for _, l := range leaks {
			where = append(where, fmt.Sprintf("in %s: %s", l.check, l.text))
		}
		t.Fatalf("%s (set in the plugin's environment) came back %d time(s): %s", CanaryVar, len(leaks), strings.Join(where, "; "))
	}
}

// canaryProbe asks the plugin's link to print the canary: a link that hands
// the plugin's own environment to a script leaks it in the reply.
func (t *T) canaryProbe() {
	t.probeIfAlone()
	d := t.Decl()
	if d.Seams.Link == nil {
		return
	}
	p := t.Start()
	tg := t.linkTarget(p)
	_, _ = p.Exec(t.Ctx(), tg, `printf '%s\n' "$`+CanaryVar+`"`, ".", 10*time.Second)
	t.runCleanups() // release the host before the stop
	t.Stop(p)
}
