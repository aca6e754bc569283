package schemacheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// maxShown bounds how many problems one error line names.
const maxShown = 3

// describe turns a validation error into one line: each problem as
// `at "<JSON pointer>": <problem>`, joined by "; ".
func describe(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return oneLine(err.Error())
	}
	ls := leaves(ve)
	parts := make([]string, 0, len(ls))
	seen := map[string]bool{}
	for _, l := range ls {
		p := fmt.Sprintf("at %q: %s", pointer(l.InstanceLocation), problem(l.ErrorKind))
		if !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return oneLine(ve.Error())
	}
	more := len(parts) - maxShown
	if more > 0 {
		parts = append(parts[:maxShown], fmt.Sprintf("(and %d more)", more))
	}
	return strings.Join(parts, "; ")
}

// problem names what is wrong; values are written as JSON.
func problem(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = jsonText(w)
		}
		if len(want) == 1 {
			return fmt.Sprintf("got %s, want %s", jsonText(k.Got), want[0])
		}
		return fmt.Sprintf("got %s, want one of %s", jsonText(k.Got), strings.Join(want, ", "))
	case *kind.Const:
		return fmt.Sprintf("got %s, want %s", jsonText(k.Got), jsonText(k.Want))
	}
	return oneLine(k.LocalizedString(printer))
}

// jsonText writes v as JSON, cut to 60 bytes.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// pointer renders an instance location as a JSON pointer ("" is the root).
func pointer(loc []string) string {
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

// leaves returns the errors that name a problem, walking through references
// and groups. For a oneOf or anyOf that nothing matched it keeps only the
// branch the value was most likely meant to be (see bestBranch).
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	switch k := e.ErrorKind.(type) {
	case *kind.OneOf:
		if len(k.Subschemas) == 0 && len(e.Causes) > 0 {
			return bestBranch(e)
		}
		return []*jsonschema.ValidationError{e}
	case *kind.AnyOf:
		if len(e.Causes) > 0 {
			return bestBranch(e)
		}
	}
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// branch scores one failed alternative of a oneOf at depth d.
type branch struct {
	errs     []*jsonschema.ValidationError
	wrongTyp int // the value itself has another type
	discrim  int // a discriminator (state: "up"…) has another value
	shape    int // missing or unknown members of the value itself
}

// bestBranch picks the alternative the value was most likely meant to be:
// first one that takes the value's type, then one whose discriminators match
// (a member whose const or enum several alternatives constrain, like
// state), then the fewest missing or unknown members. When every
// alternative fails on a discriminator, the values they want there are
// merged into one problem ("want one of …"); when none takes the value's
// type, the types they want are.
func bestBranch(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	d := len(e.InstanceLocation)
	bs := make([]branch, 0, len(e.Causes))
	constAt := map[string]int{} // pointer → alternatives failing a const or enum there
	for _, c := range e.Causes {
		b := branch{errs: leaves(c)}
		seen := map[string]bool{}
		for _, l := range b.errs {
			switch l.ErrorKind.(type) {
			case *kind.Const, *kind.Enum:
				if p := pointer(l.InstanceLocation); len(l.InstanceLocation) == d+1 && !seen[p] {
					seen[p] = true
					constAt[p]++
				}
			}
		}
		bs = append(bs, b)
	}
	for i := range bs {
		b := &bs[i]
		for _, l := range b.errs {
			n := len(l.InstanceLocation)
			switch l.ErrorKind.(type) {
			case *kind.Type:
				if n == d {
					b.wrongTyp++
				}
			case *kind.Required, *kind.AdditionalProperties:
				if n == d {
					b.shape++
				}
			case *kind.Const, *kind.Enum:
				if n == d+1 && constAt[pointer(l.InstanceLocation)] > 1 {
					b.discrim++
				}
			}
		}
	}
	inOrder := append([]branch(nil), bs...)
	sort.SliceStable(bs, func(i, j int) bool {
		a, b := bs[i], bs[j]
		if a.wrongTyp != b.wrongTyp {
			return a.wrongTyp < b.wrongTyp
		}
		if a.discrim != b.discrim {
			return a.discrim < b.discrim
		}
		if a.shape != b.shape {
			return a.shape < b.shape
		}
		return len(a.errs) < len(b.errs)
	})
	best := bs[0]
	if best.wrongTyp > 0 {
		return []*jsonschema.ValidationError{typeUnion(e, inOrder)}
	}
	if best.discrim > 0 {
		for _, l := range best.errs {
			switch l.ErrorKind.(type) {
			case *kind.Const, *kind.Enum:
				if len(l.InstanceLocation) == d+1 && constAt[pointer(l.InstanceLocation)] > 1 {
					if m := mergeDiscrim(l, inOrder); m != nil {
						return []*jsonschema.ValidationError{m}
					}
				}
			}
		}
	}
	return best.errs
}

// typeUnion reports a value whose type no alternative takes.
func typeUnion(e *jsonschema.ValidationError, bs []branch) *jsonschema.ValidationError {
	d := len(e.InstanceLocation)
	var got string
	var want []string
	seen := map[string]bool{}
	for _, b := range bs {
		for _, l := range b.errs {
			if t, ok := l.ErrorKind.(*kind.Type); ok && len(l.InstanceLocation) == d {
				got = t.Got
				for _, w := range t.Want {
					if !seen[w] {
						seen[w] = true
						want = append(want, w)
					}
				}
			}
		}
	}
	return &jsonschema.ValidationError{InstanceLocation: e.InstanceLocation, ErrorKind: &kind.Type{Got: got, Want: want}}
}

// mergeDiscrim gathers what every alternative wants at first's location.
func mergeDiscrim(first *jsonschema.ValidationError, bs []branch) *jsonschema.ValidationError {
	at := pointer(first.InstanceLocation)
	var got any
	var want []any
	seen := map[string]bool{}
	add := func(v any) {
		k := fmt.Sprintf("%#v", v)
		if !seen[k] {
			seen[k] = true
			want = append(want, v)
		}
	}
	for _, b := range bs {
		for _, l := range b.errs {
			if pointer(l.InstanceLocation) != at {
				continue
			}
			switch k := l.ErrorKind.(type) {
			case *kind.Const:
				got = k.Got
				add(k.Want)
			case *kind.Enum:
				got = k.Got
				for _, w := range k.Want {
					add(w)
				}
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	return &jsonschema.ValidationError{InstanceLocation: first.InstanceLocation, ErrorKind: &kind.Enum{Got: got, Want: want}}
}
