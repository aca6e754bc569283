package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// Every method refuses a call recorded under another instance, permanent,
// before it asks the Engine anything: the backend here has no Engine
// client at all, so a method that reached for one would panic.
func TestEveryMethodRefusesAnotherInstance(t *testing.T) {
	b, err := New(Config{Instance: "mine", Self: "/bin/true"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.reached.Store(true) // the Engine "answered": no ping
	params := json.RawMessage(`{"deadline":0,"target":{"host":{"name":"box","handle":"c0ffee","instance":"theirs"},"job":{"kind":"docker","key":"k"}}}`)
	methods := b.Handlers()
	if len(methods) != 25 {
		t.Fatalf("%d methods, want the 25 of host, link, job and channel", len(methods))
	}
	for m, h := range methods {
		c := &protocol.Call{Method: m, Params: params}
		if err := json.Unmarshal(params, &c.Base); err != nil {
			t.Fatal(err)
		}
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("it went on to the Engine: %v", r)
				}
			}()
			_, err = h(context.Background(), c)
			return err
		}()
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Kind != protocol.Permanent || !strings.Contains(pe.Message, `is not this plugin's instance "mine"`) {
			t.Errorf("%s: %v, want the permanent refusal of instance \"theirs\"", m, err)
		}
	}
}
