package schemacheck

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
)

// A mutation of a valid message that must fail. at is the JSON pointer the
// error must name, and say a word of what it must say.
type mutation struct {
	name   string
	check  func(json.RawMessage) error
	base   any
	ops    []op
	at     string
	saying string
}

func params(m string) func(json.RawMessage) error {
	return func(r json.RawMessage) error { return Params(m, r) }
}
func result(m string) func(json.RawMessage) error {
	return func(r json.RawMessage) error { return Result(m, r) }
}
func note(m string) func(json.RawMessage) error {
	return func(r json.RawMessage) error { return Notification(m, r) }
}

const (
	unknownField = "not allowed"
	missing      = "missing property"
	wantOneOf    = "want"
)

func ex(m string, i int) any  { return examples[m].params[i] }
func res(m string, i int) any { return examples[m].results[i] }

func mutations() []mutation {
	decl := result(protocol.MethodInitialize.Name)
	var ms []mutation
	add := func(name string, check func(json.RawMessage) error, base any, at, saying string, ops ...op) {
		ms = append(ms, mutation{name, check, base, ops, at, saying})
	}

	// ---- unknown fields, top and nested, case-sensitive
	add("unknown top-level param", params("host.acquire"), ex("host.acquire", 0), "", unknownField, set("/bogus", 1))
	add("param name in another case", params("link.exec"), ex("link.exec", 0), "", unknownField, set("/TimeoutMs", 1))
	add("renamed member", params("link.exec"), ex("link.exec", 0), "", missing, del("/timeoutMs"), set("/timeoutms", 1))
	add("unknown in target", params("link.exec"), ex("link.exec", 0), "/target", unknownField, set("/target/workstream", "ws"))
	add("unknown in target.host", params("link.exec"), ex("link.exec", 0), "/target/host", unknownField, set("/target/host/port", 22))
	add("unknown in target.agent", params("job.status"), ex("job.status", 0), "/target/agent", unknownField, set("/target/agent/Name", "x"))
	add("unknown in target.job", params("job.status"), ex("job.status", 0), "/target/job", unknownField, set("/target/job/pid", 1))
	add("unknown in spec", params("job.start"), ex("job.start", 0), "/spec", unknownField, set("/spec/image", "debian"))
	add("unknown in firstPrompt", params("job.start"), ex("job.start", 0), "/spec/firstPrompt", unknownField, set("/spec/firstPrompt/at", 1))
	add("unknown in readStates target", params("channel.readStates"), ex("channel.readStates", 0), "/targets/0", unknownField, set("/targets/0/inc", "x"))
	add("unknown in initialize params", params("initialize"), ex("initialize", 0), "/protocol", unknownField, set("/protocol/pref", 1))
	add("unknown result member", result("link.exec"), res("link.exec", 0), "", unknownField, set("/duration", 1))
	add("result member in another case", result("link.exec"), res("link.exec", 0), "", unknownField, set("/ExitCode", 1))
	add("unknown in job view", result("job.start"), res("job.start", 0), "/view", unknownField, set("/view/tty", true))
	add("unknown in baseline", result("job.start"), res("job.start", 0), "/baseline", unknownField, set("/baseline/at", 1))
	add("unknown in found", result("host.lookup"), res("host.lookup", 0), "/found", unknownField, set("/found/zone", "eu"))
	add("unknown in job found view", result("job.lookup"), res("job.lookup", 0), "/found/view", unknownField, set("/found/view/x", 1))
	add("unknown in step", result("link.checkSteps"), res("link.checkSteps", 0), "/1", unknownField, set("/1/hint", "x"))
	add("unknown in reading", result("channel.readStates"), res("channel.readStates", 0), "/ws~1alice", unknownField, set("/ws~1alice/turn", 1))
	add("unknown in watch initial", result("channel.watch"), res("channel.watch", 0), "/initial", unknownField, set("/initial/agent", "a"))
	add("unknown in observation", note("watch/settled"), notificationExamples["watch/settled"][0], "/observation", unknownField, set("/observation/x", 1))
	add("unknown in restarted", note("watch/restarted"), notificationExamples["watch/restarted"][0], "", unknownField, set("/runs", 1))
	add("unknown in status up", result("host.status"), res("host.status", 0), "", unknownField, set("/region", "eu"))
	add("unknown seam", decl, fullDecl, "/seams", unknownField, set("/seams/shell", map[string]any{}))
	add("unknown in plugin", decl, fullDecl, "/plugin", unknownField, set("/plugin/vendor", "x"))
	add("unknown in link seam", decl, fullDecl, "/seams/link", unknownField, set("/seams/link/shell", "sh"))
	add("unknown in job seam", decl, fullDecl, "/seams/job", unknownField, set("/seams/job/image", "x"))
	add("unknown in key caps", decl, fullDecl, "/seams/job/start", unknownField, set("/seams/job/start/idempotent", true))
	add("unknown in dedupe", decl, fullDecl, "/seams/host/acquire/dedupe", unknownField, set("/seams/host/acquire/dedupe/scope", "x"))
	add("unknown in honours", decl, fullDecl, "/seams/job/honours", unknownField, set("/seams/job/honours/cwd", true))
	add("unknown in channel seam", decl, fullDecl, "/seams/channel", unknownField, set("/seams/channel/version", 1))
	add("unknown channel cap", decl, fullDecl, "/seams/channel/caps", unknownField, set("/seams/channel/caps/resume", "native"))
	add("unknown in host seam", decl, fullDecl, "/seams/host", unknownField, set("/seams/host/release", map[string]any{}))

	// ---- missing required
	for _, c := range []struct{ m, ptr string }{
		{"link.exec", "/deadline"}, {"link.exec", "/target"}, {"link.exec", "/target/host"}, {"link.exec", "/target/host/name"},
		{"link.exec", "/script"}, {"link.exec", "/cwd"}, {"link.exec", "/timeoutMs"},
		{"job.status", "/target/agent/incarnation"}, {"job.status", "/target/job/key"},
		{"host.acquire", "/key"}, {"host.acquire", "/params"}, {"host.lookup", "/fence"},
		{"link.push", "/rev"}, {"link.checkSteps", "/phase"}, {"job.start", "/spec"}, {"job.start", "/spec/cmd"},
		{"job.start", "/spec/env"}, {"job.start", "/spec/commandSource"}, {"job.start", "/spec/firstPrompt/msgId"},
		{"channel.readStates", "/targets"}, {"channel.receipt", "/msgId"}, {"channel.lastRun", "/afterRuns"},
		{"channel.send", "/mode"}, {"channel.send", "/firstPrompt"}, {"channel.send", "/force"},
		{"channel.fresh", "/msgId"}, {"channel.command", "/name"}, {"channel.interrupt", "/timeoutMs"},
		{"channel.abort", "/timeoutMs"}, {"channel.answer", "/keys"}, {"initialize", "/mu"}, {"initialize", "/protocol/max"},
	} {
		parent := c.ptr[:strings.LastIndex(c.ptr, "/")]
		add("params missing "+c.ptr, params(c.m), ex(c.m, 0), parent, missing, del(c.ptr))
	}
	for _, c := range []struct {
		m   string
		i   int
		ptr string
	}{
		{"link.exec", 0, "/exitCode"}, {"link.exec", 0, "/stdout"}, {"link.exec", 0, "/stderr"}, {"link.exec", 0, "/partial"},
		{"host.acquire", 0, "/handle"}, {"job.start", 0, "/view"}, {"job.start", 0, "/view/command"}, {"job.start", 0, "/view/env"},
		{"job.start", 0, "/baseline/runs"}, {"job.lookup", 0, "/found/handle"}, {"link.checkSteps", 0, "/0/ok"},
		{"link.checkSteps", 0, "/0/detail"}, {"link.checkSteps", 0, "/0/step"},
		{"channel.readStates", 0, "/ws~1alice/incarnation"}, {"channel.readStates", 0, "/ws~1alice/since"},
		{"channel.watch", 0, "/watchId"}, {"channel.watch", 0, "/initial"}, {"channel.watch", 0, "/initial/settled"},
		{"channel.send", 0, "/ack"}, {"channel.send", 0, "/channel"}, {"channel.interrupt", 0, "/pending"},
		{"channel.interrupt", 0, "/wasBusy"}, {"channel.abort", 0, "/aborted"}, {"channel.answer", 0, "/ack"},
		{"job.attach", 0, "/env"}, {"channel.lastRun", 0, "/runs"}, {"channel.baseline", 0, "/runs"},
		{"initialize", 0, "/seams"}, {"initialize", 0, "/instance"}, {"initialize", 0, "/schema"}, {"initialize", 0, "/protocol"},
		{"initialize", 0, "/plugin/version"}, {"initialize", 0, "/seams/link/maxScriptBytes"}, {"initialize", 0, "/seams/link/checks"},
		{"initialize", 0, "/seams/link/fetch"}, {"initialize", 0, "/seams/job/channel"}, {"initialize", 0, "/seams/job/start"},
		{"initialize", 0, "/seams/job/start/fenceKey"}, {"initialize", 0, "/seams/job/start/dedupe/windowMs"},
		{"initialize", 0, "/seams/job/honours/roles"}, {"initialize", 0, "/seams/host/acquire"},
		{"initialize", 0, "/seams/channel/caps/watch"}, {"initialize", 0, "/seams/channel/caps/answer"},
		{"initialize", 0, "/seams/channel/name"},
	} {
		parent := c.ptr[:strings.LastIndex(c.ptr, "/")]
		add("result missing "+c.m+c.ptr, result(c.m), res(c.m, c.i), parent, missing, del(c.ptr))
	}
	add("settled without observation", note("watch/settled"), notificationExamples["watch/settled"][0], "", missing, del("/observation"))
	add("restarted without incarnation", note("watch/restarted"), notificationExamples["watch/restarted"][0], "", missing, del("/incarnation"))
	add("status up without handle", result("host.status"), res("host.status", 0), "", missing, del("/handle"))
	add("status gone without reason", result("host.status"), res("host.status", 3), "", missing, del("/reason"))
	add("needs-human without remedy", result("host.status"), res("host.status", 4), "", missing, del("/remedy"))
	add("ended without exit", result("job.status"), res("job.status", 1), "", missing, del("/exit"))
	add("lost without reason", result("job.status"), res("job.status", 3), "", missing, del("/reason"))
	add("unreachable without reason", result("channel.receipt"), res("channel.receipt", 3), "", missing, del("/reason"))
	add("receipt without id", result("channel.receipt"), res("channel.receipt", 2), "", missing, del("/id"))

	// ---- a bad value of every enum
	for _, c := range []struct{ ptr, bad string }{
		{"/seams/link/slots", "plugin"}, {"/seams/link/remoteOnTimeout", "killed"}, {"/seams/link/quiescence", "maybe"},
		{"/seams/link/checks/0", "fetch"}, {"/seams/job/view", "attached"}, {"/seams/job/handle", "pid"},
		{"/seams/job/firstTurn", "at-send"}, {"/seams/job/checks/0", "Agent"},
		{"/seams/channel/caps/fence", "strict"}, {"/seams/channel/caps/receipt", "best-effort"},
		{"/seams/channel/caps/dedupe", "window"}, {"/seams/channel/caps/steer", "emulated"},
		{"/seams/channel/caps/interrupt", "signal"}, {"/seams/channel/caps/fresh", "new-session"},
		{"/seams/channel/caps/watch", "long-poll"}, {"/seams/channel/caps/settleText", "partial"},
	} {
		add("bad enum "+c.ptr, decl, fullDecl, c.ptr, wantOneOf, set(c.ptr, c.bad))
	}
	add("bad phase", params("link.checkSteps"), ex("link.checkSteps", 0), "/phase", wantOneOf, set("/phase", "deploy"))
	add("bad job phase", params("job.checkSteps"), ex("job.checkSteps", 0), "/phase", wantOneOf, set("/phase", "reach "))
	add("bad send mode", params("channel.send"), ex("channel.send", 0), "/mode", wantOneOf, set("/mode", "followup"))
	add("bad send ack", result("channel.send"), res("channel.send", 0), "/ack", wantOneOf, set("/ack", "sent"))
	add("bad answer ack", result("channel.answer"), res("channel.answer", 0), "/ack", wantOneOf, set("/ack", "ok"))
	add("bad abort before", result("channel.abort"), res("channel.abort", 0), "/before", wantOneOf, set("/before", "blocked"))
	add("bad abort after", result("channel.abort"), res("channel.abort", 0), "/after", wantOneOf, set("/after", "unknown"))
	add("bad reading state", result("channel.readStates"), res("channel.readStates", 0), "/ws~1alice/state", wantOneOf, set("/ws~1alice/state", "running"))
	add("bad observation status", result("channel.lastRun"), res("channel.lastRun", 0), "/status", wantOneOf, set("/status", "dead"))
	add("bad watch initial status", result("channel.watch"), res("channel.watch", 0), "/initial/status", wantOneOf, set("/initial/status", "Idle"))
	add("bad step ok", result("link.checkSteps"), res("link.checkSteps", 0), "/0/ok", wantOneOf, set("/0/ok", "warning"))
	add("step ok as string true", result("link.checkSteps"), res("link.checkSteps", 0), "/0/ok", wantOneOf, set("/0/ok", "true"))
	add("bad host state", result("host.status"), res("host.status", 3), "/state", wantOneOf, set("/state", "down"))
	add("bad job state", result("job.status"), res("job.status", 3), "/state", wantOneOf, set("/state", "stopped"))
	add("bad receipt state", result("channel.receipt"), res("channel.receipt", 2), "/state", wantOneOf, set("/state", "rejected"))

	// ---- wrong types and values
	add("deadline as string", params("link.exec"), ex("link.exec", 0), "/deadline", "want integer", set("/deadline", "1767225600000"))
	add("deadline negative", params("link.exec"), ex("link.exec", 0), "/deadline", "minimum", set("/deadline", -1))
	add("deadline fractional", params("link.exec"), ex("link.exec", 0), "/deadline", "want integer", set("/deadline", raw("1.5")))
	add("agent incarnation as string", params("job.status"), ex("job.status", 0), "/target/agent/incarnation", "want integer", set("/target/agent/incarnation", "3"))
	add("acquire param not a string", params("host.acquire"), ex("host.acquire", 0), "/params/size", "want string", set("/params/size", 2))
	add("env value not a string", params("job.start"), ex("job.start", 0), "/spec/env/A", "want string", set("/spec/env/A", true))
	add("cmd as argv", params("job.start"), ex("job.start", 0), "/spec/cmd", "want string", set("/spec/cmd", []string{"claude"}))
	add("env null", params("job.start"), ex("job.start", 0), "/spec/env", "want object", set("/spec/env", nil))
	add("short rev", params("link.push"), ex("link.push", 0), "/rev", "match", set("/rev", "0123456"))
	add("rev as a branch", params("link.push"), ex("link.push", 0), "/rev", "match", set("/rev", "main"))
	add("exitCode as string", result("link.exec"), res("link.exec", 0), "/exitCode", "want", set("/exitCode", "0"))
	add("partial as string", result("link.exec"), res("link.exec", 0), "/partial", "want boolean", set("/partial", "false"))
	add("checks null", decl, fullDecl, "/seams/link/checks", "want array", set("/seams/link/checks", nil))
	add("roles null", decl, fullDecl, "/seams/job/honours/roles", "want array", set("/seams/job/honours/roles", nil))
	add("keys null", params("channel.answer"), ex("channel.answer", 0), "/keys", "want array", set("/keys", nil))
	add("baseline incarnation as number", result("job.start"), res("job.start", 0), "/baseline/incarnation", "want string", set("/baseline/incarnation", 1))
	add("reading incarnation as number", result("channel.readStates"), res("channel.readStates", 0), "/ws~1alice/incarnation", "want string", set("/ws~1alice/incarnation", 2))
	add("reading pending as bool", result("channel.readStates"), res("channel.readStates", 0), "/ws~1alice/pending", "want string", set("/ws~1alice/pending", true))
	add("interrupt pending as string", result("channel.interrupt"), res("channel.interrupt", 0), "/pending", "want boolean", set("/pending", "dialog"))
	add("abort pending as string", result("channel.abort"), res("channel.abort", 0), "/pending", "want boolean", set("/pending", "x"))
	add("readStates key without slash", result("channel.readStates"), res("channel.readStates", 1), "", "", del("/ws~1alice"), set("/alice", map[string]any{
		"state": "idle", "since": 0, "runs": 0, "incarnation": "s"}))
	add("runs negative", result("channel.baseline"), res("channel.baseline", 0), "/runs", "minimum", set("/runs", -1))
	add("schema digest malformed", decl, fullDecl, "/schema", "match", set("/schema", "sha256:ABC"))
	add("schema digest other hash", decl, fullDecl, "/schema", "match", set("/schema", "md5:0123456789abcdef0123456789abcdef"))
	add("instance empty", decl, fullDecl, "/instance", "", set("/instance", ""))
	add("instance over 128", decl, fullDecl, "/instance", "", set("/instance", strings.Repeat("i", 129)))
	add("protocol zero", decl, fullDecl, "/protocol", "minimum", set("/protocol", 0))
	add("fetch as string", decl, fullDecl, "/seams/link/fetch", "want boolean", set("/seams/link/fetch", "false"))
	add("maxScriptBytes as string", decl, fullDecl, "/seams/link/maxScriptBytes", "want integer", set("/seams/link/maxScriptBytes", "131072"))
	add("answer cap as string", decl, fullDecl, "/seams/channel/caps/answer", "want boolean", set("/seams/channel/caps/answer", "none"))
	add("seams null", decl, fullDecl, "/seams", "want object", set("/seams", nil))
	add("shutdown with params", params("shutdown"), nil, "", "", set("", map[string]any{"now": true}))

	// ---- "exactly one of" lookups, and status variants
	for _, m := range []string{"host.lookup", "job.lookup"} {
		found := res(m, 1)
		add(m+" found and pending", result(m), found, "", unknownField, set("/pending", true))
		add(m+" found and none", result(m), found, "", unknownField, set("/none", true))
		add(m+" found and unknown", result(m), found, "", unknownField, set("/unknown", "x"))
		add(m+" pending and none", result(m), res(m, 2), "", unknownField, set("/none", true))
		add(m+" none and unknown", result(m), res(m, 3), "", unknownField, set("/unknown", "why"))
		add(m+" pending false", result(m), res(m, 2), "/pending", "want true", set("/pending", false))
		add(m+" none false", result(m), res(m, 3), "/none", "want true", set("/none", false))
		add(m+" unknown without reason", result(m), res(m, 4), "/unknown", "", set("/unknown", ""))
		add(m+" nothing", result(m), res(m, 2), "", missing, del("/pending"))
		add(m+" found null", result(m), found, "/found", "want object", set("/found", nil))
	}
	add("up with a gone reason", result("host.status"), res("host.status", 0), "", unknownField, set("/reason", "x"))
	add("gone with a handle", result("host.status"), res("host.status", 3), "", unknownField, set("/handle", "h"))
	add("fact as string", result("host.status"), res("host.status", 1), "/deadlineAt", "want", set("/deadlineAt", "tomorrow"))
	add("unknown fact", result("host.status"), res("host.status", 1), "", unknownField, set("/cpu", 4))
	add("needs-human empty remedy", result("host.status"), res("host.status", 4), "/remedy", "", set("/remedy", ""))
	add("running with exit", result("job.status"), res("job.status", 0), "", unknownField, set("/exit", 0))
	add("exit null", result("job.status"), res("job.status", 1), "/exit", "want integer", set("/exit", nil))
	add("not-accepted with runs", result("channel.receipt"), res("channel.receipt", 2), "", unknownField, set("/runs", 1))
	add("acquire deadlineAt null", result("host.acquire"), res("host.acquire", 0), "/deadlineAt", "want integer", set("/deadlineAt", nil))

	// ---- $/cancel: exactly one of id or watchId
	add("cancel with both", params("$/cancel"), ex("$/cancel", 0), "", unknownField, set("/watchId", "w"))
	add("cancel with neither", params("$/cancel"), ex("$/cancel", 0), "", missing, del("/id"))
	add("cancel id as bool", params("$/cancel"), ex("$/cancel", 0), "/id", "want", set("/id", true))
	add("cancel id as float", params("$/cancel"), ex("$/cancel", 0), "/id", "want", set("/id", raw("1.5")))
	add("cancel extra", params("$/cancel"), ex("$/cancel", 2), "", unknownField, set("/reason", "x"))
	return ms
}

func TestMutationsFail(t *testing.T) {
	for _, m := range mutations() {
		base := json.RawMessage(words.JSON(m.base))
		if m.base != nil {
			if err := m.check(base); err != nil {
				t.Fatalf("%s: the base is invalid: %v", m.name, err)
			}
		}
		doc := apply(base, m.ops...)
		err := m.check(doc)
		if err == nil {
			t.Errorf("%s: accepted %s", m.name, doc)
			continue
		}
		msg := err.Error()
		if strings.ContainsAny(msg, "\n\r") {
			t.Errorf("%s: error is not one line: %q", m.name, msg)
		}
		if want := "at \"" + m.at + "\": "; !strings.Contains(msg, want) {
			t.Errorf("%s: %q does not name %s", m.name, msg, want)
		}
		if !strings.Contains(msg, m.saying) {
			t.Errorf("%s: %q does not say %q", m.name, msg, m.saying)
		}
	}
}
