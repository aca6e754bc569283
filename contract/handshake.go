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
		{name: "handshake/within-10s", run: checkHandshakeWithin10s},
		{name: "handshake/name", run: checkHandshakeName},
		{name: "handshake/digest", run: checkHandshakeDigest},
		{name: "handshake/load-rules", run: checkHandshakeLoadRules},
	}
}

// checkHandshakeWithin10s (handshake/within-10s): `initialize` is answered
// (not with an error) within 10 s.
func checkHandshakeWithin10s(t *T) {
	lr := handshake(t)
	if lr != nil && (lr.Rule == caller.RuleHandshakeReply || lr.Rule == caller.RuleHandshakeError) {
		t.Failf("%v", lr)
	}
}

// checkHandshakeName (handshake/name): `plugin.name` is the registered name.
func checkHandshakeName(t *T) {
	judgeRule(t, handshake(t), []string{caller.RuleName}, []string{protocol.RuleProtocol})
}

// checkHandshakeDigest (handshake/digest): `schema` is `sha256:` of the
// published schema file.
func checkHandshakeDigest(t *T) {
	judgeRule(t, handshake(t), []string{caller.RuleDigest}, []string{protocol.RuleProtocol, caller.RuleName})
}

// checkHandshakeLoadRules (handshake/load-rules): the declaration passes
// every other load rule (version, schema, instance, seams and their values,
// `host` needs `link` and `job`, lookup or exact dedupe, channel caps,
// `job.channel`, `at-start` needs `reply`, `honours.env`).
func checkHandshakeLoadRules(t *T) {
	lr := handshake(t)
	if lr == nil {
		return
	}
	switch lr.Rule {
	case caller.RuleName, caller.RuleDigest:
		t.Skipf("not judged: refused earlier by rule %s", lr.Rule)
	}
	t.Failf("%v", lr)
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
