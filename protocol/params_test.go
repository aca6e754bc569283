package protocol

import (
	"reflect"
	"testing"
)

// TestReadBaseCarriesTheWholeTarget: readBase answers the target as the
// params carry it (agent, job and host), and refuses one without a host.
func TestReadBaseCarriesTheWholeTarget(t *testing.T) {
	params := []byte(`{"deadline":5,"timeoutMs":7,"target":{"agent":{"workstream":"ws","name":"a","incarnation":3},` +
		`"job":{"kind":"tmux","key":"k","handle":"h"},"host":{"name":"box","handle":"c1","instance":"i"}},"script":"true"}`)
	b, err := readBase("link.exec", params)
	if err != nil {
		t.Fatal(err)
	}
	want := Base{Deadline: 5, Target: Target{
		Agent: &AgentRef{Workstream: "ws", Name: "a", Incarnation: 3},
		Job:   &JobRef{Kind: "tmux", Key: "k", Handle: "h"},
		Host:  HostRef{Name: "box", Handle: "c1", Instance: "i"},
	}}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("readBase: %+v\nwant %+v", b, want)
	}
	if _, err := readBase("link.exec", []byte(`{"deadline":5,"target":{"job":{"kind":"tmux","key":"k"}}}`)); err == nil {
		t.Fatal("readBase accepted a target without a host")
	}
}
