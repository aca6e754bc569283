package replay

import (
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkIntentWriteDelete is what the journal adds to every effect: an
// intent written atomically (temp file, fsync, rename, fsync of the
// directory) and deleted on the definite answer.
func BenchmarkIntentWriteDelete(b *testing.B) {
	j, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"deadline":0,"target":{"host":{"name":"pool"}},"key":"k1","params":{}}`)
	in := &Intent{ID: intentID("fake", "fake", protocol.MethodHostAcquire.Name, "k1"), Method: protocol.MethodHostAcquire.Name,
		Key: "k1", Params: raw, SHA256: sha(raw), Plugin: "fake", Instance: "fake", Pgid: 1, WriterPID: 1}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := j.write(in, true); err != nil {
			b.Fatal(err)
		}
		if err := j.Delete(in.ID); err != nil {
			b.Fatal(err)
		}
	}
}
