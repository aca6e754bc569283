package caller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/schemas"
)

// handshake sends initialize and judges the answer by every load rule.
func (p *Plugin) handshake(ctx context.Context) error {
	refuse := func(rule string, err error, format string, args ...any) error {
		return &LoadRefusal{Name: p.cfg.Name, Rule: rule, Rules: []string{rule}, Detail: fmt.Sprintf(format, args...), Err: err}
	}
	r, err := rawRequest(protocol.MethodInitialize.Name, protocol.InitializeParams{Protocol: p.cfg.Protocol, Mu: p.cfg.Mu})
	if err != nil {
		return err
	}
	o, err := p.send(ctx, r, p.cfg.HandshakeTimeout)
	var re *RemoteError
	switch {
	case errors.As(err, &re):
		return refuse(RuleHandshakeError, err, "the plugin answered initialize with an error: %s", re.Message)
	case err != nil:
		return refuse(RuleHandshakeReply, err, "no valid answer to initialize: %v%s", err, p.stderrHint())
	}
	if err := p.judge(o.result); err != nil {
		return err
	}
	p.declRaw = o.result
	return nil
}

func (p *Plugin) stderrHint() string {
	if l := p.FirstStderrLine(); l != "" {
		return " (stderr: " + l + ")"
	}
	return ""
}

// judge applies the load rules, in the spec's order, to a declaration.
func (p *Plugin) judge(raw json.RawMessage) error {
	refuse := func(rule string, err error, format string, args ...any) error {
		return &LoadRefusal{Name: p.cfg.Name, Rule: rule, Rules: []string{rule}, Detail: fmt.Sprintf(format, args...), Err: err}
	}
	// The fields the first rules read, read loosely so that a declaration
	// that is bad elsewhere is still refused by the earliest rule.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return refuse(RuleSchema, err, "the declaration is not a JSON object")
	}
	var version int
	if err := json.Unmarshal(top["protocol"], &version); err != nil ||
		version < p.cfg.Protocol.Min || version > p.cfg.Protocol.Max {
		return refuse(protocol.RuleProtocol, err, "protocol %s is outside mu's range %d..%d",
			top["protocol"], p.cfg.Protocol.Min, p.cfg.Protocol.Max)
	}
	var info struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(top["plugin"], &info)
	if info.Name != p.cfg.Name {
		return refuse(RuleName, nil, "the plugin declares the name %q; it is registered as %q", info.Name, p.cfg.Name)
	}
	var digest string
	_ = json.Unmarshal(top["schema"], &digest)
	want := p.cfg.Digest
	if want == "" {
		want = schemas.V1Digest()
	}
	if digest != want {
		return refuse(RuleDigest, nil, "schema digest %q is not the published file's %q", digest, want)
	}
	if err := schemaDeclaration(raw); err != nil {
		return refuse(RuleSchema, err, "the declaration does not match the schema: %v", err)
	}
	var decl protocol.InitializeResult
	if err := strictUnmarshal(raw, &decl); err != nil {
		return refuse(RuleSchema, err, "the declaration does not match the schema: %v", err)
	}
	if err := protocol.ValidateDeclaration(decl); err != nil {
		rules := protocol.BrokenRules(err)
		rule := RuleSchema
		if len(rules) > 0 {
			rule = rules[0]
		}
		return &LoadRefusal{Name: p.cfg.Name, Rule: rule, Rules: rules, Detail: err.Error(), Err: err}
	}
	if missing := missingSeams(decl.Seams, p.cfg.Need); len(missing) > 0 {
		return refuse(RuleNeededSeam, nil, "needed seam(s) %s not declared", strings.Join(missing, ", "))
	}
	if len(p.cfg.Recorded) > 0 {
		same, err := SameJSON(raw, p.cfg.Recorded)
		if err != nil {
			return refuse(RuleRecorded, err, "the recorded declaration is unreadable: %v", err)
		}
		if !same {
			return refuse(RuleRecorded, nil, "the declaration differs from the one recorded by mu plugin add (run add again)")
		}
	}
	p.decl = decl
	return nil
}

func missingSeams(s protocol.Seams, need []string) []string {
	var out []string
	for _, n := range need {
		ok := false
		switch n {
		case "link":
			ok = s.Link != nil
		case "job":
			ok = s.Job != nil
		case "host":
			ok = s.Host != nil
		case "channel":
			ok = s.Channel != nil
		}
		if !ok {
			out = append(out, n)
		}
	}
	return out
}

// SameJSON reports whether two JSON texts are the same value: key order,
// whitespace and number spelling (1 vs 1.0) aside.
func SameJSON(a, b []byte) (bool, error) {
	ca, err := canonical(a)
	if err != nil {
		return false, err
	}
	cb, err := canonical(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ca, cb), nil
}

func canonical(b []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(normNumbers(v))
}

func normNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normNumbers(e)
		}
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	}
	return v
}
