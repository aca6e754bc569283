// Package replay is mu's "Effects and replay" (plugin-protocol-v1.md) on
// the caller side: a journal of effect intents and the resolver that, after
// a crash, a timeout or an unknown-outcome, finds out whether the effect
// happened instead of doing it twice.
//
// # Writing
//
// Before an effect (host.acquire, host.release, job.start, job.stop and
// the deliveries channel.send, fresh, command, interrupt, abort, answer)
// its intent is written: the key, the exact params and their sha256, the
// plugin's name, instance and process group, the writer's pid. One JSON
// file per intent, written atomically (temp file, fsync, rename, fsync of
// the directory). A definite answer deletes it:
//
//	j, _ := replay.Open(dir)
//	res, in, err := j.Effect(ctx, p, protocol.MethodHostAcquire.Name, "", params)
//	// err == nil: done, the intent is gone. err != nil and in != nil: the
//	// outcome is unknown and the intent stays, for Resolve.
//
// A definite answer is a valid result that answers its request
// (caller.CheckReply), an error reply other than unknown-outcome (nothing
// happened), or a call never written. Everything else (unanswered, an
// invalid reply, unknown-outcome, a *caller.MismatchError) keeps it.
//
// # Resolving
//
//	j, _ := replay.Open(dir)          // the next invocation (the writer's has ended)
//	defer j.Close()
//	p, err := session.Plugin(ctx)     // the plugin as this invocation holds it
//	out, err := j.Resolve(ctx, p, in) // in: from Effect, or j.List() after a crash
//	switch out.State {
//	case replay.Found:      // it happened: out.Result is its result
//	case replay.Done:       // a stop or release was reissued and answered
//	case replay.None:       // proven not to have happened, and it never will
//	case replay.Unresolved: // out.Reason says why; the intent stays
//	}
//
// A plugin that crashed or was stopped mid-effect counts as gone only once
// its process group is empty: resolve after its Done() is closed, or a
// none reads ReasonPluginAlive.
//
// The rules, in order:
//
//   - the intent is locked (flock) while an Effect sends it or a Resolve
//     resolves it: a second resolver is refused (ReasonBusy), and so is one
//     while the invocation that wrote it still lives (ReasonWriterAlive):
//     a Journal is one invocation of mu, from Open to Close (or its
//     process's death), holding a lock that Resolve tests; the invocation
//     that wrote an intent never resolves it itself ("the next verb on the
//     subject resolves it"), and j.Next() plays mu's next command in place;
//   - under another plugin or instance nothing is asked or resent
//     (ReasonStopChanged): every call also carries caller.ExpectInstance;
//   - job.stop and host.release are reissued with identical params;
//   - job.start and host.acquire: lookup(key), fenced when the declaration
//     has fenceKey; else, with exact dedupe, the identical params again while
//     the repeat lands inside the window. found is Found (checked as the
//     start's reply: a reply kind's handle and view, an at-start kind's
//     baseline runs 0). none is None only once the writer and the plugin
//     process it called are proven gone (the recorded process group holds
//     no process) and either the lookup was fenced or inFlightMs has passed
//     since the latest moment the plugin could have acted on it (the
//     call's deadline plus one grace); a handle "file" kind never acts on
//     none (ReasonFileHandle);
//   - a delivery: channel.receipt when receipt is exact (only accepted
//     resolves), else, with exact dedupe, the identical params again, only
//     while no newer delivery to the agent was written (ReasonNewerDelivery).
//     A delivery without a msgId (command, abort, answer) can be neither
//     asked nor deduped: it stays unresolved (ReasonNoMsgID).
package replay
