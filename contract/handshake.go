package contract

import (
	"errors"
	"slices"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// handshakeChecks judge initialize the way mu does at load: an answer
// within 10 s, the registered name, the published schema digest, and
// every load rule of the declaration.
func handshakeChecks() []check {
	return []check{
		{name: "handshake/within-10s", run: func(t *T) {
			lr := handshake(t)
			if lr != nil && (lr.Rule == caller.RuleHandshakeReply || lr.Rule == caller.RuleHandshakeError) {
				t.Failf("%v", lr)
			}
		}},
		{name: "handshake/name", run: func(t *T) {
			judgeRule(t, handshake(t), []string{caller.RuleName}, []string{protocol.RuleProtocol})
		}},
		{name: "handshake/digest", run: func(t *T) {
			judgeRule(t, handshake(t), []string{caller.RuleDigest}, []string{protocol.RuleProtocol, caller.RuleName})
		}},
		{name: "handshake/load-rules", run: func(t *T) {
			lr := handshake(t)
			if lr == nil {
				return
			}
			switch lr.Rule {
			case caller.RuleName, caller.RuleDigest:
				t.Skipf("not judged: refused earlier by rule %s", lr.Rule)
			}
			t.Failf("%v", lr)
		}},
	}
}

// handshake starts a fresh plugin and returns mu's refusal, if any. A
// start that fails before the handshake (registration) ends the check.
func handshake(t *T) *caller.LoadRefusal {
	_, err := t.tryStart()
	if err == nil {
		return nil
	}
	var lr *caller.LoadRefusal
	if !errors.As(err, &lr) {
		t.Failf("the plugin did not start: %v", err)
	}
	switch lr.Rule {
	case caller.RuleRegName, caller.RuleRegPath, caller.RuleRegBasename, caller.RuleRegFile,
		caller.RuleRegOwner, caller.RuleRegWritable, caller.RuleRegStart:
		t.Failf("not started: %v", lr)
	}
	return lr
}

// judgeRule fails on one of rules, and skips when an earlier rule (or no
// answer at all) already refused the plugin.
func judgeRule(t *T, lr *caller.LoadRefusal, rules, earlier []string) {
	if lr == nil {
		return
	}
	if slices.Contains(rules, lr.Rule) {
		t.Failf("%v", lr)
	}
	if slices.Contains(earlier, lr.Rule) || lr.Rule == caller.RuleHandshakeReply || lr.Rule == caller.RuleHandshakeError {
		t.Skipf("not judged: refused earlier by rule %s", lr.Rule)
	}
}
