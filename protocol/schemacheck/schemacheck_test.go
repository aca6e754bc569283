package schemacheck

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/schemas"
)

func TestGoValuesValidate(t *testing.T) {
	for m, c := range examples {
		for i, p := range c.params {
			raw := json.RawMessage(words.JSON(p))
			if p == nil {
				raw = nil // absent params
			}
			if err := Params(m, raw); err != nil {
				t.Errorf("%s params #%d %s: %v", m, i, raw, err)
			}
		}
		for i, r := range c.results {
			raw := json.RawMessage(words.JSON(r))
			if err := Result(m, raw); err != nil {
				t.Errorf("%s result #%d %s: %v", m, i, raw, err)
			}
		}
	}
	for m, ps := range notificationExamples {
		for i, p := range ps {
			if err := Notification(m, json.RawMessage(words.JSON(p))); err != nil {
				t.Errorf("%s #%d: %v", m, i, err)
			}
		}
	}
	if err := Declaration(json.RawMessage(words.JSON(fullDecl))); err != nil {
		t.Errorf("full declaration: %v", err)
	}
}

// TestEveryMethodCovered ties the schema, the Go constants and the examples
// together: a method added to one and not the others fails here.
func TestEveryMethodCovered(t *testing.T) {
	got := methods()
	want := slices.Clone(allMethods)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("schema methods %v\nGo methods     %v", got, want)
	}
	for _, m := range allMethods {
		if !Known(m) {
			t.Errorf("Known(%q) = false", m)
		}
		c, ok := examples[m]
		if !ok || len(c.params) == 0 {
			t.Errorf("%s: no params example", m)
		}
		if m == protocol.MethodCancel.Name {
			if err := Result(m, json.RawMessage("null")); err == nil {
				t.Errorf("Result(%q) accepted a result: $/cancel is a notification", m)
			}
			continue
		}
		if len(c.results) == 0 {
			t.Errorf("%s: no result example", m)
		}
	}
	for _, m := range []string{"", "Link.exec", "link.Exec", "link.exec ", "link", "host.frobnicate", "rpc.discover",
		protocol.NotifyWatchSettled, protocol.NotifyWatchRestarted} {
		if Known(m) {
			t.Errorf("Known(%q) = true", m)
		}
		if err := Params(m, json.RawMessage("{}")); err == nil || !strings.Contains(err.Error(), "unknown method") {
			t.Errorf("Params(%q): %v, want an unknown method error", m, err)
		}
		if err := Result(m, json.RawMessage("null")); err == nil || !strings.Contains(err.Error(), "unknown method") {
			t.Errorf("Result(%q): %v, want an unknown method error", m, err)
		}
	}
	if len(notificationExamples) != 2 {
		t.Fatalf("want examples of exactly the two notifications")
	}
}

func TestDeclarationIsInitializeResult(t *testing.T) {
	for _, raw := range []json.RawMessage{json.RawMessage(words.JSON(fullDecl)), json.RawMessage(words.JSON(minDecl)), json.RawMessage(`{"protocol":1}`), json.RawMessage(`null`)} {
		a, b := Declaration(raw), Result("initialize", raw)
		if (a == nil) != (b == nil) || (a != nil && a.Error() != b.Error()) {
			t.Errorf("%s: Declaration %v, Result %v", raw, a, b)
		}
	}
}

func TestResultMissing(t *testing.T) {
	err := Result(protocol.MethodJobStop.Name, nil)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("an absent result: %v", err)
	}
	// null is the result of a method that answers nothing, and no other.
	if err := Result(protocol.MethodJobStop.Name, json.RawMessage("null")); err != nil {
		t.Fatalf("job.stop null: %v", err)
	}
	if err := Result(protocol.MethodLinkExec.Name, json.RawMessage("null")); err == nil {
		t.Fatal("link.exec accepted a null result")
	}
}

// TestLoadRulesStaySeparate: values the load rules refuse match the schema,
// so ValidateDeclaration (not the schema) reports them, by rule name.
func TestLoadRulesStaySeparate(t *testing.T) {
	for _, c := range []struct {
		rule string
		edit func(d *protocol.InitializeResult)
	}{
		{protocol.RuleChannelCaps, func(d *protocol.InitializeResult) { d.Seams.Channel.Caps.Watch = "poll" }},
		{protocol.RuleChannelCaps, func(d *protocol.InitializeResult) { d.Seams.Channel.Caps.SettleText = "none" }},
		{protocol.RuleChannelCaps, func(d *protocol.InitializeResult) { d.Seams.Channel.Caps.Fence = "exact" }},
		{protocol.RuleNoSeam, func(d *protocol.InitializeResult) { d.Seams = protocol.Seams{} }},
		{protocol.RuleHostNeedsLink, func(d *protocol.InitializeResult) { d.Seams.Job = nil; d.Seams.Channel = nil }},
		{protocol.RuleKeyCaps, func(d *protocol.InitializeResult) { d.Seams.Host.Acquire = protocol.KeyCaps{} }},
		{protocol.RuleKeyCaps, func(d *protocol.InitializeResult) {
			d.Seams.Job.Start = protocol.KeyCaps{Dedupe: &protocol.Dedupe{Exact: false, WindowMs: 1}}
		}},
		{protocol.RuleJobChannel, func(d *protocol.InitializeResult) { d.Seams.Job.Channel = "other" }},
		{protocol.RuleFirstTurn, func(d *protocol.InitializeResult) { d.Seams.Job.Handle = protocol.HandleFile }},
		{protocol.RuleHonoursEnv, func(d *protocol.InitializeResult) { d.Seams.Job.Channel = ""; d.Seams.Job.Honours.Env = false }},
		{protocol.RuleMaxScriptBytes, func(d *protocol.InitializeResult) { d.Seams.Link.MaxScriptBytes = 0 }},
	} {
		d := cloneDecl(t, fullDecl)
		c.edit(&d)
		raw := json.RawMessage(words.JSON(d))
		if err := Declaration(raw); err != nil {
			t.Errorf("%s: the schema refused what the load rule should: %v", c.rule, err)
		}
		if !slices.Contains(protocol.BrokenRules(protocol.ValidateDeclaration(d)), c.rule) {
			t.Errorf("%s: ValidateDeclaration did not report it for %s", c.rule, raw)
		}
	}
}

func cloneDecl(t *testing.T, d protocol.InitializeResult) protocol.InitializeResult {
	t.Helper()
	var out protocol.InitializeResult
	if err := json.Unmarshal(json.RawMessage(words.JSON(d)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNotifications(t *testing.T) {
	settled := json.RawMessage(words.JSON(notificationExamples[protocol.NotifyWatchSettled][0]))
	for _, m := range []string{"watch/other", "$/cancel", "watch/Settled", "watch/settled/", "channel.watch", ""} {
		err := Notification(m, settled)
		if err == nil {
			t.Errorf("Notification(%q) accepted", m)
			continue
		}
		if !strings.Contains(err.Error(), "watch/settled and watch/restarted") && !strings.Contains(err.Error(), "watch/restarted and watch/settled") {
			t.Errorf("Notification(%q): %v does not name the two notifications", m, err)
		}
	}
	if err := Notification(protocol.NotifyWatchRestarted, settled); err == nil {
		t.Error("watch/restarted accepted watch/settled's params")
	}
	if err := Notification(protocol.NotifyWatchSettled, nil); err == nil {
		t.Error("watch/settled accepted absent params")
	}
}

func TestErrorObject(t *testing.T) {
	for _, e := range []error{
		protocol.Errorf(protocol.Retryable, "busy"),
		protocol.Errorf(protocol.Permanent, "no such host"),
		protocol.HumanError("run `gcloud auth login`", "credentials expired"),
		protocol.Errorf(protocol.UnknownOutcome, "connection lost"),
		protocol.Errorf(protocol.Human, "no remedy given"), // ToWire supplies one
		protocol.Errorf("bogus", "bad kind"),               // ToWire maps it to permanent
		protocol.NotStarted(context.Canceled, "nothing ran"),
		context.DeadlineExceeded, // a cut run: unknown-outcome
	} {
		for _, method := range []string{protocol.MethodHostStatus.Name, protocol.MethodHostAcquire.Name, protocol.MethodLinkExec.Name} {
			raw := json.RawMessage(words.JSON(protocol.ToWire(e, method)))
			if err := ErrorObject(raw); err != nil {
				t.Errorf("ToWire(%v): %s: %v", e, raw, err)
			}
		}
	}
	for _, c := range []struct{ obj, at string }{
		{`{"code":-32003,"message":"m","data":{"kind":"human"}}`, `"/data": missing property 'remedy'`},
		{`{"code":-32003,"message":"m","data":{"kind":"human","remedy":""}}`, `"/data/remedy"`},
		{`{"code":-32001,"message":"m","data":{"kind":"fatal"}}`, `"/data/kind": got "fatal"`},
		{`{"code":-32001,"message":"m","data":{"kind":"Retryable"}}`, `"/data/kind"`},
		{`{"code":-32001,"message":"m","data":{}}`, `"/data": missing property 'kind'`},
		{`{"code":-32001,"message":"m"}`, `missing property 'data'`},
		{`{"code":-32001,"data":{"kind":"permanent"}}`, `missing property 'message'`},
		{`{"message":"m","data":{"kind":"permanent"}}`, `missing property 'code'`},
		{`{"code":1.5,"message":"m","data":{"kind":"permanent"}}`, `"/code"`},
		{`{"code":1,"message":"m","data":{"kind":"permanent","why":"x"}}`, `'why' not allowed`},
		{`{"code":1,"message":"m","data":{"kind":"permanent"},"extra":1}`, `'extra' not allowed`},
		{`"boom"`, `want object`},
	} {
		err := ErrorObject(json.RawMessage(c.obj))
		if err == nil {
			t.Errorf("%s accepted", c.obj)
		} else if !strings.Contains(err.Error(), c.at) {
			t.Errorf("%s: %v, want it to say %s", c.obj, err, c.at)
		}
	}
	// remedy is allowed (not required) beside the other kinds.
	if err := ErrorObject(json.RawMessage(`{"code":1,"message":"m","data":{"kind":"permanent","remedy":"x"}}`)); err != nil {
		t.Error(err)
	}
}

// TestEffectsAreTheSchemas ties the method table's effects to the schema,
// whose description of an effect's params says "(an effect": a method
// declared an effect that the schema does not call one, or the reverse,
// fails here.
func TestEffectsAreTheSchemas(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Description string `json:"description"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(schemas.V1, &doc); err != nil {
		t.Fatal(err)
	}
	effects := 0
	for _, m := range protocol.MethodNames() {
		d, ok := doc.Defs[m+".params"]
		if !ok {
			t.Errorf("%s: no params in the schema", m)
			continue
		}
		schema := strings.Contains(d.Description, "(an effect")
		if protocol.IsEffect(m) != schema {
			t.Errorf("%s: declared effect %v, the schema says %q", m, protocol.IsEffect(m), d.Description)
		}
		if schema {
			effects++
		}
	}
	if effects != 10 {
		t.Errorf("%d effects, the spec has 10", effects)
	}
}
