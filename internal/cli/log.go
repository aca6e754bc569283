package cli

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/mu-org/mu-plugins/internal/safefile"
)

// logFileError is a log file that cannot be opened: the plugin runs on,
// logging to stderr.
type logFileError struct{ err error }

func (e *logFileError) Error() string { return e.err.Error() }

// openLog is the plugin's logger: to the file when one is given (appended,
// mode 0600, its folder made 0700 when missing, each line with the
// process id, since every mu invocation starts a new plugin), else to
// stderr. levelFrom names what gave the level, for its error. A file that
// cannot be opened gives the stderr logger and a *logFileError.
func openLog(path, level, levelFrom string) (*slog.Logger, func(), error) {
	var lvl slog.Level
	switch {
	case level != "":
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", levelFrom, err)
		}
	case path != "":
		lvl = slog.LevelInfo
	default:
		lvl = slog.LevelWarn
	}
	stderr := func() *slog.Logger {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	}
	if path == "" {
		return stderr(), func() {}, nil
	}
	if strings.HasPrefix(path, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(h, path[2:])
		}
	}
	f, err := openLogFile(path)
	if err != nil {
		return stderr().With("pid", os.Getpid()), func() {}, &logFileError{err}
	}
	log := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: lvl})).With("pid", os.Getpid())
	return log, func() { f.Close() }, nil
}

// openLogFile appends to path, making its folder (0700) when missing.
func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return safefile.OpenLog(path)
}
