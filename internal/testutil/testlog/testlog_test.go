package testlog

import (
	"strings"
	"sync"
	"testing"
)

func TestLockedBuffer(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if b.Len() != 1600 || strings.Count(b.String(), "ab") != 800 {
		t.Fatalf("lost writes: %d bytes", b.Len())
	}
}

// LogWriter logs each write whole.
func TestLogWriter(t *testing.T) {
	if n, err := LogWriter(t, "p: ").Write([]byte("line\n")); n != 5 || err != nil {
		t.Fatalf("LogWriter.Write: %d %v", n, err)
	}
}
