package protocol

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// LoadError is a load rule the declaration breaks: mu refuses the plugin
// (exit 4). Rule names the spec's bullet.
type LoadError struct {
	Rule   string
	Detail string
}

func (e *LoadError) Error() string { return fmt.Sprintf("load rule %q: %s", e.Rule, e.Detail) }

// Load rule names, one per bullet of the spec's "Load rules" that a
// declaration alone can break. The registration-dependent rules (name,
// digest, needed seams, recorded declaration) are in the caller package.
const (
	RuleProtocol       = "protocol-version"
	RuleInstance       = "instance"
	RuleValues         = "declaration-values"
	RuleNoSeam         = "no-seam"
	RuleHostNeedsLink  = "host-needs-link-and-job"
	RuleKeyCaps        = "lookup-or-exact-dedupe"
	RuleChannelCaps    = "channel-caps"
	RuleJobChannel     = "job-channel-name"
	RuleFirstTurn      = "at-start-needs-reply"
	RuleHonoursEnv     = "honours-env-needs-channel"
	RuleMaxScriptBytes = "max-script-bytes"
)

// ValidateDeclaration checks every load rule a declaration can break on its
// own, and returns them all joined (each a *LoadError), or nil.
func ValidateDeclaration(d InitializeResult) error {
	var errs []error
	add := func(rule, format string, args ...any) {
		errs = append(errs, &LoadError{Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
	if d.Protocol != Version {
		add(RuleProtocol, "protocol %d is outside 1..1", d.Protocol)
	}
	if n := utf8.RuneCountInString(d.Instance); n < 1 || n > 128 {
		add(RuleInstance, "instance must be 1-128 characters, got %d", n)
	}
	if d.Plugin.Name == "" || d.Plugin.Version == "" {
		add(RuleValues, "plugin name and version are required")
	}
	s := d.Seams
	if s.Link == nil && s.Job == nil && s.Host == nil && s.Channel == nil {
		add(RuleNoSeam, "no seam is declared")
	}
	if s.Host != nil && (s.Link == nil || s.Job == nil) {
		add(RuleHostNeedsLink, "a host seam needs both link and job")
	}
	if l := s.Link; l != nil {
		enum(add, "link.slots", l.Slots, SlotsMu, SlotsSelf)
		enum(add, "link.remoteOnTimeout", l.RemoteOnTimeout, RemoteStopped, RemoteStopping, RemoteUnknown)
		enum(add, "link.quiescence", l.Quiescence, QuiescenceProvable, QuiescenceUnprovable)
		checks(add, "link.checks", l.Checks)
		if l.MaxScriptBytes <= 0 {
			add(RuleMaxScriptBytes, "link.maxScriptBytes is required and must be positive")
		}
	}
	if h := s.Host; h != nil && !keyCapsOK(h.Acquire) {
		add(RuleKeyCaps, "host.acquire declares neither lookup nor exact dedupe")
	}
	if j := s.Job; j != nil {
		enum(add, "job.view", j.View, ViewBound, ViewDetached)
		enum(add, "job.handle", j.Handle, HandlePane, HandleFile, HandleReply)
		checks(add, "job.checks", j.Checks)
		if j.Kind == "" {
			add(RuleValues, "job.kind is required")
		}
		if j.FirstTurn != "" {
			enum(add, "job.firstTurn", j.FirstTurn, FirstTurnOnSend, FirstTurnAtStart)
		}
		if j.Handle == HandleReply && !keyCapsOK(j.Start) {
			add(RuleKeyCaps, "job.start with handle \"reply\" declares neither lookup nor exact dedupe")
		}
		if j.Channel != "" && (s.Channel == nil || j.Channel != s.Channel.Name) {
			add(RuleJobChannel, "job.channel %q is not the channel seam's name", j.Channel)
		}
		if j.FirstTurn == FirstTurnAtStart && j.Handle != HandleReply {
			add(RuleFirstTurn, "firstTurn \"at-start\" needs handle \"reply\"")
		}
		if j.Honours != nil && !j.Honours.Env && j.Channel == "" {
			add(RuleHonoursEnv, "honours.env false needs a channel")
		}
	}
	if c := s.Channel; c != nil {
		if c.Name == "" {
			add(RuleValues, "channel.name is required")
		}
		if c.Caps.Watch != "stream" {
			add(RuleChannelCaps, "channel watch %q is not \"stream\"", c.Caps.Watch)
		}
		if c.Caps.SettleText == "none" {
			add(RuleChannelCaps, "channel settleText is \"none\"")
		}
		if c.Caps.Fence != "none" {
			add(RuleChannelCaps, "channel fence %q is not \"none\"", c.Caps.Fence)
		}
	}
	return errors.Join(errs...)
}

func keyCapsOK(k KeyCaps) bool {
	return k.Lookup || (k.Dedupe != nil && k.Dedupe.Exact)
}

func enum(add func(string, string, ...any), field, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		add(RuleValues, "%s %q is not one of %q", field, v, allowed)
	}
}

func checks(add func(string, string, ...any), field string, cs []string) {
	for _, c := range cs {
		if c != PhaseTemplate && c != PhaseReach && c != PhaseAgent {
			add(RuleValues, "%s: unknown phase %q", field, c)
		}
	}
}

// Rules lists every load rule's name, in the spec's order.
var Rules = []string{RuleProtocol, RuleInstance, RuleValues, RuleNoSeam, RuleHostNeedsLink,
	RuleKeyCaps, RuleChannelCaps, RuleJobChannel, RuleFirstTurn, RuleHonoursEnv, RuleMaxScriptBytes}

// BrokenRules returns the names of the rules err (from ValidateDeclaration)
// reports.
func BrokenRules(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		var le *LoadError
		if errors.As(e, &le) {
			out = append(out, le.Rule)
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, x := range j.Unwrap() {
			walk(x)
		}
	} else if err != nil {
		walk(err)
	}
	return out
}
