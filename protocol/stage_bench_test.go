package protocol

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// The plugin side's stages of a no-op call, each alone, in process: what
// each costs in CPU (the caller's BenchmarkCallRoundTrip measures the
// whole round trip across the two processes, and the plugin's CPU a call).

var (
	benchReply   = []byte(`{"jsonrpc":"2.0","id":2,"result":{"state":"running"}}`)
	benchRequest = `{"jsonrpc":"2.0","id":2,"method":"job.status","params":{"deadline":0,"target":{"host":{"name":"h"}}}}`
)

// BenchmarkPeekReply: the line channel's look at each outgoing message, as
// jrpc2 writes it (fast) and through the JSON decoder (the fallback).
func BenchmarkPeekReply(b *testing.B) {
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if id, f := peekReply(benchReply); id != "2" || f != "result" {
				b.Fatal(id, f)
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if id, f := peekDecode(benchReply); id != "2" || f != "result" {
				b.Fatal(id, f)
			}
		}
	})
}

// BenchmarkReadBase: the deadline and target every call's params carry,
// read before its handler runs.
func BenchmarkReadBase(b *testing.B) {
	params := json.RawMessage(`{"deadline":0,"target":{"host":{"name":"h"}},"key":"k"}`)
	b.ReportAllocs()
	for range b.N {
		if _, err := readBase("job.status", params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLineChannelRecv: one request line read and looked at (the
// envelope, UTF-8, shutdown) before jrpc2 parses it.
func BenchmarkLineChannelRecv(b *testing.B) {
	in := strings.NewReader(strings.Repeat(benchRequest+"\n", b.N))
	c := newLineChannel(in, nopCloser{io.Discard})
	defer c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Recv(); err != nil {
			b.Fatal(err)
		}
		c.mu.Lock()
		clear(c.methods)
		c.mu.Unlock()
	}
}

// BenchmarkLineChannelSend: one reply handed to the line channel until it
// is written (the peek, the queue and its writer goroutine's wake).
func BenchmarkLineChannelSend(b *testing.B) {
	w := &signalWriter{wrote: make(chan struct{}, 1)}
	c := newLineChannel(strings.NewReader(""), w)
	defer c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.Send(benchReply); err != nil {
			b.Fatal(err)
		}
		<-w.wrote
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// signalWriter signals each write.
type signalWriter struct {
	bytes.Buffer
	wrote chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.wrote <- struct{}{}
	return len(p), nil
}

func (w *signalWriter) Close() error { return nil }
