// Package safefile reads the configuration files a plugin is pointed at
// (a Docker config or context, a kubeconfig, the fake's state, a log):
// regular files only, bounded in size. A FIFO, a device such as
// /dev/zero or a huge file where a configuration belongs is refused at
// once, never waited on or read without end, so the plugin answers
// initialize whatever the configuration holds (issue 24).
package safefile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Size bounds: a configuration file, and the fake's state.
const (
	MaxConfig = 16 << 20
	MaxState  = 256 << 20
)

// Read reads the regular file at path (a symlink is followed), at most max
// bytes. A path that does not exist gives an error wrapping
// fs.ErrNotExist, as os.ReadFile's.
func Read(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: a FIFO opens at once, without waiting for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, tooLarge(path, max)
	}
	return b, nil
}

// Check is Read's checks on a file another library reads (a kubeconfig
// client-go loads): a regular file (a symlink's target) of at most max
// bytes. A path that does not exist is no error.
func Check(path string, max int64) error {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return check(path, fi, max)
}

func check(path string, fi os.FileInfo, max int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s): name a file", path, fi.Mode().Type())
	}
	if fi.Size() > max {
		return tooLarge(path, max)
	}
	return nil
}

func tooLarge(path string, max int64) error {
	return fmt.Errorf("%s is larger than %d MiB, more than a configuration holds", path, max>>20)
}

// OpenLog opens path to append to it, creating it (mode 0600): never
// through a symlink (O_NOFOLLOW: a log is not meant to land elsewhere),
// and only a regular file (a FIFO would block the plugin, /dev/zero or a
// device is no log).
func OpenLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok && pe.Err == syscall.ELOOP {
			return nil, fmt.Errorf("%s is a symlink; the log is written only to a file of its own name", path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
