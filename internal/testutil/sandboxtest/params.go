package sandboxtest

import "github.com/mu-org/mu-plugins/protocol"

// Every call's params, as their methods take them (the caller sets each
// call's deadline at its send, from the plugin's budget).

// HostTarget is the target of host "box", with its handle when given.
func HostTarget(handle string) protocol.Target {
	return protocol.Target{Host: protocol.HostRef{Name: "box", Handle: handle}}
}

// AcquireParams are host.acquire's for key with params (nil: none).
func AcquireParams(key string, params map[string]string) protocol.AcquireParams {
	if params == nil {
		params = map[string]string{}
	}
	return protocol.AcquireParams{Base: protocol.Base{Target: HostTarget("")}, Key: key, Params: params}
}

// KeyParams are host.release's for key.
func KeyParams(key string) protocol.KeyParams {
	return protocol.KeyParams{Base: protocol.Base{Target: HostTarget("")}, Key: key}
}

// LookupParams are host.lookup's for key, fenced or not.
func LookupParams(key string, fence bool) protocol.LookupParams {
	return protocol.LookupParams{Base: protocol.Base{Target: HostTarget("")}, Key: key, Fence: fence}
}

// StatusParams are host.status's (or any call's with only a target) for
// handle.
func StatusParams(handle string) protocol.Base {
	return protocol.Base{Target: HostTarget(handle)}
}

// ExecParams are link.exec's: script in cwd on handle.
func ExecParams(handle, script, cwd string, timeoutMs int64) protocol.ExecParams {
	return protocol.ExecParams{Base: StatusParams(handle), Script: script, Cwd: cwd, TimeoutMs: timeoutMs}
}

// PushParams are link.push's: rev of local into remote on handle.
func PushParams(handle, local, remote, rev string) protocol.PushParams {
	return protocol.PushParams{Base: StatusParams(handle), LocalRepo: local, RemoteRepo: remote, Rev: rev, TimeoutMs: 60_000}
}

// FetchParams are link.fetch's: remote's HEAD on handle into local.
func FetchParams(handle, local, remote string) protocol.FetchParams {
	return protocol.FetchParams{Base: StatusParams(handle), LocalRepo: local, RemoteCwd: remote, TimeoutMs: 60_000}
}
