package tmuxjob

import (
	"context"
	_ "embed"
	"fmt"
	"os"
)

// Files is what a Runner may also offer: moving files to and from the
// host without a script run (the ssh backend: SFTP on the same
// connection). ok false means the host offers no such way (an SSH server
// without the SFTP subsystem) and nothing was done: the package then uses
// its scripts. Paths are absolute, or relative to the login directory.
type Files interface {
	WriteFile(ctx context.Context, path string, data []byte, perm os.FileMode) (ok bool, err error)
	ReadFileAt(ctx context.Context, path string, off int64, max int) (data []byte, ok bool, err error)
}

// installScript writes stdin to $1 (creating its directory), mode 0755,
// through a temporary file renamed into place.
//
//go:embed scripts/install.sh
var installScript string

// Install writes data to path on the host r reaches, mode 0755, creating
// its directory: through r's Files when it has them, else a script with
// data on its stdin. A reader never sees half of it.
func Install(ctx context.Context, r Runner, path string, data []byte) error {
	if f, ok := r.(Files); ok {
		done, err := f.WriteFile(ctx, path, data, 0o755)
		if err != nil {
			return fmt.Errorf("install %s: %w", path, err)
		}
		if done {
			return nil
		}
	}
	_, stderr, code, err := r.Run(ctx, []string{"/bin/sh", "-c", installScript, "mu-install", path}, data)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("install %s: exit %d: %s", path, code, firstLine(stderr))
	}
	return nil
}

// logChunk reads the job id's log from off through the Runner's Files, at
// most followChunk bytes; nil when there are none, no Files, or the read
// failed (the tail script then reads it, and says whether the job lives).
func (j *Jobs) logChunk(ctx context.Context, id string, off int64) []byte {
	f, ok := j.r.(Files)
	if !ok {
		return nil
	}
	data, done, err := f.ReadFileAt(ctx, j.opts.Root+"/jobs/"+id+"/log", off, followChunk)
	if !done || err != nil {
		return nil
	}
	return data
}
