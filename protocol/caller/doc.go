// Package caller is the caller side of the mu plugin protocol, version 1:
// it drives a plugin exactly as the spec (plugin-protocol-v1.md) says mu
// does. Tests, the contract suite and the demo use it. It is written on
// encoding/json and a byte-capped line reader, not on a JSON-RPC client, so
// that it sees every line in wire order and can judge each one.
//
// # Walkthrough
//
// Start a registered plugin. Start runs the registration checks
// (CheckRegistration), starts argv in its own process group with mu's
// environment minus the local-only variables (LocalOnly, PluginEnv), sends
// initialize and applies every load rule:
//
//	p, err := caller.Start(ctx, caller.Config{
//		Name: "box",                                   // registered name
//		Argv: []string{"/opt/mu/bin/mu-plugin-box"},   // registered argv
//		Need: []string{"link"},                        // seams the host needs
//		Recorded: recorded,                            // what mu plugin add stored, if any
//		Transcript: func(e caller.Event) { … },        // every line, both ways
//	})
//	var refusal *caller.LoadRefusal
//	if errors.As(err, &refusal) {
//		// exit 4: refusal.Rule names the rule (protocol.Rule* or caller.Rule*)
//	}
//	defer p.Stop()
//
// or let Run start, hand over and always stop:
//
//	err := caller.Run(ctx, cfg, func(p *caller.Plugin) error { … })
//
// Call a method. Params are marshalled once into a Request; its deadline is
// filled in at each send, so a retry or a resend writes byte-identical
// params but the deadline (and a new envelope id):
//
//	res, err := p.Exec(ctx, target, "uname -a", ".", 20*time.Second) // deadline = 20 s + 5 s grace
//	st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: target}) // a read: 10 s; st is a protocol.JobStatus
//	raw, err := p.Call(ctx, "host.status", protocol.Base{Target: target}, 0)
//
// Invoke is the typed call of any method: the method's declared value
// (protocol/methods.go) fixes its params type and its result type, so the
// result needs no type named at the call, and its reply checks run
// (below); InvokeWithin takes another budget.
//
//	r, _ := caller.NewRequest("job.stop", params) // an effect, to resend later
//	_, err = p.Send(ctx, r, 0)                    // one attempt, no retry
//
// Call retries a retryable error with the same params, at most three times
// (Config.Retries). Every error is one of:
//
//   - *RemoteError: the plugin's error reply (Kind, Message, Remedy, Code).
//   - *NotSentError (errors.Is ErrNotSent): never written, a definite
//     refusal. A ctx that ended before the write, a stopped or broken
//     plugin (errors.Is ErrStopped / ErrBroken), params the schema refuses.
//     The plugin is not stopped by it.
//   - *UnansweredError (errors.Is ErrUnanswered): written, no valid answer:
//     the deadline passed (ErrDeadline), ctx ended, the plugin stopped,
//     exited (ErrExited) or broke. A read is unknown; an effect's outcome is
//     unknown.
//   - *InvalidReplyError (errors.Is ErrInvalidReply and ErrBroken): the
//     answer broke the protocol.
//   - *MismatchError (errors.Is ErrMismatch and ErrUnanswered): from the
//     Invoke, a valid answer that does not answer its request (see
//     "Reply checks"). An unknown outcome or answer; the plugin is not
//     broken.
//
// Past the deadline, or when ctx ends after the write, the caller sends
// $/cancel {id} and begins the stop sequence; a reply that arrives then is
// ignored.
//
// Watch a channel: the reply, then exactly one notification.
//
//	w, err := p.Watch(ctx, protocol.WatchParams{Base: protocol.Base{Target: t}}, 0)
//	n, err := w.Wait(ctx) // n.Settled or n.Restarted; ErrWatchEnded if none will come
//	w.Cancel()            // $/cancel {watchId}; a notification crossing it is ignored
//
// One invocation's plugin, as mu holds it (started on first need, started
// again by the next call after a stop, refused for good after a violation
// or a load refusal, never started after Close):
//
//	s := caller.NewSession(cfg)
//	defer s.Close()
//	raw, err := s.Call(ctx, "job.status", params, 0)
//
// To check a plugin's exit on stdin EOF alone (what it sees when mu dies),
// CloseStdin closes stdin without $/cancel or shutdown and reports whether
// the group emptied by itself within the grace.
//
// # Raw and local plugins, for tests
//
// The wire-rule tests drive a plugin line by line: StartRaw starts it as
// Start does (the registration checks, its own process group) but sends
// nothing and judges nothing. Send writes exact lines, Recv hands back
// exactly the lines the plugin writes, and every stop is the caller's
// stop sequence:
//
//	r, err := caller.StartRaw(ctx, cfg)
//	defer r.Stop()
//	err = r.Send(ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize",…}`)
//	line, err := r.Recv(ctx) // the declaration, byte for byte
//
// Config.Local serves a protocol.Options in this process instead of
// running argv (as jrpc2's server.NewLocal), for tests that look inside
// a backend; Start and StartRaw drive it as any plugin, but it has no
// process group and a stop can only wait for Serve to return.
//
// # Reply checks and instances
//
// Invoke checks every reply against its request and the
// declaration (spec "Effects and replay"): a reply kind's JobStart result
// and JobLookup found carry the handle and the view, an at-start kind's
// carry baseline {runs: 0}; a Receipt echoes the asked msgId; ReadStates
// keeps the asked agents' readings only (others are ignored) and fails
// without one; a ChannelSend/Fresh/Command reply names the seam's channel
// and, when it carries a msgId, the one sent. A reply that fails is a
// *MismatchError: an unknown outcome or answer, never a success, and not
// a protocol violation (the line was valid; the plugin keeps running).
// CheckReply runs the same checks on raw JSON.
//
// A call that names a recorded job, host or effect goes only to the
// instance it was recorded under:
//
//	ctx = caller.ExpectInstance(ctx, rec.Instance)
//	_, err := caller.Invoke(ctx, p, protocol.MethodJobStop, params) // another instance: *NotSentError, cause *InstanceError (stop-changed)
//
// Effects' intents and their resolution after a crash are package
// replay's (protocol/caller/replay).
//
// # Inbound checks
//
// Every line from the plugin is checked: at most 1 MiB, valid UTF-8 on the
// raw bytes, one JSON object, exactly the JSON-RPC envelope keys (no
// unknown or repeated key), jsonrpc "2.0", the envelope against the schema
// (schemacheck.Message), a reply only to a pending id with exactly one of
// result (checked against that method's result schema) or error (the error
// object's schema and a valid data.kind, a remedy for human), no request,
// only watch/settled and watch/restarted (their params checked), each only
// for a watch whose reply came first, at most one per watch. A line that
// fails is a *Violation (Rule, Detail, Excerpt): it breaks the plugin for
// the invocation. The caller runs the stop sequence, every pending call is
// unanswered, and later calls fail not sent (Broken reports it).
//
// # The stop sequence
//
// Every stop is one sequence, whatever begins it (Stop, a deadline, a
// cancel, a violation, the leader's exit, stdout's end): $/cancel for each
// pending call, shutdown (a request with an id; its answer is ignored),
// close stdin, wait at most 5 s (Config.StopGrace) for the process group
// to empty, SIGKILL the group. The group is tracked, not the leader: when
// the leader exits, what is left of its group is killed at once. Stop
// returns a StopReport: Graceful tells whether the group emptied by itself
// (the contract suite's "stdin EOF → group empty within 5 s"), Killed how
// many processes were killed. Stop is safe to call twice and concurrently.
//
// # Secrets and stderr
//
// The caller logs nothing, and its errors never carry params. The
// Transcript hook is the only place params appear, raw, for canary checks.
// stderr is drained continuously and never parsed: Config.Stderr gets a
// copy, and FirstStderrLine keeps its first line cut to 400 characters.
package caller
