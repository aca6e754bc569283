package caller

import (
	"context"
	"errors"
	"fmt"
)

// RuleStopChanged names the refusal of a call that names a job, host or
// effect recorded under another instance than the one the plugin now
// addresses (spec "Effects and replay": under another instance, mu sends
// nothing).
const RuleStopChanged = "stop-changed"

// ErrInstanceChanged: the plugin's handshake named another instance than
// the one the call's record was made under. Every *InstanceError matches it.
var ErrInstanceChanged = errors.New(RuleStopChanged + ": the plugin addresses another instance")

// InstanceError is the cause of a call refused before it was written
// because its record belongs to another instance.
type InstanceError struct {
	Recorded string // the instance the job, host or effect was recorded under
	Current  string // the instance the running plugin declared
}

func (e *InstanceError) Error() string {
	return fmt.Sprintf("%s: recorded under instance %q, the plugin now addresses %q: nothing sent", RuleStopChanged, e.Recorded, e.Current)
}

// Is makes an InstanceError match ErrInstanceChanged.
func (e *InstanceError) Is(t error) bool { return t == ErrInstanceChanged }

type instanceKey struct{}

// ExpectInstance returns a context under which every call (Call, Do, Send,
// Invoke) goes only to a plugin whose handshake
// declared instance: under another it fails before anything is written, a
// *NotSentError whose Cause is an *InstanceError (errors.Is
// ErrInstanceChanged and ErrNotSent). Use it for every call that names a
// recorded job, host or effect: a stop, a resend, job.status, job.attach, a
// lookup, a receipt, a readStates.
func ExpectInstance(ctx context.Context, instance string) context.Context {
	return context.WithValue(ctx, instanceKey{}, instance)
}

// CheckInstance reports, as the not-sent error a call would return,
// whether a record made under instance may be sent to this plugin.
func (p *Plugin) CheckInstance(method, instance string) error {
	if cur := p.decl.Instance; cur != instance {
		return &NotSentError{Method: method, Cause: &InstanceError{Recorded: instance, Current: cur}}
	}
	return nil
}

// instanceRefusal is send's check: the ctx's expected instance, if any,
// against the declaration (never for initialize, which makes it).
func (p *Plugin) instanceRefusal(ctx context.Context, method string) error {
	want, ok := ctx.Value(instanceKey{}).(string)
	if !ok || method == "initialize" {
		return nil
	}
	return p.CheckInstance(method, want)
}
