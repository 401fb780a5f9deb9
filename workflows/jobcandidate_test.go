package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/jobs"
)

// fakeCandidate builds and installs a job's candidate as scripted, and
// records what it was asked.
type fakeCandidate struct {
	mu         sync.Mutex
	build      BuildCandidateResult
	builds     []BuildCandidateInput
	installErr error
	installs   []InstallInput
}

func (c *fakeCandidate) BuildCandidate(_ context.Context, in BuildCandidateInput) (BuildCandidateResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.builds = append(c.builds, in)
	return c.build, nil
}

func (c *fakeCandidate) Install(_ context.Context, in InstallInput) (InstallResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.installs = append(c.installs, in)
	if c.installErr != nil {
		return InstallResult{}, c.installErr
	}
	return InstallResult{Installed: []jobs.Installed{
		{Path: "/usr/local/bin/axlrd", Backup: "/usr/local/bin/axlrd.before-repair-" + in.Job},
		{Path: "/usr/local/bin/axlr-tui", Backup: "/usr/local/bin/axlr-tui.before-repair-" + in.Job},
	}}, nil
}

var _ CandidateActivities = (*fakeCandidate)(nil)

func (c *fakeCandidate) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(c.BuildCandidate, activity.RegisterOptions{Name: ActivityForgeBuildCandidate})
	env.RegisterActivityWithOptions(c.Install, activity.RegisterOptions{Name: ActivityForgeInstall})
}

// searchSeen is one upsert of a job's search attributes.
type searchSeen struct {
	job, kind, repository, status string
	pullRequest                   int64
	hasPullRequest                bool
}

// watchSearch records every upsert of the search attributes.
func watchSearch(env *testsuite.TestWorkflowEnvironment) *[]searchSeen {
	var seen []searchSeen
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		var s searchSeen
		s.job, _ = sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributeJob))
		s.kind, _ = sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributeJobKind))
		s.repository, _ = sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributeRepository))
		s.status, _ = sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributeJobStatus))
		s.pullRequest, s.hasPullRequest = sa.GetInt64(temporal.NewSearchAttributeKeyInt64(SearchAttributePullRequest))
		seen = append(seen, s)
	}).Return(nil)
	return &seen
}

const originSession = "0b5e9c1e-2f7d-4a7b-9e58-1d2c3b4a5f60"

// watchOrigin records the outcomes signalled to the origin session, which
// answers err.
func watchOrigin(env *testsuite.TestWorkflowEnvironment, err error) *[]JobOutcome {
	var got []JobOutcome
	env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID(originSession), "", SignalJobOutcome, mock.Anything).Run(func(args mock.Arguments) {
		got = append(got, args.Get(4).(JobOutcome))
	}).Return(err)
	return &got
}

var builtCandidate = BuildCandidateResult{Path: "/jobs/20261201-1200-testparse-fails.bin", Version: "repair-20261201-1200-testparse-fails-head1head1he",
	Commit: "head1head1head1", Binaries: []string{"/jobs/20261201-1200-testparse-fails.bin/axlrd"}}

// TestJobCandidate: a job that repairs axlr builds its candidate from the
// clone at the pull request's head when the merge decision opens, before
// an automatic merge too, and records it; one that does not build
// declines the merge with the build's output and ends BLOCKED; a clone
// with nothing to build merges as any job. Under repair.install the
// merged candidate is installed right after the merge, and an install
// that fails leaves the merge standing with the reason. The origin
// session hears how each ended.
func TestJobCandidate(t *testing.T) {
	failed := "go build in /jobs/x: exit status 1\n# example.com/fakeaxlr/cmd/axlrd\ncmd/axlrd/main.go:3:15: undefined: undefinedCall"
	tests := []struct {
		name       string
		settings   JobSettings
		build      BuildCandidateResult
		installErr error

		status    jobs.Status
		reason    string // the record's reason contains it
		candidate bool
		builds    int
		merges    int
		installs  int
		installed bool
		trigger   string // the last trigger
		note      string // the origin's outcome reason contains it
	}{
		{name: "built", settings: JobSettings{Candidate: true}, build: builtCandidate,
			status: jobs.Completed, candidate: true, builds: 1, merges: 1, trigger: "merged"},
		{name: "does not build", settings: JobSettings{Candidate: true}, build: BuildCandidateResult{Failed: failed},
			status: jobs.Blocked, reason: "the repaired axlrd/axlr-tui does not build: go build in /jobs/x: exit status 1\n# example.com/fakeaxlr/cmd/axlrd\ncmd/axlrd/main.go:3:15: undefined: undefinedCall",
			builds: 1, trigger: "merge_declined", note: "undefined: undefinedCall"},
		{name: "nothing to build", settings: JobSettings{Candidate: true, Install: true}, build: BuildCandidateResult{NothingToBuild: true},
			status: jobs.Completed, builds: 1, merges: 1, trigger: "merged"},
		{name: "not this project", settings: JobSettings{Install: true}, build: builtCandidate,
			status: jobs.Completed, merges: 1, trigger: "merged"},
		{name: "installed after the merge", settings: JobSettings{Candidate: true, Install: true}, build: builtCandidate,
			status: jobs.Completed, candidate: true, builds: 1, merges: 1, installs: 1, installed: true, trigger: "merged",
			note: "installed repair-20261201-1200-testparse-fails-head1head1he over /usr/local/bin/axlrd (the previous one kept as /usr/local/bin/axlrd.before-repair-20261201-1200-testparse-fails) and /usr/local/bin/axlr-tui"},
		{name: "install refused", settings: JobSettings{Candidate: true, Install: true}, build: builtCandidate,
			installErr: temporal.NewNonRetryableApplicationError("install job x: the directory /usr/local/bin cannot be written: permission denied", ErrTypeInstallRefused, nil),
			status:     jobs.Completed, reason: "merged, but the candidate was not installed: install job x: the directory /usr/local/bin cannot be written: permission denied",
			candidate: true, builds: 1, merges: 1, installs: 1, trigger: "merged", note: "cannot be written"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newJobHarness(t, newScripted(repairModel...), greenChecks)
			fc := &fakeCandidate{build: tc.build, installErr: tc.installErr}
			fc.register(h.env)
			origin := watchOrigin(h.env, nil)
			h.record.OriginSession = originSession
			var check outcome
			h.decideAt(time.Minute, JobDecision{RequestID: "d-1", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &check)
			settings := tc.settings
			settings.Remote, settings.Directory, settings.AutoMerge, settings.Watch, settings.Poll = "/origin.git", "/jobs", true, 45*time.Minute, 30*time.Second
			rec := h.run(t, settings)
			check.mustAccept(t, "approve the check")

			if rec.Status != tc.status || !strings.Contains(rec.Reason, tc.reason) || (tc.reason == "" && rec.Reason != "") {
				t.Fatalf("record: status %s reason %q, want %s with %q", rec.Status, rec.Reason, tc.status, tc.reason)
			}
			if len(fc.builds) != tc.builds || len(h.forge.merges) != tc.merges || len(fc.installs) != tc.installs {
				t.Fatalf("builds %+v, merges %d, installs %+v", fc.builds, len(h.forge.merges), fc.installs)
			}
			if tc.builds > 0 && fc.builds[0] != (BuildCandidateInput{Job: h.record.ID, Clone: "/jobs/" + h.record.ID, HeadSHA: "head1"}) {
				t.Errorf("build %+v", fc.builds[0])
			}
			want := &jobs.Candidate{Path: builtCandidate.Path, Version: builtCandidate.Version, Commit: builtCandidate.Commit}
			if got := rec.Candidate; tc.candidate != (got != nil) || got != nil && *got != *want {
				t.Errorf("candidate %+v, want it %v", got, tc.candidate)
			}
			if tc.installs > 0 && fc.installs[0] != (InstallInput{Job: h.record.ID, Candidate: builtCandidate.Path, MergeSHA: "merged1"}) {
				t.Errorf("install %+v", fc.installs[0])
			}
			wantInstalled := &jobs.Installed{Path: "/usr/local/bin/axlrd", Backup: "/usr/local/bin/axlrd.before-repair-" + h.record.ID}
			if got := rec.Installed; tc.installed != (got != nil) || got != nil && *got != *wantInstalled {
				t.Errorf("installed %+v, want it %v", got, tc.installed)
			}
			if got := h.made.triggers[len(h.made.triggers)-1]; got != tc.trigger {
				t.Errorf("last trigger %s, want %s", got, tc.trigger)
			}
			if tc.status == jobs.Blocked {
				decide := h.made.completed[len(h.made.completed)-1]
				if decide.Step != "decide" || decide.Recorded["decision"] != ceremonies.DecisionDecline || decide.Recorded["reason"] != rec.Reason {
					t.Errorf("decide recorded %+v", decide.Recorded)
				}
			}
			if len(*origin) != 1 {
				t.Fatalf("the origin session heard %d outcomes", len(*origin))
			}
			o := (*origin)[0]
			if o.Job != h.record.ID || o.Kind != "repair" || o.Status != string(tc.status) || o.PullRequest != 7 || o.URL != "https://github.com/o/r/pull/7" ||
				o.MergeSHA != rec.MergeSHA || !strings.Contains(o.Reason, tc.note) || (tc.note == "" && o.Reason != "") {
				t.Errorf("outcome %+v, want its reason to hold %q", o, tc.note)
			}
		})
	}
}

// TestCandidateDeclinedBounded: a build's output past the decide step's
// 2000 bytes is quoted by its end, cut on a character.
func TestCandidateDeclinedBounded(t *testing.T) {
	long := "go build in /jobs/x: exit status 1\n" + strings.Repeat("é", 1500) + "\nmain.go:3: undefined: x"
	got := candidateDeclined(long)
	if len(got) > candidateReasonBytes || !strings.HasPrefix(got, "the repaired axlrd/axlr-tui does not build: …") ||
		!strings.HasSuffix(got, "\nmain.go:3: undefined: x") || !strings.Contains(got, "ééé") {
		t.Errorf("%d bytes: %.80q…", len(got), got)
	}
	if !utf8ValidString(got) {
		t.Error("the cut split a character")
	}
	if got := candidateDeclined("short\n"); got != "the repaired axlrd/axlr-tui does not build: short" {
		t.Errorf("a short output: %q", got)
	}
}

func utf8ValidString(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestJobCandidateWhileAwaitingMerge: the person deciding the merge sees
// the candidate in the record, built before the decision was asked.
func TestJobCandidateWhileAwaitingMerge(t *testing.T) {
	h := newJobHarness(t, newScripted(repairModel...), greenChecks)
	fc := &fakeCandidate{build: builtCandidate}
	fc.register(h.env)
	var check, merge outcome
	var pending jobs.Record
	h.decideAt(time.Minute, JobDecision{RequestID: "d-1", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &check)
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryJob)
		if err == nil {
			err = v.Get(&pending)
		}
		if err != nil {
			t.Error(err)
		}
	}, 2*time.Minute)
	h.decideAt(3*time.Minute, JobDecision{RequestID: "d-2", Job: h.record.ID, Kind: jobs.PendingMerge, Approve: true}, &merge)
	rec := h.run(t, JobSettings{Remote: "/origin.git", Directory: "/jobs", Candidate: true, Watch: 45 * time.Minute, Poll: 30 * time.Second})
	check.mustAccept(t, "approve the check")
	merge.mustAccept(t, "approve the merge")
	if pending.Status != jobs.AwaitingMerge || pending.Candidate == nil || pending.Candidate.Version != builtCandidate.Version {
		t.Fatalf("while awaiting the merge: %+v", pending)
	}
	if rec.Status != jobs.Completed || len(fc.builds) != 1 || rec.Installed != nil {
		t.Fatalf("record %+v, builds %d", rec, len(fc.builds))
	}
}

// TestJobSearchAttributes: the job's id, kind, repository, status and,
// once opened, pull request are upserted whenever what they show changes,
// ending with the job's last status.
func TestJobSearchAttributes(t *testing.T) {
	h := newJobHarness(t, newScripted(repairModel...), greenChecks)
	seen := watchSearch(h.env)
	var check outcome
	h.decideAt(time.Minute, JobDecision{RequestID: "d-1", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &check)
	rec := h.run(t, JobSettings{Remote: "/origin.git", Directory: "/jobs", AutoMerge: true, Watch: 45 * time.Minute, Poll: 30 * time.Second})
	check.mustAccept(t, "approve the check")
	if rec.Status != jobs.Completed {
		t.Fatalf("record %+v", rec)
	}
	var got []string
	for i, s := range *seen {
		if s.job != h.record.ID || s.kind != "repair" || s.repository != "o/r" {
			t.Errorf("upsert %d: %+v", i, s)
		}
		if i > 0 && s == (*seen)[i-1] {
			t.Errorf("upsert %d repeats the one before: %+v", i, s)
		}
		pr := "-"
		if s.hasPullRequest {
			pr = fmt.Sprint(s.pullRequest)
		}
		got = append(got, s.status+"/"+pr)
	}
	if got, want := strings.Join(got, " "), "running/- awaiting_approval/- running/- running/7 completed/7"; got != want {
		t.Errorf("upserted (status/pull request): %s, want %s", got, want)
	}
}

// TestJobOriginGone: an origin session whose workflow is gone does not
// stop the job.
func TestJobOriginGone(t *testing.T) {
	h := newJobHarness(t, newScripted(repairModel...), greenChecks)
	origin := watchOrigin(h.env, errors.New("unknown external workflow execution"))
	h.record.OriginSession = originSession
	var check outcome
	h.decideAt(time.Minute, JobDecision{RequestID: "d-1", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &check)
	rec := h.run(t, JobSettings{Remote: "/origin.git", Directory: "/jobs", AutoMerge: true, Watch: 45 * time.Minute, Poll: 30 * time.Second})
	if rec.Status != jobs.Completed || len(*origin) != 1 {
		t.Fatalf("record %+v, outcomes %d", rec, len(*origin))
	}
}

// mergedJob is a completed job with a candidate, as the registry holds it.
func mergedJob() jobs.Record {
	return jobs.Record{ID: "20261201-1200-testparse-fails", Kind: jobs.Repair, Repository: "o/r", Status: jobs.Completed,
		PullRequest: 7, MergeSHA: "merged1", OriginSession: originSession,
		Candidate: &jobs.Candidate{Path: builtCandidate.Path, Version: builtCandidate.Version, Commit: builtCandidate.Commit},
		Updated:   time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)}
}

// TestJobInstall: `jobs install` installs a merged job's candidate, also
// over the axlr-tui the caller runs, reports the record with Installed to
// the registry and tells the origin session to restart; a job that is not
// installable, or an install the activity refuses, fails the workflow
// with the reason.
func TestJobInstall(t *testing.T) {
	const backupExists = "install over /usr/local/bin/axlrd: the backup /usr/local/bin/axlrd.before-repair-x exists already"
	tests := []struct {
		name       string
		record     func(*jobs.Record)
		installErr error
		err        string
	}{
		{name: "installed"},
		{name: "installed already", record: func(r *jobs.Record) {
			r.Installed = &jobs.Installed{Path: "/bin/axlrd", Backup: "/bin/axlrd.before-repair-x"}
		},
			err: "job 20261201-1200-testparse-fails is installed already over /bin/axlrd (the previous executable is kept as /bin/axlrd.before-repair-x)"},
		{name: "no candidate", record: func(r *jobs.Record) { r.Candidate = nil },
			err: "job 20261201-1200-testparse-fails has no candidate to install"},
		{name: "blocked", record: func(r *jobs.Record) { r.Status, r.MergeSHA = jobs.Blocked, "" },
			err: "job 20261201-1200-testparse-fails is blocked, not merged: only a merged job is installed"},
		{name: "running", record: func(r *jobs.Record) { r.Status = jobs.Running },
			err: "job 20261201-1200-testparse-fails is running, not merged"},
		{name: "the activity refuses", installErr: temporal.NewNonRetryableApplicationError(backupExists, ErrTypeInstallRefused, nil), err: backupExists},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(JobInstall, workflow.RegisterOptions{Name: JobInstallWorkflow})
			fc := &fakeCandidate{installErr: tc.installErr}
			fc.register(env)
			var reported []jobs.Record
			env.OnSignalExternalWorkflow(mock.Anything, RegistryWorkflowID, "", SignalJobRecord, mock.Anything).Run(func(args mock.Arguments) {
				reported = append(reported, args.Get(4).(jobs.Record))
			}).Return(nil)
			origin := watchOrigin(env, nil)
			rec := mergedJob()
			if tc.record != nil {
				tc.record(&rec)
			}
			env.ExecuteWorkflow(JobInstallWorkflow, JobInstallInput{Record: rec, TUIPath: "/home/p/bin/axlr-tui"})
			if !env.IsWorkflowCompleted() {
				t.Fatal("the install did not end")
			}
			err := env.GetWorkflowError()
			if tc.err != "" {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) || app.Type() != ErrTypeInstallRefused || !strings.Contains(app.Message(), tc.err) {
					t.Fatalf("error %v, want an %s with %q", err, ErrTypeInstallRefused, tc.err)
				}
				if len(reported) != 0 || len(*origin) != 0 {
					t.Errorf("a refused install reported %+v and told the origin %+v", reported, *origin)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got jobs.Record
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			want := jobs.Installed{Path: "/usr/local/bin/axlrd", Backup: "/usr/local/bin/axlrd.before-repair-" + rec.ID}
			if got.Installed == nil || *got.Installed != want || !got.Updated.After(rec.Updated) {
				t.Fatalf("record %+v", got)
			}
			if len(fc.installs) != 1 || fc.installs[0] != (InstallInput{Job: rec.ID, Candidate: builtCandidate.Path, MergeSHA: "merged1", TUIPath: "/home/p/bin/axlr-tui"}) {
				t.Errorf("installs %+v", fc.installs)
			}
			if len(reported) != 1 || reported[0].Installed == nil || *reported[0].Installed != want {
				t.Errorf("reported %+v", reported)
			}
			if len(*origin) != 1 || (*origin)[0].Status != "completed" || !strings.Contains((*origin)[0].Reason, "restart axlrd") ||
				!strings.Contains((*origin)[0].Reason, "/usr/local/bin/axlr-tui (the previous one kept as /usr/local/bin/axlr-tui.before-repair-"+rec.ID+")") {
				t.Errorf("origin told %+v", *origin)
			}
		})
	}
}
