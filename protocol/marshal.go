package protocol

import "encoding/json"

// The spec's lists and maps are never null on the wire, but Go marshals a
// nil slice or map as null. These methods write [] and {} instead, so a
// backend cannot send a schema-invalid message by leaving one unset.

func (l LinkSeam) MarshalJSON() ([]byte, error) {
	type plain LinkSeam
	if l.Checks == nil {
		l.Checks = []string{}
	}
	return json.Marshal(plain(l))
}

func (j JobSeam) MarshalJSON() ([]byte, error) {
	type plain JobSeam
	if j.Checks == nil {
		j.Checks = []string{}
	}
	return json.Marshal(plain(j))
}

func (h Honours) MarshalJSON() ([]byte, error) {
	type plain Honours
	if h.Roles == nil {
		h.Roles = []string{}
	}
	return json.Marshal(plain(h))
}

func (v View) MarshalJSON() ([]byte, error) {
	type plain View
	if v.Env == nil {
		v.Env = map[string]string{}
	}
	return json.Marshal(plain(v))
}

func (s JobSpec) MarshalJSON() ([]byte, error) {
	type plain JobSpec
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	return json.Marshal(plain(s))
}

func (p AcquireParams) MarshalJSON() ([]byte, error) {
	type plain AcquireParams
	if p.Params == nil {
		p.Params = map[string]string{}
	}
	return json.Marshal(plain(p))
}

func (p ReadStatesParams) MarshalJSON() ([]byte, error) {
	type plain ReadStatesParams
	if p.Targets == nil {
		p.Targets = []AgentName{}
	}
	return json.Marshal(plain(p))
}

func (p AnswerParams) MarshalJSON() ([]byte, error) {
	type plain AnswerParams
	if p.Keys == nil {
		p.Keys = []string{}
	}
	return json.Marshal(plain(p))
}

func (r AnswerResult) MarshalJSON() ([]byte, error) {
	type plain AnswerResult
	if r.Keys == nil {
		r.Keys = []string{}
	}
	return json.Marshal(plain(r))
}

// Steps is a checkSteps result: never null.
type Steps []Step

func (s Steps) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Step(s))
}
