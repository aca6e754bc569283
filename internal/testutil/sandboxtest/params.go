package sandboxtest

import "time"

// Every call's params, as maps: the tests send what mu would, and what it
// would not.

// Deadline is a call's deadline: three minutes on (a pod's start takes
// the longest).
func Deadline() int64 { return time.Now().Add(3 * time.Minute).UnixMilli() }

// HostTarget is the target of host "box", with its handle when given.
func HostTarget(handle string) map[string]any {
	h := map[string]any{"name": "box"}
	if handle != "" {
		h["handle"] = handle
	}
	return map[string]any{"host": h}
}

// AcquireParams are host.acquire's for key with params (nil: none).
func AcquireParams(key string, params map[string]string) map[string]any {
	if params == nil {
		params = map[string]string{}
	}
	return map[string]any{"deadline": Deadline(), "target": HostTarget(""), "key": key, "params": params}
}

// KeyParams are host.release's for key.
func KeyParams(key string) map[string]any {
	return map[string]any{"deadline": Deadline(), "target": HostTarget(""), "key": key}
}

// LookupParams are host.lookup's for key, fenced or not.
func LookupParams(key string, fence bool) map[string]any {
	return map[string]any{"deadline": Deadline(), "target": HostTarget(""), "key": key, "fence": fence}
}

// StatusParams are host.status's (or any call's with only a target) for
// handle.
func StatusParams(handle string) map[string]any {
	return map[string]any{"deadline": Deadline(), "target": HostTarget(handle)}
}

// ExecParams are link.exec's: script in cwd on handle, its deadline 30 s
// past its timeout.
func ExecParams(handle, script, cwd string, timeoutMs int64) map[string]any {
	return map[string]any{"deadline": time.Now().Add(time.Duration(timeoutMs)*time.Millisecond + 30*time.Second).UnixMilli(),
		"target": HostTarget(handle), "script": script, "cwd": cwd, "timeoutMs": timeoutMs}
}

// PushParams are link.push's: rev of local into remote on handle.
func PushParams(handle, local, remote, rev string) map[string]any {
	return map[string]any{"deadline": Deadline(), "target": HostTarget(handle), "localRepo": local, "remoteRepo": remote, "rev": rev, "timeoutMs": 60_000}
}

// FetchParams are link.fetch's: remote's HEAD on handle into local.
func FetchParams(handle, local, remote string) map[string]any {
	return map[string]any{"deadline": Deadline(), "target": HostTarget(handle), "localRepo": local, "remoteCwd": remote, "timeoutMs": 60_000}
}
