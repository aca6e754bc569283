// Package protocol is the plugin side of mu's plugin protocol, version 1:
// the wire types, the one error model, the declaration and its load rules,
// and Serve, which runs a plugin on stdin and stdout.
//
// # A plugin in a few lines
//
// A backend declares its seams and hands Serve its method table, one
// handler per method, each registered through the method's declared value
// (methods.go), whose Serve decodes the params (strictly) into the
// method's params type and takes its result type:
//
//	err := protocol.Serve(ctx, protocol.Options{
//		Name: "box", Version: "0.1.0", Instance: "prod-eu",
//		Seams: protocol.Seams{Link: &protocol.LinkSeam{…}},
//		Handlers: protocol.NewMethods(
//			protocol.MethodLinkExec.Serve(b.exec), // func(ctx, *Call, ExecParams) (ExecResult, error)
//		),
//		Stop: b.stop, // stop what is still running
//	})
//
// ExampleServe is the same plugin, compiled and run against two pipes.
//
// Serve does everything the spec's Transport, Process, Timeouts and Secrets
// sections ask of every plugin, so no backend deals with them:
//
//   - one JSON object per line, at most 1 MiB each way (MaxLine); an
//     over-long or non-UTF-8 inbound line, and a batch (a JSON array), is
//     answered and skipped; an over-long reply is replaced by an error for
//     the same id; stdout is written through a queue, so a reader that stops
//     reading never holds the plugin;
//   - every call's params carry deadline and target, and timeoutMs at most
//     MaxTimeoutMs: checked before the handler runs (RunTimeout reads
//     timeoutMs for the backends);
//   - initialize is answered from the declaration, with the schema digest of
//     the embedded schemas/plugin-protocol-v1.json, and refused for a
//     protocol range without 1; a declaration that breaks a load rule stops
//     Serve before it reads a line (ValidateDeclaration);
//   - each call's context ends at its deadline, its $/cancel {id}, shutdown
//     or stdin EOF; Serve returns within 3 s of EOF or shutdown (a request
//     or a notification) even when a handler ignores its context, after
//     running Options.Stop; a request read after shutdown is refused;
//   - every error reply carries data.kind: ToWire maps errors in one place
//     (Errorf, HumanError, Wrap and NotStarted build them), jrpc2's own
//     errors included; a run (link.exec, link.fetch, link.push) cut after
//     its handler began is unknown-outcome unless its error is NotStarted;
//   - a reply always carries result (nil is null);
//   - Call.Watch sends a watch's one notification strictly after the
//     watch's reply, and never after $/cancel {watchId}.
//
// The caller side, what mu does, is package protocol/caller; schema
// validation is package protocol/schemacheck.
package protocol
