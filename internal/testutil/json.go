package testutil

import "encoding/json"

// JSON is v marshalled, for a test's inputs, comparisons and messages. A
// value that cannot be marshalled is a bug in the test: it panics.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("testutil.JSON: " + err.Error())
	}
	return string(b)
}
