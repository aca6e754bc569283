package protocol

import (
	"slices"
	"testing"
)

// fullDecl declares every seam validly.
func fullDecl() InitializeResult {
	return InitializeResult{
		Protocol: 1, Plugin: PluginInfo{Name: "x", Version: "1"}, Instance: "i", Schema: "sha256:00",
		Seams: Seams{
			Link: &LinkSeam{Fetch: true, Push: Bool(true), Slots: SlotsSelf, RemoteOnTimeout: RemoteStopped,
				Quiescence: QuiescenceProvable, MaxScriptBytes: 1 << 17, Checks: []string{PhaseReach}},
			Host: &HostSeam{Acquire: KeyCaps{Lookup: true, FenceKey: true}},
			Job: &JobSeam{Kind: "k", View: ViewDetached, Handle: HandleReply, Start: KeyCaps{Lookup: true},
				Channel: "c", Checks: []string{}, FirstTurn: FirstTurnOnSend, OutlivesHost: Bool(false)},
			Channel: &ChannelSeam{Name: "c", Caps: ChannelCaps{Fence: "none", Receipt: "exact", Dedupe: "exact",
				Steer: "native", Interrupt: "native", Fresh: "in-place", Answer: true, Command: true, Watch: "stream", SettleText: "full"}},
		},
	}
}

// Each load rule: a declaration that passes, and one that breaks exactly
// that rule.
func TestLoadRules(t *testing.T) {
	cases := []struct {
		rule   string
		pass   func(*InitializeResult)
		break_ func(*InitializeResult)
	}{
		{RuleProtocol, nil, func(d *InitializeResult) { d.Protocol = 2 }},
		{RuleInstance, func(d *InitializeResult) { d.Instance = string(make([]byte, 128)) }, func(d *InitializeResult) { d.Instance = string(make([]byte, 129)) }},
		{RuleInstance, nil, func(d *InitializeResult) { d.Instance = "" }},
		{RuleValues, nil, func(d *InitializeResult) { d.Seams.Link.Slots = "both" }},
		{RuleValues, nil, func(d *InitializeResult) { d.Seams.Job.View = "floating" }},
		{RuleValues, nil, func(d *InitializeResult) { d.Seams.Link.Checks = []string{"smell"} }},
		{RuleNoSeam, nil, func(d *InitializeResult) { d.Seams = Seams{} }},
		{RuleHostNeedsLink, func(d *InitializeResult) {}, func(d *InitializeResult) { d.Seams.Job = nil }},
		{RuleHostNeedsLink, nil, func(d *InitializeResult) { d.Seams.Link = nil }},
		{RuleKeyCaps, func(d *InitializeResult) {
			d.Seams.Host.Acquire = KeyCaps{Dedupe: &Dedupe{Exact: true, WindowMs: 1000}}
		}, func(d *InitializeResult) {
			d.Seams.Host.Acquire = KeyCaps{Dedupe: &Dedupe{Exact: false, WindowMs: 1000}}
		}},
		{RuleKeyCaps, func(d *InitializeResult) { d.Seams.Job.Handle = HandleFile; d.Seams.Job.Start = KeyCaps{} },
			func(d *InitializeResult) { d.Seams.Job.Start = KeyCaps{} }},
		{RuleChannelCaps, nil, func(d *InitializeResult) { d.Seams.Channel.Caps.Watch = "poll" }},
		{RuleChannelCaps, func(d *InitializeResult) { d.Seams.Channel.Caps.SettleText = "truncated" },
			func(d *InitializeResult) { d.Seams.Channel.Caps.SettleText = "none" }},
		{RuleChannelCaps, nil, func(d *InitializeResult) { d.Seams.Channel.Caps.Fence = "exact" }},
		{RuleJobChannel, nil, func(d *InitializeResult) { d.Seams.Job.Channel = "other" }},
		{RuleFirstTurn, func(d *InitializeResult) { d.Seams.Job.FirstTurn = FirstTurnAtStart },
			func(d *InitializeResult) { d.Seams.Job.FirstTurn = FirstTurnAtStart; d.Seams.Job.Handle = HandlePane }},
		{RuleHonoursEnv, func(d *InitializeResult) { d.Seams.Job.Honours = &Honours{Env: false} },
			func(d *InitializeResult) { d.Seams.Job.Honours = &Honours{Env: false}; d.Seams.Job.Channel = "" }},
		{RuleMaxScriptBytes, nil, func(d *InitializeResult) { d.Seams.Link.MaxScriptBytes = 0 }},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			ok := fullDecl()
			if c.pass != nil {
				c.pass(&ok)
			}
			if err := ValidateDeclaration(ok); err != nil {
				t.Fatalf("passing case refused: %v", err)
			}
			bad := fullDecl()
			c.break_(&bad)
			got := BrokenRules(ValidateDeclaration(bad))
			if !slices.Contains(got, c.rule) {
				t.Fatalf("broken case: rules %v do not include %q", got, c.rule)
			}
		})
	}
}

// The rule list names every rule the table above tests.
func TestRulesListed(t *testing.T) {
	for _, r := range []string{RuleProtocol, RuleInstance, RuleValues, RuleNoSeam, RuleHostNeedsLink, RuleKeyCaps,
		RuleChannelCaps, RuleJobChannel, RuleFirstTurn, RuleHonoursEnv, RuleMaxScriptBytes} {
		if !slices.Contains(Rules, r) {
			t.Errorf("Rules lacks %q", r)
		}
	}
}
