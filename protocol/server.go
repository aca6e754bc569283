package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/creachadair/jrpc2"

	"github.com/mu-org/mu-plugins/schemas"
)

// Version is the protocol version this package speaks.
const Version = 1

// Grace is the spec's one grace: 5 s.
const Grace = 5 * time.Second

// exitBudget bounds how long Serve takes to return once it stops (after
// shutdown, or eofDrain after stdin EOF): with the drain, under the spec's
// 5 s, with room for the process to exit.
const exitBudget = 3 * time.Second

// Options configure Serve.
type Options struct {
	Name     string // the plugin's name: its binary is mu-plugin-<Name>
	Version  string
	Instance string
	Seams    Seams
	Handlers Methods

	// Stop runs once as the plugin ends (stdin EOF, shutdown or ctx), after
	// every call's context was cancelled: it must stop whatever the backend
	// still runs. Its context ends within the 5 s budget.
	Stop func(ctx context.Context)

	In io.Reader // default os.Stdin
	// Out (default os.Stdout) gets each message as one Write of its whole
	// line, newline included, from one goroutine; Serve closes it at exit.
	Out    io.WriteCloser
	Logger *slog.Logger // default: discard
}

// Declaration is the handshake result the options declare.
func (o *Options) Declaration() InitializeResult {
	return InitializeResult{
		Protocol: Version,
		Plugin:   PluginInfo{Name: o.Name, Version: o.Version},
		Instance: o.Instance,
		Schema:   schemas.V1Digest(),
		Seams:    o.Seams,
	}
}

// Serve runs a plugin on opts.In and opts.Out until stdin EOF, shutdown or
// ctx ends, and returns within 5 s of any of them. It refuses to start when
// the declaration breaks a load rule.
func Serve(ctx context.Context, opts Options) error {
	decl := opts.Declaration()
	if err := ValidateDeclaration(decl); err != nil {
		return fmt.Errorf("mu-plugin-%s: invalid declaration: %w", opts.Name, err)
	}
	if opts.In == nil {
		opts.In = os.Stdin
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := newServer(ctx, opts, decl)
	return s.run()
}

type server struct {
	opts Options
	decl InitializeResult
	log  *slog.Logger
	ch   *lineChannel
	rpc  *jrpc2.Server

	base     context.Context // every handler's context derives from it
	stopAll  context.CancelFunc
	inflight sync.WaitGroup

	mu          sync.Mutex
	initialized bool
	shutting    bool
	watches     map[string]context.CancelFunc
	eof         chan struct{}
	eofOnce     sync.Once
	stopOnce    sync.Once
}

func newServer(ctx context.Context, opts Options, decl InitializeResult) *server {
	base, cancel := context.WithCancel(ctx)
	s := &server{
		opts:    opts,
		decl:    decl,
		log:     opts.Logger,
		base:    base,
		stopAll: cancel,
		watches: make(map[string]context.CancelFunc),
		eof:     make(chan struct{}),
	}
	s.ch = newLineChannel(eofReader{opts.In, s.markEOF}, opts.Out)
	s.rpc = jrpc2.NewServer(assigner{s}, &jrpc2.ServerOptions{
		AllowPush:      true,
		DisableBuiltin: true,
		Concurrency:    256,
		NewContext:     func() context.Context { return s.base },
	})
	return s
}

// eofReader reports the end of stdin (or a read error) once.
type eofReader struct {
	r     io.Reader
	onEOF func()
}

func (e eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.onEOF()
	}
	return n, err
}

func (s *server) markEOF() { s.eofOnce.Do(func() { close(s.eof) }) }

func (s *server) run() error {
	s.rpc.Start(s.ch)
	done := make(chan struct{})
	go func() { s.rpc.WaitStatus(); close(done) }()
	select {
	case <-done:
	case <-s.eof:
		// Calls already read get eofDrain to answer before they are cancelled.
		select {
		case <-s.ch.drained:
		case <-done:
		case <-time.After(eofDrain + 100*time.Millisecond):
		}
	case <-s.base.Done():
	}
	s.log.Debug("stopping")
	deadline := time.Now().Add(exitBudget)
	s.stop()
	stopCtx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		if s.opts.Stop != nil {
			s.opts.Stop(stopCtx)
		}
		s.inflight.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-stopCtx.Done():
		s.log.Warn("calls still running at exit; leaving them")
	}
	s.rpc.Stop()
	// What is queued for stdout goes out, unless nobody reads it: a blocked
	// write does not hold the exit.
	select {
	case <-s.ch.flushed():
	case <-stopCtx.Done():
		s.log.Warn("stdout is not being read; leaving the unwritten messages")
	}
	return nil
}

// stop cancels every call and watch; safe to call twice.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.shutting = true
		s.mu.Unlock()
		s.stopAll()
	})
}

type assigner struct{ s *server }

func (a assigner) Assign(_ context.Context, method string) jrpc2.Handler {
	return a.s.handler(method)
}

func (s *server) handler(method string) jrpc2.Handler {
	return func(ctx context.Context, req *jrpc2.Request) (any, error) {
		if req.IsNotification() {
			switch method {
			case MethodCancel.Name:
				s.cancel(req)
			case MethodShutdown.Name: // the spec leaves its form open: stop as for the request
				s.stop()
			}
			return nil, nil // other notifications are ignored
		}
		s.inflight.Add(1)
		defer s.inflight.Done()
		start := time.Now()
		var tgt Target
		v, err := s.serveCall(ctx, method, req, &tgt)
		attrs := []any{"method", method, "id", req.ID(), "target", targetText(tgt), "ms", time.Since(start).Milliseconds()}
		if err != nil {
			w := ToWire(err, method)
			var d ErrorData
			_ = json.Unmarshal(w.Data, &d)
			attrs = append(attrs, "outcome", "error", "kind", string(d.Kind), "error", w.Message)
			if d.Remedy != "" {
				attrs = append(attrs, "remedy", d.Remedy)
			}
			// The error as mu gets it: no more than the reply says, so
			// nothing a reply may not hold (no env value, no secret).
			s.log.Info("call", attrs...)
			return nil, w
		}
		s.log.Info("call", append(attrs, "outcome", "ok")...)
		return v, nil
	}
}

// targetText is a call's target for the log: the names mu gave it.
func targetText(t Target) string {
	parts := []string{}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("host", t.Host.Name)
	add("handle", t.Host.Handle)
	add("instance", t.Host.Instance)
	if t.Agent != nil {
		add("agent", t.Agent.Key())
	}
	if t.Job != nil {
		add("job", t.Job.Key)
		add("jobHandle", t.Job.Handle)
	}
	return strings.Join(parts, " ")
}

// serveCall runs one call; tgt gets its target once read.
func (s *server) serveCall(ctx context.Context, method string, req *jrpc2.Request, tgt *Target) (any, error) {
	s.mu.Lock()
	initialized, shutting := s.initialized, s.shutting
	s.mu.Unlock()
	switch {
	case method == MethodInitialize.Name:
		return s.initialize(req)
	case shutting:
		return nil, NotStarted(nil, "the plugin is shutting down: "+method+" was not run")
	case !initialized:
		return nil, Errorf(Permanent, "%s before initialize", method)
	case method == MethodShutdown.Name:
		s.ch.onReply(req.ID(), func(bool) { s.stop() })
		return nil, nil
	case method == MethodCancel.Name:
		s.cancel(req)
		return nil, nil
	}
	h, ok := s.opts.Handlers[method]
	if !ok {
		return nil, &Error{Kind: Permanent, Message: "method not found: " + method, Code: jrpc2.MethodNotFound}
	}
	call := &Call{Method: method, id: req.ID(), srv: s}
	if req.HasParams() {
		call.Params = json.RawMessage(req.ParamString())
	}
	base, err := readBase(method, call.Params)
	if err != nil {
		return nil, err
	}
	call.Base, *tgt = base, base.Target
	if call.Base.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.UnixMilli(call.Base.Deadline))
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		// Its deadline had passed, or a $/cancel came, before it began.
		return nil, NotStarted(err, method+": the call ended before it began; nothing was run")
	}
	v, err := h(ctx, call)
	if err != nil && ctx.Err() != nil {
		err = &cutError{err: err, cause: ctx.Err()}
	}
	return v, err
}

// cutError is a handler's error when its call's context ended first: it
// adds the context's error, which ToWire reads (the cut-run rule).
type cutError struct{ err, cause error }

func (e *cutError) Error() string   { return e.err.Error() }
func (e *cutError) Unwrap() []error { return []error{e.err, e.cause} }

func (s *server) initialize(req *jrpc2.Request) (any, error) {
	var p InitializeParams
	if err := req.UnmarshalParams(&p); err != nil {
		return nil, Errorf(Permanent, "initialize: invalid params: %v", err)
	}
	if p.Protocol.Min > Version || p.Protocol.Max < Version {
		return nil, Errorf(Permanent, "initialize: mu offers protocol %d..%d; this plugin speaks %d", p.Protocol.Min, p.Protocol.Max, Version)
	}
	s.mu.Lock()
	s.initialized = true
	s.mu.Unlock()
	return s.decl, nil
}

// cancel serves $/cancel: {id} cancels a call, {watchId} ends a watch.
func (s *server) cancel(req *jrpc2.Request) {
	var p CancelParams
	if err := json.Unmarshal([]byte(req.ParamString()), &p); err != nil {
		return
	}
	if len(p.ID) > 0 {
		s.rpc.CancelRequest(compactID(p.ID))
	}
	if p.WatchID != "" {
		s.mu.Lock()
		cancel := s.watches[p.WatchID]
		delete(s.watches, p.WatchID)
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
}

func (s *server) watch(callID, watchID string, run func(ctx context.Context) (string, any)) {
	ctx, cancel := context.WithCancel(s.base)
	s.mu.Lock()
	s.watches[watchID] = cancel
	s.mu.Unlock()
	s.ch.onReply(callID, func(ok bool) {
		defer func() {
			s.mu.Lock()
			delete(s.watches, watchID)
			s.mu.Unlock()
			cancel()
		}()
		if !ok {
			return
		}
		method, params := run(ctx)
		if method == "" || ctx.Err() != nil {
			return
		}
		if method != NotifyWatchSettled && method != NotifyWatchRestarted {
			s.log.Error("watch produced a notification the protocol does not allow", "method", method)
			return
		}
		if err := s.rpc.Notify(ctx, method, params); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("watch notification not sent", "error", err)
		}
	})
}
