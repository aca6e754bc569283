package protocol

// The method names as they appear on the wire, and which are effects.

// Method names, exactly as they appear on the wire.
const (
	MethodInitialize = "initialize"
	MethodShutdown   = "shutdown"
	MethodCancel     = "$/cancel"

	MethodHostAcquire = "host.acquire"
	MethodHostLookup  = "host.lookup"
	MethodHostStatus  = "host.status"
	MethodHostRelease = "host.release"

	MethodLinkExec       = "link.exec"
	MethodLinkFetch      = "link.fetch"
	MethodLinkPush       = "link.push"
	MethodLinkCheckSteps = "link.checkSteps"

	MethodJobStart      = "job.start"
	MethodJobLookup     = "job.lookup"
	MethodJobStatus     = "job.status"
	MethodJobStop       = "job.stop"
	MethodJobAttach     = "job.attach"
	MethodJobCheckSteps = "job.checkSteps"

	MethodChannelReadStates = "channel.readStates"
	MethodChannelBaseline   = "channel.baseline"
	MethodChannelReceipt    = "channel.receipt"
	MethodChannelLastRun    = "channel.lastRun"
	MethodChannelWatch      = "channel.watch"
	MethodChannelSend       = "channel.send"
	MethodChannelFresh      = "channel.fresh"
	MethodChannelCommand    = "channel.command"
	MethodChannelInterrupt  = "channel.interrupt"
	MethodChannelAbort      = "channel.abort"
	MethodChannelAnswer     = "channel.answer"

	// The only two notifications a plugin may send.
	NotifyWatchSettled   = "watch/settled"
	NotifyWatchRestarted = "watch/restarted"
)

// Effects lists the methods the spec calls effects: mu journals their intent
// before sending them, and resolves them after a crash.
var Effects = map[string]bool{
	MethodHostAcquire: true, MethodHostRelease: true,
	MethodJobStart: true, MethodJobStop: true,
	MethodChannelSend: true, MethodChannelFresh: true, MethodChannelCommand: true,
	MethodChannelInterrupt: true, MethodChannelAbort: true, MethodChannelAnswer: true,
}
