package schemas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestV1DigestIsFileBytes(t *testing.T) {
	disk, err := os.ReadFile("plugin-protocol-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, V1) {
		t.Fatal("embedded V1 differs from plugin-protocol-v1.json on disk: rebuild")
	}
	sum := sha256.Sum256(disk)
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got := V1Digest(); got != want {
		t.Fatalf("V1Digest() = %s, want %s", got, want)
	}
	if !strings.HasPrefix(want, "sha256:") || len(want) != len("sha256:")+64 {
		t.Fatalf("digest %q is not sha256: and 64 hex digits", want)
	}
}

func TestOneByteChangesDigest(t *testing.T) {
	for _, i := range []int{0, len(V1) / 2, len(V1) - 1} {
		b := bytes.Clone(V1)
		b[i] ^= 0x01
		if Digest(b) == V1Digest() {
			t.Fatalf("flipping byte %d left the digest unchanged", i)
		}
	}
	// One trailing byte more (e.g. a newline an editor adds) is another schema too.
	if Digest(append(bytes.Clone(V1), '\n')) == V1Digest() {
		t.Fatal("an added newline left the digest unchanged")
	}
}

// TestFileLayout keeps the file stable and readable: JSON, 2-space indents,
// LF line ends, one final newline, and a 2020-12 $schema.
func TestFileLayout(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(V1, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema = %v, want the 2020-12 metaschema", doc["$schema"])
	}
	if bytes.Contains(V1, []byte("\r")) || bytes.Contains(V1, []byte("\t")) {
		t.Fatal("the file has a CR or a tab")
	}
	if !bytes.HasSuffix(V1, []byte("}\n")) || bytes.HasSuffix(V1, []byte("\n\n")) {
		t.Fatal("the file must end with exactly one newline after the closing brace")
	}
	for n, line := range strings.Split(string(V1), "\n") {
		ind := len(line) - len(strings.TrimLeft(line, " "))
		if ind%2 != 0 {
			t.Fatalf("line %d: indent %d is not a multiple of 2", n+1, ind)
		}
		if strings.HasSuffix(line, " ") {
			t.Fatalf("line %d: trailing space", n+1)
		}
	}
}
