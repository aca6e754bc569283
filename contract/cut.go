package contract

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// cutChecks are the link rules for a run cut short: the spec's error table
// gives retryable to "nothing happened" and unknown-outcome to "it may have
// happened", which is "a link.exec returns no exit code".
func cutChecks() []check {
	return []check{{name: "link/exec-cut", needs: []string{seamLink}, run: checkLinkExecCut}}
}

// cutDeadline is how far the deadline-cut run's deadline lies: room for the
// run to start and be seen started, well inside its timeoutMs.
const cutDeadline = 3 * time.Second

// checkLinkExecCut (link/exec-cut): a link.exec of a long sleep (timeoutMs
// 60 s) that has started (its script wrote a marker a second link.exec saw)
// is cut, once by $/cancel {id} and once by its call's deadline (3 s). What
// the caller may see is an answer without an exit code: an error of kind
// unknown-outcome, or a result with exitCode null. A retryable or permanent
// error says nothing happened, which is false once the run started; an exit
// code says the script finished, which sleep 60 did not.  The plugin is
// driven below the caller side and never stopped during the check, so its
// answer after $/cancel can come (mu stops the plugin at once and ignores
// it; process/cancel already requires it within 5 s). After its deadline a
// plugin may also stay silent: mu, past the deadline, cancels and stops it,
// and an unanswered run is an unknown outcome, so silence passes there; an
// answer must still carry no exit code.
func checkLinkExecCut(t *T) {
	r := t.StartRaw()
	tg := t.rawTarget(r)
	mark := "." + t.Unique("mu-contract-cut")
	t.Cleanup(func() {
		if p, err := t.tryStart(); err == nil {
			t.quietExec(p, tg, "rm -f "+shq(mark)+".*")
		}
	})
	run := func(id int, m string, budget time.Duration) {
		r.call(id, protocol.MethodLinkExec.Name, protocol.ExecParams{Base: protocol.Base{Target: tg},
			Script: ": > " + shq(mark+m) + "; sleep 60", Cwd: ".", TimeoutMs: 60000}, budget)
	}
	// started waits (with a second link.exec) for the run's marker; it
	// reports whether the run was seen started before limit.
	started := func(id int, m string, limit time.Time) bool {
		r.call(id, protocol.MethodLinkExec.Name, protocol.ExecParams{Base: protocol.Base{Target: tg},
			Script: "i=0; while [ ! -e " + shq(mark+m) + " ]; do i=$((i+1)); [ $i -ge 200 ] && exit 1; sleep 0.05; done",
			Cwd:    ".", TimeoutMs: 15000}, 20*time.Second)
		line, ok := r.waitReply(fmt.Sprint(id), 20*time.Second)
		at := time.Now()
		code, _ := cutAnswer(line)
		return ok && code != nil && *code == 0 && at.Before(limit)
	}

	run(2, ".cancel", 65*time.Second)
	if !started(3, ".cancel", time.Now().Add(20*time.Second)) {
		t.Skipf("a second link.exec did not see the marker of a running `: > marker; sleep 60` within 10 s (a link that runs one call at a time?): the cut cannot be judged")
	}
	r.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":2}}`)
	line, ok := r.waitReply("2", protocol.Grace+slack)
	if !ok {
		t.Failf("$/cancel ended link.exec (sleep 60) after it started, but no answer came within 5 s")
	}
	if bad := judgeCut(line); bad != "" {
		t.Failf("link.exec (sleep 60) cut by $/cancel after it started answered %s; a cut run may have happened: unknown-outcome, or exitCode null", bad)
	}

	deadline := time.Now().Add(cutDeadline)
	run(4, ".deadline", cutDeadline)
	seen := started(5, ".deadline", deadline)
	line, ok = r.waitReply("4", time.Until(deadline)+protocol.Grace+slack)
	if !ok {
		return // silent past its deadline: mu has stopped it by then
	}
	bad := judgeCut(line)
	if code, _ := cutAnswer(line); code != nil {
		t.Failf("link.exec (sleep 60, timeoutMs 60000) cut by its call's deadline answered %s: the script cannot have finished", bad)
	}
	if seen && bad != "" {
		t.Failf("link.exec (sleep 60, timeoutMs 60000) cut by its call's deadline after it started answered %s; a cut run may have happened: unknown-outcome, or exitCode null", bad)
	}
}

// cutAnswer reads a link.exec reply: its exit code (nil for an error or
// exitCode null), and an error's kind.
func cutAnswer(line []byte) (code *int, kind string) {
	var m struct {
		Result *struct {
			ExitCode *int `json:"exitCode"`
		} `json:"result"`
	}
	if json.Unmarshal(line, &m) == nil && m.Result != nil {
		return m.Result.ExitCode, ""
	}
	_, kind = errorOf(line)
	return nil, kind
}

// judgeCut names what is wrong with a cut run's answer, or "" when it
// carries no exit code: unknown-outcome, or a result with exitCode null.
func judgeCut(line []byte) string {
	code, kind := cutAnswer(line)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(line, &m)
	switch {
	case m["result"] != nil && code == nil:
		return ""
	case code != nil:
		return fmt.Sprintf("exitCode %d", *code)
	case kind == string(protocol.UnknownOutcome):
		return ""
	case kind != "":
		return "an error of kind " + kind
	}
	return "something that is neither a result nor an error: " + clip(string(line))
}
