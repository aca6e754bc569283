package protocol

import (
	"encoding/json"
	"testing"
)

// Nil lists and maps go out as [] and {}, never null; embedded Base fields
// survive the custom marshalling.
func TestNilCollectionsNotNull(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{LinkSeam{Slots: "self"}, `{"fetch":false,"slots":"self","remoteOnTimeout":"","quiescence":"","maxScriptBytes":0,"checks":[]}`},
		{Honours{}, `{"command":false,"env":false,"sockets":false,"roles":[]}`},
		{View{Command: "c"}, `{"command":"c","env":{}}`},
		{AnswerResult{Ack: AckConfirmed}, `{"keys":[],"ack":"confirmed"}`},
		{Steps(nil), `[]`},
		{AcquireParams{Base: Base{Deadline: 5, Target: Target{Host: HostRef{Name: "h"}}}, Key: "k"},
			`{"deadline":5,"target":{"host":{"name":"h"}},"key":"k","params":{}}`},
		{&JobSeam{Kind: "k"}, `{"kind":"k","view":"","handle":"","start":{"lookup":false,"fenceKey":false},"channel":"","checks":[]}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%T: got %s (%v)\nwant %s", c.v, b, err, c.want)
		}
	}
}
