// Package testlog is what a test captures and logs: a writer into the
// test's log (LogWriter), a logger into it (Logger), a buffer safe for
// concurrent writers (LockedBuffer).
package testlog

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// LogWriter is a writer into t's log, each write one entry after prefix
// (a plugin's stderr, a logger's lines), its trailing newlines cut.
func LogWriter(t testing.TB, prefix string) io.Writer { return logWriter{t: t, prefix: prefix} }

type logWriter struct {
	t      testing.TB
	prefix string
}

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Logger is a logger at info level into t's log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(LogWriter(t, ""), &slog.HandlerOptions{Level: slog.LevelInfo}))
}
