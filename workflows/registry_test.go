package workflows

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
)

// registryHarness runs the registry with a timeline of updates, signals
// and queries.
type registryHarness struct {
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	at  time.Duration
}

func newRegistryHarness() *registryHarness {
	h := &registryHarness{}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(JobRegistry, workflow.RegisterOptions{Name: RegistryWorkflow})
	return h
}

type admitOutcome struct {
	rec      jobs.Record
	rejected error
	done     bool
}

func (h *registryHarness) admit(id string, a jobs.Admission, lim jobs.Limits, out *admitOutcome) {
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() { h.admitNow(id, a, lim, out) }, h.at)
}

func (h *registryHarness) admitNow(id string, a jobs.Admission, lim jobs.Limits, out *admitOutcome) {
	h.env.UpdateWorkflow(UpdateAdmit, id, &testsuite.TestUpdateCallback{
		OnReject: func(err error) { out.rejected = err },
		OnAccept: func() {},
		OnComplete: func(v any, err error) {
			if rec, ok := v.(jobs.Record); ok {
				out.rec = rec
			}
			out.done = err == nil
		},
	}, AdmitRequest{RequestID: id, Admission: a, Limits: lim, Build: "b1"})
}

func (h *registryHarness) signal(rec jobs.Record) {
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalJobRecord, rec) }, h.at)
}

func (h *registryHarness) query(t *testing.T, out *[]jobs.Record) {
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryJobs)
		if err != nil {
			t.Errorf("query: %v", err)
			return
		}
		if err := v.Get(out); err != nil {
			t.Errorf("decode: %v", err)
		}
	}, h.at)
}

func (h *registryHarness) run(t *testing.T) {
	t.Helper()
	h.at += time.Minute
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, h.at)
	h.env.ExecuteWorkflow(RegistryWorkflow, RegistryInput{})
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("registry did not end")
	}
}

func repairAdmission(brief, signature string) jobs.Admission {
	return jobs.Admission{Kind: jobs.Repair, Repository: "underpass-ai/axlr", Signature: signature, Brief: brief}
}

// refusal reads the refusal code off a rejected admission.
func refusal(t *testing.T, err error) string {
	t.Helper()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeJobRefused {
		t.Fatalf("rejection %v, want a %s error", err, ErrTypeJobRefused)
	}
	var ref jobs.Refusal
	if err := app.Details(&ref); err != nil {
		t.Fatalf("refusal details: %v", err)
	}
	return string(ref.Code)
}

// TestRegistryAdmits: an admitted job gets its record (preparing, its slug
// id, attempt 1); the same request again gets the same record; a second
// job for the same failure is a duplicate; past jobs.max_active, another
// is refused; a job's record signal replaces the registry's, and the query
// lists the newest first.
func TestRegistryAdmits(t *testing.T) {
	h := newRegistryHarness()
	var first, again, dup, second, full admitOutcome
	var listed []jobs.Record
	lim := jobs.Limits{MaxActive: 2}
	h.admit("req-1", repairAdmission("TestParse fails on empty input", "aaaa1111"), lim, &first)
	h.admit("req-1", repairAdmission("TestParse fails on empty input", "aaaa1111"), lim, &again)
	h.admit("req-2", repairAdmission("TestParse fails on empty input", "aaaa1111"), lim, &dup)
	h.admit("req-3", repairAdmission("the daemon leaks file descriptors", "bbbb2222"), lim, &second)
	h.admit("req-4", repairAdmission("history prints the wrong duration", "cccc3333"), lim, &full)
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		rec := first.rec
		rec.Status, rec.Session, rec.Updated = jobs.Blocked, "s-1", rec.Updated.Add(time.Hour)
		rec.Reason = "the pull request conflicts with its base"
		h.env.SignalWorkflow(SignalJobRecord, rec)
	}, h.at)
	h.query(t, &listed)
	h.run(t)
	if !first.done || first.rec.Status != jobs.Preparing || first.rec.Attempt != 1 || !strings.HasSuffix(first.rec.ID, "-testparse-fails-on-empty-input") || first.rec.Build != "b1" {
		t.Fatalf("first %+v", first)
	}
	if !again.done || again.rec.ID != first.rec.ID {
		t.Fatalf("a retried request made %+v, want %s", again.rec, first.rec.ID)
	}
	if code := refusal(t, dup.rejected); code != string(jobs.RefuseDuplicate) {
		t.Fatalf("duplicate refused as %s", code)
	}
	if !second.done {
		t.Fatalf("second: %v", second.rejected)
	}
	if code := refusal(t, full.rejected); code != string(jobs.RefuseMaxActive) {
		t.Fatalf("third refused as %s (%v)", code, full.rejected)
	}
	if len(listed) != 2 || listed[0].ID != second.rec.ID || listed[1].Status != jobs.Blocked || listed[1].Reason == "" {
		t.Fatalf("listed %+v", listed)
	}
}

// TestRegistryAdmitsThePersonFromASession: the person's improvement
// started from a session whose agent already asked for one is admitted,
// and its record says the person started it there; the agent's second
// request from that session is still refused by the one it made.
func TestRegistryAdmitsThePersonFromASession(t *testing.T) {
	h := newRegistryHarness()
	var agents, person, again admitOutcome
	improve := func(brief string, person bool) jobs.Admission {
		return jobs.Admission{Kind: jobs.Improve, Repository: "underpass-ai/axlr", Signature: "sig-" + brief[:4], Brief: brief, OriginSession: "s-origin", Person: person}
	}
	lim := jobs.Limits{MaxActive: 3}
	h.admit("req-1", improve("list the tools by name", false), lim, &agents)
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		rec := agents.rec
		rec.Status, rec.Session, rec.Updated = jobs.Running, "s-job", rec.Updated.Add(time.Hour)
		h.env.SignalWorkflow(SignalJobRecord, rec)
	}, h.at)
	h.admit("req-2", improve("show the step's budget", true), lim, &person)
	h.admit("req-3", improve("name the failed checks", false), lim, &again)
	h.run(t)
	if !agents.done || agents.rec.Person {
		t.Fatalf("the agent's request %+v (%v)", agents.rec, agents.rejected)
	}
	if !person.done || !person.rec.Person || person.rec.OriginSession != "s-origin" {
		t.Fatalf("the person's improvement %+v (%v)", person.rec, person.rejected)
	}
	if code := refusal(t, again.rejected); code != string(jobs.RefuseSessionLimit) {
		t.Fatalf("the agent's second request refused as %s (%v)", code, again.rejected)
	}
}

// recover asks, at its turn, to recover the job job() names then.
func (h *registryHarness) recover(id string, job func() string, lim jobs.Limits, out *admitOutcome) {
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateRecover, id, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { out.rejected = err },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if rec, ok := v.(jobs.Record); ok {
					out.rec = rec
				}
				out.done = err == nil
			},
		}, RecoverRequest{RequestID: id, Job: job(), Limits: lim})
	}, h.at)
}

// TestRegistryRecovers: only an interrupted job with its session and clone
// is taken back, preparing again, when a slot is free; the same request
// again answers the same record; the job workflow's late interrupted
// record does not undo it.
func TestRegistryRecovers(t *testing.T) {
	h := newRegistryHarness()
	lim := jobs.Limits{MaxActive: 1}
	var job, other, running, busy, recovered, again, unknown admitOutcome
	var listed []jobs.Record
	jobID := func() string { return job.rec.ID }
	h.admit("req-1", repairAdmission("TestParse fails on empty input", "aaaa1111"), lim, &job)
	h.recover("rec-0", jobID, lim, &running)
	interrupted := func() jobs.Record {
		rec := job.rec
		rec.Status, rec.Session, rec.Clone, rec.Reason = jobs.Interrupted, "s-1", "/tmp/clone", "interrupted while step repair of axlr_repair (running)"
		rec.Updated = rec.Created.Add(3 * time.Minute)
		return rec
	}
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalJobRecord, interrupted()) }, h.at)
	h.admit("req-2", repairAdmission("the daemon leaks file descriptors", "bbbb2222"), lim, &other)
	h.recover("rec-1", jobID, lim, &busy)
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		rec := other.rec
		rec.Status, rec.Updated = jobs.Completed, rec.Created.Add(time.Minute)
		h.env.SignalWorkflow(SignalJobRecord, rec)
	}, h.at)
	h.recover("rec-2", jobID, lim, &recovered)
	h.recover("rec-2", jobID, lim, &again)
	h.recover("rec-3", func() string { return "nope" }, lim, &unknown)
	// The old workflow's interrupted record, sent before the recovery.
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalJobRecord, interrupted()) }, h.at)
	h.query(t, &listed)
	h.run(t)
	if code := refusal(t, running.rejected); code != string(jobs.RefuseNotInterrupted) {
		t.Fatalf("a preparing job recovered: %s %+v", code, running)
	}
	if !other.done {
		t.Fatalf("an interrupted job holds a slot: %v", other.rejected)
	}
	if code := refusal(t, busy.rejected); code != string(jobs.RefuseMaxActive) {
		t.Fatalf("recovered into a full registry: %s", code)
	}
	if !recovered.done || recovered.rec.Status != jobs.Preparing || recovered.rec.Reason != "" || recovered.rec.Session != "s-1" {
		t.Fatalf("recovered %+v (%v)", recovered.rec, recovered.rejected)
	}
	if !again.done || again.rec.ID != recovered.rec.ID {
		t.Fatalf("a retried recovery: %+v %v", again.rec, again.rejected)
	}
	if unknown.rejected == nil || !strings.Contains(unknown.rejected.Error(), "nope") {
		t.Fatalf("an unknown job: %v", unknown.rejected)
	}
	i := slices.IndexFunc(listed, func(r jobs.Record) bool { return r.ID == job.rec.ID })
	if i < 0 || listed[i].Status != jobs.Preparing {
		t.Fatalf("listed %+v", listed)
	}
}

// TestRegistryRace: two clients ask for the last slot at the same moment;
// the registry admits exactly one.
func TestRegistryRace(t *testing.T) {
	h := newRegistryHarness()
	var a, b admitOutcome
	lim := jobs.Limits{MaxActive: 1}
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		h.admitNow("req-a", repairAdmission("the watch never settles", "aaaa0000"), lim, &a)
		h.admitNow("req-b", repairAdmission("the queue merges twice", "bbbb0000"), lim, &b)
	}, h.at)
	h.run(t)
	if a.done == b.done {
		t.Fatalf("admitted a %v, b %v; want exactly one", a.done, b.done)
	}
	loser := b.rejected
	if b.done {
		loser = a.rejected
	}
	if code := refusal(t, loser); code != string(jobs.RefuseMaxActive) {
		t.Fatalf("the other refused as %s", code)
	}
}

// TestRegistryCarried: the state a registry continues as new with keeps
// every active and interrupted record and the newest ended ones, within
// MaxRegistryRecords, briefs cut to RegistryBriefBytes.
func TestRegistryCarried(t *testing.T) {
	r := &registry{}
	for i := range MaxRegistryRecords + 10 {
		st := jobs.Completed
		if i%50 == 0 {
			st = jobs.Interrupted
		}
		r.st.Records = append(r.st.Records, jobs.Record{ID: string(rune('a'+i%26)) + strings.Repeat("x", i), Status: st, Brief: strings.Repeat("é", RegistryBriefBytes)})
	}
	st := r.carried()
	if len(st.Records) != MaxRegistryRecords {
		t.Fatalf("%d records carried", len(st.Records))
	}
	interrupted := 0
	for _, rec := range st.Records {
		if rec.Status == jobs.Interrupted {
			interrupted++
		}
		if len(rec.Brief) > RegistryBriefBytes || !strings.HasPrefix(strings.Repeat("é", RegistryBriefBytes), rec.Brief) {
			t.Fatalf("brief of %d bytes, cut inside a character", len(rec.Brief))
		}
	}
	if interrupted != 5 || st.Records[len(st.Records)-1].ID != r.st.Records[len(r.st.Records)-1].ID {
		t.Fatalf("%d interrupted records kept; last %s", interrupted, st.Records[len(st.Records)-1].ID)
	}
}
