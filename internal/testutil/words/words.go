// Package words makes the strings tests use: a value as JSON (JSON), a
// POSIX sh word (ShQuote), a random name (RandHex).
package words

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// JSON is v marshalled, for a test's inputs, comparisons and messages. A
// value that cannot be marshalled is a bug in the test: it panics.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("words.JSON: " + err.Error())
	}
	return string(b)
}

// RandHex is n random bytes in hex: a name no other test run uses.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ShQuote quotes s as one POSIX sh word.
func ShQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
