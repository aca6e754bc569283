package tmuxjob

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// A settled turn's record can be large (an agent's answer of many MiB).
// read and wait emit a record whole only up to a bound (turn.sh); past it
// they name it, and the caller reads only the head a reply can carry
// (Options.MaxSettleText, plus room for the record's header lines):
// through the Runner's Files (SFTP on the SSH connection) where it has
// them, else with the turnhead script.

//go:embed scripts/turn.sh
var turnSh string

// fragments are the shell functions an operation needs beside lib.sh,
// placed between lib.sh and the operation's own lines.
var fragments = map[string]string{"read": turnSh + "\n"}

// turnInline is the largest record read and wait emit whole for a Runner
// with Files: a larger one is read over them.
const turnInline = 64 << 10

// turnHeader is the room kept for a record's header lines (at, msg,
// error) beyond the text a reply carries.
const turnHeader = 64 << 10

// inlineArg is read's and wait's bound, as their argument: for a Runner
// without Files, every record a reply can carry whole travels in the run.
func (j *Jobs) inlineArg() string {
	if _, ok := j.r.(Files); ok {
		return strconv.Itoa(turnInline)
	}
	return strconv.Itoa(j.turnNeed())
}

// turnNeed is how much of a record a reply can use: its header and
// MaxSettleText of text, and one byte more (the text is then cut).
func (j *Jobs) turnNeed() int { return j.opts.MaxSettleText + turnHeader + 1 }

// snapshotOf parses a read's or a wait's output, and reads the settled
// turn's record when the run only named it.
func (j *Jobs) snapshotOf(ctx context.Context, key string, o out) (snapshot, error) {
	s := parseSnapshot(o)
	big := o.get("turnbig")
	if big == "" {
		return s, nil
	}
	t, err := j.bigTurn(ctx, key, big)
	if err != nil {
		return snapshot{}, err
	}
	s.turn = t
	return s, nil
}

// bigTurn reads the head of the record "SIZE INC.N" names: turnNeed
// bytes at most. A record read in part has its text marked cut.
func (j *Jobs) bigTurn(ctx context.Context, key, big string) (*turnRec, error) {
	sz, name, _ := strings.Cut(big, " ")
	size, err := strconv.ParseInt(sz, 10, 64)
	inc, n, _ := strings.Cut(name, ".")
	if _, nerr := strconv.ParseUint(n, 10, 63); err != nil || nerr != nil || !validInc(inc) {
		return nil, fmt.Errorf("tmuxjob: a bad turn record name %q", big)
	}
	want := int64(j.turnNeed())
	if size < want {
		want = size
	}
	data, err := j.turnHead(ctx, key, name, int(want))
	if err != nil {
		return nil, err
	}
	partial := int64(len(data)) < size
	t, ok := parseTurn(data)
	if !ok && partial {
		// Its header lines pass what was read: the settled turn still
		// answers (a watch must not wait on it forever), without its text.
		t, ok = parseTurn(data[:bytes.LastIndexByte(data, '\n')+1])
		t.Error, t.Text = "the turn record's header lines pass "+strconv.Itoa(turnHeader>>10)+" KiB: its text was not read", ""
	}
	if !ok {
		return nil, nil
	}
	t.Partial = partial
	return &t, nil
}

// turnHead reads the first max bytes of the job's turn record name: over
// the Runner's Files, else (none, or a host without SFTP) by a script.
func (j *Jobs) turnHead(ctx context.Context, key, name string, max int) ([]byte, error) {
	path := j.ChannelDir(key) + "/out/turns/" + name
	if f, ok := j.r.(Files); ok {
		data, done, err := f.ReadFileAt(ctx, path, 0, max)
		if err != nil {
			return nil, fmt.Errorf("tmuxjob: reading turn record %s: %w", name, err)
		}
		if done {
			return data, nil
		}
	}
	o, err := j.run(ctx, "turnhead", jobID(key), nil, name, strconv.Itoa(max))
	if err != nil {
		return nil, err
	}
	return o.blob("turn"), nil
}
