package fake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/protocol"
)

// shQuote quotes s for POSIX sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// viewFor is the view mu runs in a pane: this binary's `view` sub-command
// following the job's transcript.
func (f *Fake) viewFor(j *Job) protocol.View {
	return protocol.View{Command: shQuote(f.cfg.Exe) + " view " + shQuote(j.Transcript), Env: map[string]string{}}
}

func (f *Fake) checkSpec(s protocol.JobSpec) error {
	if s.Workstream == "" || s.Name == "" {
		return protocol.Errorf(protocol.Permanent, "job.start: spec.workstream and spec.name are required")
	}
	if err := protocol.CheckEnv(s.Env); err != nil {
		return protocol.Errorf(protocol.Permanent, "job.start: %v", err)
	}
	if !slices.Contains(f.Seams().Job.Honours.Roles, s.Role) {
		return protocol.Errorf(protocol.Permanent, "job.start: role %q is not one the fake honours", s.Role)
	}
	if f.cfg.FirstTurn == protocol.FirstTurnAtStart && s.FirstPrompt == nil {
		return protocol.Errorf(protocol.Permanent, "job.start: an at-start kind needs spec.firstPrompt")
	}
	if f.cfg.FirstTurn != protocol.FirstTurnAtStart && s.FirstPrompt != nil {
		return protocol.Errorf(protocol.Permanent, "job.start: spec.firstPrompt is only for an at-start kind (run with --first-turn at-start)")
	}
	return nil
}

func (f *Fake) jobStart(ctx context.Context, call *protocol.Call, p protocol.JobStartParams) (protocol.JobStartResult, error) {
	if p.Key == "" {
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: key is required")
	}
	if err := f.checkSpec(p.Spec); err != nil {
		return protocol.JobStartResult{}, err
	}
	hash, err := paramsHash(call.Params)
	if err != nil {
		return protocol.JobStartResult{}, protocol.Wrap(protocol.Permanent, err, "job.start")
	}
	home, err := f.hostDir(ctx, p.Target.Host)
	if err != nil {
		return protocol.JobStartResult{}, err
	}
	cwd := onHost(home.home, p.Spec.Cwd)
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: cwd %s does not exist on the host", p.Spec.Cwd)
	}
	var done *protocol.JobStartResult
	err = f.do(ctx, true, func(w *World) error {
		if w.Fenced["job:"+p.Key] {
			return protocol.Errorf(protocol.Permanent, "job key %s was fenced by a lookup that found none", p.Key)
		}
		if j := w.Jobs[p.Key]; j != nil {
			if j.Hash != hash {
				return protocol.Errorf(protocol.Permanent, "job key %s was started with other params", p.Key)
			}
			if j.State != statePending {
				r := j.Result
				done = &r
				return nil
			}
			if ownerAlive(j.Owner) && j.Owner != os.Getpid() {
				return protocol.Errorf(protocol.Retryable, "job key %s is being started by another invocation", p.Key)
			}
			j.Owner = os.Getpid()
			return nil
		}
		handle := "job-" + strconv.FormatInt(w.next(), 10)
		w.Jobs[p.Key] = &Job{
			Key: p.Key, Hash: hash, State: statePending, Owner: os.Getpid(), Spec: p.Spec,
			Host: home.name, Agent: agentKey(p.Spec.Workstream, p.Spec.Name),
			Transcript: filepath.Join(f.root, "transcripts", handle+".json"),
			Result:     protocol.JobStartResult{Handle: handle},
		}
		return nil
	})
	if err != nil {
		return protocol.JobStartResult{}, err
	}
	if done != nil {
		return *done, nil
	}
	if err := sleepCtx(ctx, time.Duration(f.cfg.EffectMs)*time.Millisecond); err != nil {
		_ = f.do(context.Background(), true, func(w *World) error {
			if j := w.Jobs[p.Key]; j != nil && j.State == statePending && j.Owner == os.Getpid() {
				delete(w.Jobs, p.Key)
			}
			return nil
		})
		return protocol.JobStartResult{}, err
	}
	var out protocol.JobStartResult
	err = f.do(ctx, true, func(w *World) error {
		j := w.Jobs[p.Key]
		if j == nil {
			return protocol.Errorf(protocol.UnknownOutcome, "job key %s vanished while being started", p.Key)
		}
		if j.State == statePending {
			f.landJob(w, j)
		}
		out = j.Result
		return nil
	})
	return out, err
}

// landJob makes a pending job run: its agent gets a new incarnation, and an
// at-start kind's first prompt is its first turn.
func (f *Fake) landJob(w *World, j *Job) {
	now := f.now()
	j.State, j.Owner, j.At = stateRunning, 0, now
	a := w.Agents[j.Agent]
	if a == nil {
		a = &Agent{Deliveries: map[string]*Delivery{}}
		w.Agents[j.Agent] = a
	}
	a.Job, a.TurnMs, a.Events = j.Key, f.cfg.TurnMs, nil
	a.restart("inc-"+strconv.FormatInt(w.next(), 10), now)
	s := j.Spec
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k) // names only: an env value may be a secret
	}
	sort.Strings(keys)
	a.event(now, "fake", fmt.Sprintf("job %s started: %s/%s harness=%s role=%s cwd=%s", j.Result.Handle, s.Workstream, s.Name, s.Harness, s.Role, s.Cwd))
	a.event(now, "fake", fmt.Sprintf("command (%s): %s", s.CommandSource, s.Cmd))
	a.event(now, "fake", fmt.Sprintf("env: %s; sockets: %s", strings.Join(keys, " "), strings.Join(s.Sockets, " ")))
	j.Result.View = f.viewFor(j)
	j.Result.Baseline = &protocol.Baseline{Runs: 0, Incarnation: a.Inc}
	if fp := s.FirstPrompt; fp != nil {
		base := a.deliver(Msg{ID: fp.MsgID, Text: fp.Text}, now, false)
		a.Deliveries[fp.MsgID] = &Delivery{Method: protocol.MethodJobStart.Name, Receipt: protocol.Receipt{
			State: protocol.ReceiptAccepted, ID: fp.MsgID, Runs: &base, At: &now, Incarnation: a.Inc}}
	}
	f.writeTranscript(j, a)
}

// endJob stops a job: its agent's turn is cut and (with transcript) its
// view ends.
func (f *Fake) endJob(w *World, j *Job, why string, transcript bool) {
	zero := 0
	j.State, j.Exit = stateEnded, &zero
	if a := w.Agents[j.Agent]; a != nil && a.Job == j.Key {
		now := f.now()
		a.advance(now)
		a.Queue, a.Turn = nil, nil
		a.event(now, "fake", "job ended: "+why)
		if transcript {
			f.writeTranscript(j, a)
		}
	}
}

func (f *Fake) jobLookup(ctx context.Context, call *protocol.Call, p protocol.LookupParams) (protocol.JobLookupResult, error) {
	var out protocol.JobLookupResult
	err := f.do(ctx, true, func(w *World) error {
		j := w.Jobs[p.Key]
		if j != nil && j.State == statePending && !ownerAlive(j.Owner) {
			delete(w.Jobs, p.Key)
			j = nil
		}
		switch {
		case j == nil:
			out.None = true
			if p.Fence {
				w.Fenced["job:"+p.Key] = true
			}
		case j.State == statePending:
			out.Pending = true
		default:
			v := j.Result.View
			out.Found = &protocol.JobFound{Handle: j.Result.Handle, View: &v, Baseline: j.Result.Baseline}
		}
		return nil
	})
	return out, err
}

func (f *Fake) jobStatus(ctx context.Context, call *protocol.Call, p protocol.Base) (protocol.JobStatus, error) {
	var out protocol.JobStatus
	err := f.do(ctx, false, func(w *World) error {
		j := w.jobFor(p.Target.Job)
		switch {
		case j == nil:
			out = protocol.JobStatus{State: protocol.JobLost, Reason: "no such job in this fake's world (without --state a world lasts one invocation)"}
		case j.State == statePending:
			out = protocol.JobStatus{State: protocol.JobUnknown, Reason: "still being started"}
		case j.State == stateEnded && j.Lost != "":
			out = protocol.JobStatus{State: protocol.JobLost, Reason: j.Lost}
		case j.State == stateEnded:
			out = protocol.JobStatus{State: protocol.JobEnded, Exit: j.Exit}
		default:
			out = protocol.JobStatus{State: protocol.JobRunning}
		}
		return nil
	})
	return out, err
}

func (f *Fake) jobStop(ctx context.Context, call *protocol.Call, p protocol.KeyParams) (protocol.Null, error) {
	return protocol.Null{}, f.do(ctx, true, func(w *World) error {
		j := w.Jobs[p.Key]
		switch {
		case j == nil || j.State == stateEnded:
			return nil // gone already: stop is idempotent
		case j.State == statePending && ownerAlive(j.Owner):
			return protocol.Errorf(protocol.Retryable, "job key %s is still being started", p.Key)
		case j.State == statePending:
			delete(w.Jobs, p.Key)
			return nil
		}
		f.endJob(w, j, "stopped", true)
		return nil
	})
}

func (f *Fake) jobAttach(ctx context.Context, call *protocol.Call, p protocol.Base) (protocol.View, error) {
	var out protocol.View
	err := f.do(ctx, false, func(w *World) error {
		j := w.jobFor(p.Target.Job)
		switch {
		case j == nil:
			return protocol.Errorf(protocol.Permanent, "job.attach: no such job")
		case j.State != stateRunning:
			return protocol.Errorf(protocol.Permanent, "job.attach: the job is %s", j.State)
		}
		out = f.viewFor(j)
		return nil
	})
	return out, err
}

func (f *Fake) jobCheckSteps(ctx context.Context, call *protocol.Call, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	s := gitlink.NewSteps()
	if p.Phase == protocol.PhaseAgent {
		s.Pass("agent", fmt.Sprintf("a simulated agent: a turn settles after %d ms", f.cfg.TurnMs))
	}
	return s.List(), nil
}
