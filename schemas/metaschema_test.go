package schemas

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const metaschema = "https://json-schema.org/draft/2020-12/schema"

func doc(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestValid2020_12 checks the file against the 2020-12 metaschema (the
// library ships it) and compiles it.
func TestValid2020_12(t *testing.T) {
	c := jsonschema.NewCompiler()
	meta, err := c.Compile(metaschema)
	if err != nil {
		t.Fatalf("compiling the 2020-12 metaschema: %v", err)
	}
	v := doc(t, V1)
	if err := meta.Validate(v); err != nil {
		t.Fatalf("plugin-protocol-v1.json is not a valid 2020-12 schema: %v", err)
	}
	if err := c.AddResource("file:///plugin-protocol-v1.json", v); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("file:///plugin-protocol-v1.json"); err != nil {
		t.Fatalf("compile: %v", err)
	}
}

// TestMetaschemaCheckBites shows the metaschema check above fails a broken
// schema, so its pass means something.
func TestMetaschemaCheckBites(t *testing.T) {
	broken := bytes.Replace(V1, []byte(`"additionalProperties": false`), []byte(`"additionalProperties": "no"`), 1)
	if bytes.Equal(broken, V1) {
		t.Fatal("no additionalProperties to break")
	}
	meta, err := jsonschema.NewCompiler().Compile(metaschema)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Validate(doc(t, broken)) == nil {
		t.Fatal("the metaschema accepted additionalProperties: \"no\"")
	}
}

// openObjects lists every schema that takes an object but does not close
// it with additionalProperties, outside the allowed ones.
func openObjects(v any, path string, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if takesObject(v) {
			if _, ok := v["additionalProperties"]; !ok {
				*out = append(*out, path)
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "const" || k == "enum" {
				continue
			}
			openObjects(v[k], path+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), out)
		}
	case []any:
		for i, x := range v {
			openObjects(x, fmt.Sprintf("%s/%d", path, i), out)
		}
	}
}

func takesObject(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	return false
}

// TestClosedThroughout: every object schema says what else it allows
// (false, or a value schema for a map), except the envelopes' params, which
// each method's own definition closes.
func TestClosedThroughout(t *testing.T) {
	var open []string
	openObjects(doc(t, V1), "#", &open)
	allowed := map[string]bool{
		"#/$defs/request/properties/params":      true,
		"#/$defs/notification/properties/params": true,
	}
	for _, p := range open {
		if !allowed[p] {
			t.Errorf("%s takes an object without additionalProperties", p)
		}
	}
	for p := range allowed {
		found := false
		for _, o := range open {
			found = found || o == p
		}
		if !found {
			t.Errorf("allowed open object %s no longer exists: update the test", p)
		}
	}
}
