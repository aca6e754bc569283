package contract

import (
	"encoding/json"
	"errors"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// hostChecks are the host seam's rules: acquire, lookup and its fence,
// status, idempotent release, and an exact dedupe.
func hostChecks() []check {
	need := []string{seamHost}
	return []check{
		{name: "host/acquire", needs: need, run: checkHostAcquire},
		{name: "host/lookup", needs: need, run: checkHostLookup},
		{name: "host/fence", needs: need, run: checkHostFence},
		{name: "host/status", needs: need, run: checkHostStatus},
		{name: "host/release", needs: need, run: checkHostRelease},
		{name: "host/dedupe", needs: need, run: checkHostDedupe},
	}
}

// checkHostAcquire (host/acquire): `host.acquire` answers a handle.
func checkHostAcquire(t *T) {
	p := t.Start()
	h := t.acquire(p, t.Unique("host"))
	t.Check(h.res.Handle != "", "host.acquire returned an empty handle")
}

// checkHostLookup (host/lookup): `host.lookup` of an acquired key answers
// `found` with its handle; of a key never acquired, `none` (SKIP without
// `lookup`).
func checkHostLookup(t *T) {
	if !t.Decl().Seams.Host.Acquire.Lookup {
		t.Skipf("host.acquire declares no lookup")
	}
	p := t.Start()
	h := t.acquire(p, t.Unique("host"))
	l := t.hostLookup(p, h.key, false)
	if l.Found == nil {
		t.Failf("host.lookup of an acquired key did not answer found: %+v", l)
	}
	t.Check(l.Found.Handle == h.res.Handle, "host.lookup found handle %q, host.acquire gave %q", l.Found.Handle, h.res.Handle)
	n := t.hostLookup(p, t.Unique("never-acquired"), false)
	t.Check(n.None, "host.lookup of a key never acquired did not answer none: %+v", n)
}

// checkHostFence (host/fence): after a fenced lookup answered `none`, an
// acquire of that key takes no effect (an error), and the key still reads
// `none` (SKIP without `fenceKey`).
func checkHostFence(t *T) {
	if !t.Decl().Seams.Host.Acquire.FenceKey {
		t.Skipf("host.acquire declares no fenceKey")
	}
	p := t.Start()
	key := t.Unique("fenced")
	t.releaseLater(p, key) // whatever the fence left on the backend
	l := t.hostLookup(p, key, true)
	if !l.None {
		t.Failf("a fenced host.lookup of a key never acquired did not answer none: %+v", l)
	}
	res, err := caller.Invoke(t.Ctx(), p, protocol.MethodHostAcquire, t.acquireParams(key))
	if err == nil {
		t.releaseLater(p, key)
		t.Failf("host.acquire of a key a fenced lookup answered none took effect (handle %q)", res.Handle)
	}
	var re *caller.RemoteError
	if !errors.As(err, &re) {
		t.Failf("host.acquire of a fenced key: %v", err)
	}
	l = t.hostLookup(p, key, true)
	t.Check(l.None, "after the refused acquire, host.lookup of the fenced key answered %+v, not none", l)
}

// checkHostStatus (host/status): a host just acquired reads `up`.
func checkHostStatus(t *T) {
	p := t.Start()
	h := t.acquire(p, t.Unique("host"))
	st, err := caller.Invoke(t.Ctx(), p, protocol.MethodHostStatus, protocol.Base{Target: h.target(t)})
	if err != nil {
		t.Failf("host.status: %v", err)
	}
	t.Check(st.State == protocol.HostUp, "host.status of a host just acquired is %q, not up", st.State)
}

// checkHostRelease (host/release): `host.release` answers `null`, twice
// (idempotent).
func checkHostRelease(t *T) {
	p := t.Start()
	key := t.Unique("host")
	h := t.acquire(p, key)
	for i := 1; i <= 2; i++ {
		raw, err := p.Call(t.Ctx(), protocol.MethodHostRelease.Name, protocol.KeyParams{Base: protocol.Base{Target: h.target(t)}, Key: key}, 0)
		if err != nil {
			t.Failf("host.release (time %d): %v", i, err)
		}
		t.Check(string(raw) == "null", "host.release answered %s, not null", raw)
	}
}

// checkHostDedupe (host/dedupe): a repeat of `host.acquire` with identical
// params inside the window answers the first result, and lookup finds the
// one host (SKIP without exact `dedupe`).
func checkHostDedupe(t *T) {
	caps := t.Decl().Seams.Host.Acquire
	if caps.Dedupe == nil || !caps.Dedupe.Exact {
		t.Skipf("host.acquire declares no exact dedupe")
	}
	p := t.Start()
	key := t.Unique("host")
	first, second := t.sendTwice(p, protocol.MethodHostAcquire.Name, t.acquireParams(key))
	t.releaseLater(p, key)
	t.Check(sameJSON(first, second), "a repeat of host.acquire inside the dedupe window answered %s; the first answer was %s", second, first)
	if caps.Lookup {
		var a protocol.AcquireResult
		_ = json.Unmarshal(first, &a)
		l := t.hostLookup(p, key, false)
		t.Check(l.Found != nil && l.Found.Handle == a.Handle, "after the repeat, host.lookup answered %+v, want found %q", l, a.Handle)
	}
}

// acquired is a host a check acquired.
type acquired struct {
	key string
	res protocol.AcquireResult
}

func (h acquired) target(t *T) protocol.Target {
	return protocol.Target{Host: protocol.HostRef{Name: t.s.opts.Host, Handle: h.res.Handle, Instance: t.Decl().Instance}}
}

func (t *T) acquireParams(key string) protocol.AcquireParams {
	return protocol.AcquireParams{Base: protocol.Base{Target: t.hostTarget()}, Key: key, Params: t.params()}
}

// acquire acquires a host, released when the check ends.
func (t *T) acquire(p *caller.Plugin, key string) acquired {
	res, err := caller.Invoke(t.Ctx(), p, protocol.MethodHostAcquire, t.acquireParams(key))
	if err != nil {
		t.Failf("host.acquire: %v", err)
	}
	t.releaseLater(p, key)
	return acquired{key: key, res: res}
}

func (t *T) releaseLater(p *caller.Plugin, key string) {
	t.Cleanup(func() {
		_, _ = p.Call(t.Ctx(), protocol.MethodHostRelease.Name, protocol.KeyParams{Base: protocol.Base{Target: t.hostTarget()}, Key: key}, 0)
	})
}

func (t *T) hostLookup(p *caller.Plugin, key string, fence bool) protocol.HostLookupResult {
	l, err := caller.Invoke(t.Ctx(), p, protocol.MethodHostLookup, protocol.LookupParams{Base: protocol.Base{Target: t.hostTarget()}, Key: key, Fence: fence})
	if err != nil {
		t.Failf("host.lookup: %v", err)
	}
	return l
}

// sendTwice sends one request twice (identical params, a new deadline and
// id: mu's resend) and returns both results.
func (t *T) sendTwice(p *caller.Plugin, method string, params any) (json.RawMessage, json.RawMessage) {
	r, err := caller.NewRequest(method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	first, err := p.Send(t.Ctx(), r, 0)
	if err != nil {
		t.Failf("%s: %v", method, err)
	}
	second, err := p.Send(t.Ctx(), r, 0)
	if err != nil {
		t.Failf("%s repeated inside the dedupe window: %v", method, err)
	}
	return first, second
}

func sameJSON(a, b []byte) bool {
	ok, err := caller.SameJSON(a, b)
	return err == nil && ok
}
