package protocol

// What the effects' keys are asked with (the spec's "Effects and replay"):
// host.lookup and job.lookup, which find what an acquire or a start made,
// and host.release and job.stop, which undo it.

// LookupParams is host.lookup's and job.lookup's params: the effect's Key,
// and Fence, which makes a none final (no acquire or start with that key
// may take effect after it).
type LookupParams struct {
	Base
	Key   string `json:"key"`
	Fence bool   `json:"fence"`
}

// LookupResult is a lookup's result: exactly one of Found (what the effect
// made, an F), Pending (it has not landed yet), None (it never did) or
// Unknown (why the plugin cannot tell).
type LookupResult[F any] struct {
	Found   *F     `json:"found,omitempty"`
	Pending bool   `json:"pending,omitempty"`
	None    bool   `json:"none,omitempty"`
	Unknown string `json:"unknown,omitempty"`
}

// HostLookupResult is host.lookup's result: found is acquire's result.
type HostLookupResult = LookupResult[AcquireResult]

// JobLookupResult is job.lookup's result: found is the job's handle, and
// its view and baseline when it has them.
type JobLookupResult = LookupResult[JobFound]

// KeyParams is host.release's and job.stop's params: the effect's Key.
type KeyParams struct {
	Base
	Key string `json:"key"`
}
