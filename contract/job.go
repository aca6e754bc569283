package contract

import (
	"errors"
	"slices"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// jobChecks are the job seam's rules: start (and its reply's shape by the
// kind's handle and firstTurn), lookup and its fence, status, attach,
// idempotent stop, and an exact dedupe.
func jobChecks() []check {
	need := []string{seamJob}
	return []check{
		{name: "job/start", needs: need, run: checkJobStart},
		{name: "job/lookup", needs: need, run: checkJobLookup},
		{name: "job/fence", needs: need, run: checkJobFence},
		{name: "job/status", needs: need, run: checkJobStatus},
		{name: "job/attach", needs: need, run: checkJobAttach},
		{name: "job/stop", needs: need, run: checkJobStop},
		{name: "job/dedupe", needs: need, run: checkJobDedupe},
	}
}

// checkJobStart (job/start): `job.start` answers a view with a command; a
// `reply` kind's carries its handle; an `at-start` kind's `baseline` has
// `runs: 0`.
func checkJobStart(t *T) {
	j := t.startJob(t.Start())
	t.checkStartReply(j.res, "job.start")
}

// checkJobLookup (job/lookup): `job.lookup` finds a started key (a `reply`
// kind's with its handle and view) and answers `none` for a key never
// started (SKIP without `lookup`).
func checkJobLookup(t *T) {
	if !t.Decl().Seams.Job.Start.Lookup {
		t.Skipf("job.start declares no lookup")
	}
	p := t.Start()
	j := t.startJob(p)
	l := t.jobLookup(p, j, j.key, false)
	if l.Found == nil {
		t.Failf("job.lookup of a started key did not answer found: %+v", l)
	}
	if t.Decl().Seams.Job.Handle == protocol.HandleReply {
		t.Check(l.Found.Handle == j.res.Handle, "job.lookup found handle %q, job.start gave %q", l.Found.Handle, j.res.Handle)
		t.Check(l.Found.View != nil && l.Found.View.Command != "", "a reply kind's job.lookup found carries no view")
	}
	n := t.jobLookup(p, j, t.Unique("never-started"), false)
	t.Check(n.None, "job.lookup of a key never started did not answer none: %+v", n)
}

// checkJobFence (job/fence): after a fenced `none`, a start of that key
// takes no effect (SKIP without `fenceKey`).
func checkJobFence(t *T) {
	if !t.Decl().Seams.Job.Start.FenceKey {
		t.Skipf("job.start declares no fenceKey")
	}
	p := t.Start()
	j := t.newJob(p)
	t.stopLater(p, j) // whatever the fence left on the backend
	l := t.jobLookup(p, j, j.key, true)
	if !l.None {
		t.Failf("a fenced job.lookup of a key never started did not answer none: %+v", l)
	}
	_, err := caller.Invoke(t.Ctx(), p, protocol.MethodJobStart, j.startParams())
	if err == nil {
		t.stopLater(p, j)
		t.Failf("job.start of a key a fenced lookup answered none took effect")
	}
	var re *caller.RemoteError
	if !errors.As(err, &re) {
		t.Failf("job.start of a fenced key: %v", err)
	}
}

// checkJobStatus (job/status): a job just started reads `running`.
func checkJobStatus(t *T) {
	p := t.Start()
	j := t.startJob(p)
	st, err := caller.Invoke(t.Ctx(), p, protocol.MethodJobStatus, protocol.Base{Target: j.target()})
	if err != nil {
		t.Failf("job.status: %v", err)
	}
	t.Check(st.State == protocol.JobRunning, "job.status of a job just started is %q, not running", st.State)
}

// checkJobAttach (job/attach): `job.attach` answers a view with a command.
func checkJobAttach(t *T) {
	p := t.Start()
	j := t.startJob(p)
	v, err := caller.Invoke(t.Ctx(), p, protocol.MethodJobAttach, protocol.Base{Target: j.target()})
	if err != nil {
		t.Failf("job.attach: %v", err)
	}
	t.Check(v.Command != "", "job.attach gave a view with no command")
}

// checkJobStop (job/stop): `job.stop` answers `null`, twice, and the job no
// longer reads `running`.
func checkJobStop(t *T) {
	p := t.Start()
	j := t.startJob(p)
	for i := 1; i <= 2; i++ {
		raw, err := p.Call(t.Ctx(), protocol.MethodJobStop.Name, protocol.KeyParams{Base: protocol.Base{Target: j.target()}, Key: j.key}, 0)
		if err != nil {
			t.Failf("job.stop (time %d): %v", i, err)
		}
		t.Check(string(raw) == "null", "job.stop answered %s, not null", raw)
	}
	st, err := caller.Invoke(t.Ctx(), p, protocol.MethodJobStatus, protocol.Base{Target: j.target()})
	if err != nil {
		t.Failf("job.status after job.stop: %v", err)
	}
	t.Check(st.State != protocol.JobRunning, "job.stop answered, but job.status still reads running")
}

// checkJobDedupe (job/dedupe): a repeat of `job.start` with identical params
// answers the first result (SKIP without exact `dedupe`).
func checkJobDedupe(t *T) {
	caps := t.Decl().Seams.Job.Start
	if caps.Dedupe == nil || !caps.Dedupe.Exact {
		t.Skipf("job.start declares no exact dedupe")
	}
	p := t.Start()
	j := t.newJob(p)
	first, second := t.sendTwice(p, protocol.MethodJobStart.Name, j.startParams())
	t.stopLater(p, j)
	t.Check(sameJSON(first, second), "a repeat of job.start inside the dedupe window answered %s; the first answer was %s", second, first)
}

// job is a job a check started.
type job struct {
	t    *T
	key  string
	host protocol.Target
	spec protocol.JobSpec
	res  protocol.JobStartResult
}

// agent is the job's agent, as mu names it in target.agent.
func (j *job) agent() *protocol.AgentRef {
	return &protocol.AgentRef{Workstream: j.spec.Workstream, Name: j.spec.Name, Incarnation: 1}
}

// target names the job (and its agent) on its host.
func (j *job) target() protocol.Target {
	tg := j.host
	tg.Job = &protocol.JobRef{Kind: j.t.Decl().Seams.Job.Kind, Key: j.key, Handle: j.res.Handle}
	tg.Agent = j.agent()
	return tg
}

func (j *job) startParams() protocol.JobStartParams {
	return protocol.JobStartParams{Base: protocol.Base{Target: j.host}, Key: j.key, Spec: j.spec}
}

// newJob makes a job's key and spec on a host, not started yet.
func (t *T) newJob(p *caller.Plugin) *job {
	d := t.Decl().Seams.Job
	role := "full-access"
	if d.Honours != nil && len(d.Honours.Roles) > 0 && !slices.Contains(d.Honours.Roles, role) {
		role = d.Honours.Roles[0]
	}
	j := &job{t: t, key: t.Unique("job"), host: t.linkTarget(p), spec: protocol.JobSpec{
		Workstream: "contract", Name: t.Unique("agent"), Harness: "contract", Role: role,
		Cmd: "true", CommandSource: "contract", Cwd: ".", Env: map[string]string{},
	}}
	if t.s.opts.JobCmd != "" {
		j.spec.Cmd = t.s.opts.JobCmd
	}
	if t.s.opts.JobHarness != "" {
		j.spec.Harness = t.s.opts.JobHarness
	}
	if d.FirstTurn == protocol.FirstTurnAtStart {
		j.spec.FirstPrompt = &protocol.FirstPrompt{Text: "first prompt from the contract suite", MsgID: t.Unique("msg")}
	}
	return j
}

// startJob starts a job, stopped when the check ends.
func (t *T) startJob(p *caller.Plugin) *job {
	j := t.newJob(p)
	res, err := caller.Invoke(t.Ctx(), p, protocol.MethodJobStart, j.startParams())
	if err != nil {
		t.Failf("job.start: %v", err)
	}
	j.res = res
	t.stopLater(p, j)
	return j
}

func (t *T) stopLater(p *caller.Plugin, j *job) {
	t.Cleanup(func() {
		_, _ = p.Call(t.Ctx(), protocol.MethodJobStop.Name, protocol.KeyParams{Base: protocol.Base{Target: j.target()}, Key: j.key}, 0)
	})
}

// checkStartReply judges a start reply (or a lookup's found) by the kind.
func (t *T) checkStartReply(r protocol.JobStartResult, what string) {
	d := t.Decl().Seams.Job
	t.Check(r.View.Command != "", "%s gave a view with no command", what)
	if d.Handle == protocol.HandleReply {
		t.Check(r.Handle != "", "%s of a handle: reply kind carries no handle", what)
	}
	if d.FirstTurn == protocol.FirstTurnAtStart {
		t.Check(r.Baseline != nil && r.Baseline.Runs == 0, "%s of an at-start kind must carry baseline with runs 0, got %+v", what, r.Baseline)
	}
}

func (t *T) jobLookup(p *caller.Plugin, j *job, key string, fence bool) protocol.JobLookupResult {
	l, err := caller.Invoke(t.Ctx(), p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: j.host}, Key: key, Fence: fence})
	if err != nil {
		t.Failf("job.lookup: %v", err)
	}
	return l
}
