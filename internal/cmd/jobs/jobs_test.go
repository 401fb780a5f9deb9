package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// fakeClient answers from records; a watch hands out events and ends
// with end, or blocks until its context ends when block is set.
type fakeClient struct {
	records []domain.Record
	closed  bool

	launched    []client.LaunchRequest
	launchErr   error
	events      []contract.Event
	end         client.JobEnd
	block       bool
	watched     chan struct{}
	interrupted []string
	decisions   []workflows.JobDecision
	recovered   []string
	installed   []string
	queued      []string
	unqueued    []string
	retries     map[string][]client.Retry
	// retriesAt, when set, answers the n-th JobRetries (from 1).
	retriesAt func(n int) []client.Retry
	mu        sync.Mutex
	retryAsks int
}

func (f *fakeClient) CheckWorker(context.Context) error             { return nil }
func (f *fakeClient) Jobs(context.Context) ([]domain.Record, error) { return f.records, nil }
func (f *fakeClient) Job(_ context.Context, id string) (domain.Record, error) {
	return domain.Find(f.records, id)
}
func (f *fakeClient) JobNow(ctx context.Context, id string) (domain.Record, error) {
	return f.Job(ctx, id)
}
func (f *fakeClient) JobRetries(_ context.Context, id string) ([]client.Retry, error) {
	if f.retriesAt != nil {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.retryAsks++
		return f.retriesAt(f.retryAsks), nil
	}
	return f.retries[id], nil
}

func (f *fakeClient) LaunchJob(_ context.Context, req client.LaunchRequest) (domain.Record, error) {
	f.launched = append(f.launched, req)
	if f.launchErr != nil {
		return domain.Record{}, f.launchErr
	}
	return domain.Record{ID: "20261201-1200-parse-fails", Kind: req.Kind, Status: domain.Preparing, Repository: "underpass-ai/axlr", Brief: req.Brief}, nil
}

func (f *fakeClient) WatchJob(ctx context.Context, _ string, w client.Watcher) (client.JobEnd, error) {
	for _, ev := range f.events {
		w.Event(ev)
	}
	if f.watched != nil {
		close(f.watched)
	}
	if f.block {
		<-ctx.Done()
		return client.JobEnd{}, ctx.Err()
	}
	return f.end, nil
}

func (f *fakeClient) InterruptJob(_ context.Context, id string) error {
	f.interrupted = append(f.interrupted, id)
	return nil
}

func (f *fakeClient) DecideJob(_ context.Context, dec workflows.JobDecision) (domain.Record, error) {
	f.decisions = append(f.decisions, dec)
	r, err := domain.Find(f.records, dec.Job)
	r.Pending, r.Status = nil, domain.Running
	return r, err
}

func (f *fakeClient) RecoverJob(_ context.Context, id, model string) (domain.Record, error) {
	f.recovered = append(f.recovered, id+" "+model)
	r, err := domain.Find(f.records, id)
	if err == nil && r.Status != domain.Interrupted {
		return domain.Record{}, &client.JobRefusedError{Refusal: domain.Refusal{Code: domain.RefuseNotInterrupted, Reason: "repair " + id + " is " + string(r.Status) + "; only an interrupted job is recovered"}}
	}
	r.Status = domain.Preparing
	return r, err
}

func (f *fakeClient) InstallJob(_ context.Context, id, tuiPath string) (domain.Record, error) {
	f.installed = append(f.installed, id+" "+tuiPath)
	r, err := domain.Find(f.records, id)
	if err == nil && r.Status != domain.Completed {
		return domain.Record{}, fmt.Errorf("job %s is %s: only a merged job is installed", id, r.Status)
	}
	r.Installed = &domain.Installed{Path: "/usr/local/bin/axlrd", Backup: "/usr/local/bin/axlrd.before-repair-" + id}
	return r, err
}

func (f *fakeClient) QueueJob(_ context.Context, id string) (workflows.QueueView, error) {
	r, err := domain.Find(f.records, id)
	if err == nil && r.Status != domain.AwaitingMerge {
		return workflows.QueueView{}, fmt.Errorf("job %s is %s: only a job that waits for its merge decision is queued", id, r.Status)
	}
	f.queued = append(f.queued, id)
	return workflows.QueueView{Repository: r.Repository, Base: "main", Entries: []workflows.QueueEntry{{Job: "other"}, {Job: id}}}, err
}

func (f *fakeClient) UnqueueJob(_ context.Context, id, reason string) (workflows.QueueView, error) {
	f.unqueued = append(f.unqueued, id+": "+reason)
	return workflows.QueueView{Repository: "underpass-ai/axlr", Base: "main"}, nil
}

func (f *fakeClient) Close() { f.closed = true }

var (
	at      = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	records = []domain.Record{
		{ID: "20261201-1200-the-watch-never-settles", Kind: domain.Repair, Status: domain.AwaitingMerge, Step: "decide", Repository: "underpass-ai/axlr",
			Queue:       &domain.QueuePlace{Position: 2, State: domain.QueueWaiting, Note: "queued"},
			PullRequest: 12, URL: "https://github.com/underpass-ai/axlr/pull/12", HeadSHA: "abc123", Attempt: 1, Created: at, Updated: at.Add(time.Hour),
			Brief: "the watch never settles\nwhen checks register late"},
		{ID: "20261201-1100-add-a-changelog-entry", Kind: domain.Improve, Status: domain.Preparing, Created: at.Add(-time.Hour), Updated: at.Add(-time.Hour)},
	}
)

// TestJobs: the list is a table of every job, newest first as the
// registry gives them; show prints one record's fields; --json prints the
// records; an unknown id says how to list them; no job yet says how to
// start one.
func TestJobs(t *testing.T) {
	tests := []struct {
		name           string
		args           []string
		records        []domain.Record
		stdout, stderr string
		code           int
		retries        map[string][]client.Retry
	}{
		{name: "list", args: []string{}, records: records, stdout: "" +
			"ID                                     KIND     STATUS          STEP    PULL REQUEST  QUEUE      UPDATED\n" +
			"20261201-1200-the-watch-never-settles  repair   awaiting_merge  decide  #12           #2 queued  2026-12-01T13:00:00Z\n" +
			"20261201-1100-add-a-changelog-entry    improve  preparing       -       -             -          2026-12-01T11:00:00Z\n"},
		{name: "none yet", args: []string{}, stderr: "axlr-tui: no jobs yet; start one with --repair \"<failure brief>\" or --improve \"<improvement brief>\"\n"},
		{name: "show", args: []string{"show", records[0].ID}, records: records, stdout: "" +
			"id:           20261201-1200-the-watch-never-settles\n" +
			"kind:         repair\n" +
			"status:       awaiting_merge\n" +
			"repository:   underpass-ai/axlr\n" +
			"step:         decide\n" +
			"pull request: #12 https://github.com/underpass-ai/axlr/pull/12\n" +
			"head:         abc123\n" +
			"queue:        #2 queued: queued\n" +
			"attempt:      1\n" +
			"created:      2026-12-01T12:00:00Z\n" +
			"updated:      2026-12-01T13:00:00Z\n" +
			"brief:        the watch never settles\n"},
		{name: "show a job whose clone is tried again", args: []string{"show", records[1].ID}, records: records,
			retries: map[string][]client.Retry{records[1].ID: {{Activity: workflows.ActivityForgePrepare, Attempt: 3, MaxAttempts: 6,
				Failure: "clone http://127.0.0.1:1/o/r.git: dial tcp 127.0.0.1:1: connect: connection refused"}}},
			stdout: "" +
				"id:           20261201-1100-add-a-changelog-entry\n" +
				"kind:         improve\n" +
				"status:       preparing\n" +
				"created:      2026-12-01T11:00:00Z\n" +
				"updated:      2026-12-01T11:00:00Z\n" +
				"retrying:     forge.Prepare, attempt 3 of 6 running; the last failed: clone http://127.0.0.1:1/o/r.git: dial tcp 127.0.0.1:1: connect: connection refused\n"},
		{name: "unknown", args: []string{"show", "nope"}, records: records, code: 1,
			stderr: "axlr-tui: no such job: nope (axlr-tui jobs lists the jobs)\n"},
		{name: "usage", args: []string{"show"}, code: 2, stderr: "axlr-tui: usage: axlr-tui jobs show ID [--json]\n"},
		{name: "recover", args: []string{"recover", "i", "--model", "m2"}, records: []domain.Record{{ID: "i", Status: domain.Interrupted, Session: "s1", Clone: "/c/i"}},
			stdout: "recovered job i: it runs again in session s1 and clone /c/i (axlr-tui jobs watch i follows it)\n"},
		{name: "recover a running job", args: []string{"recover", records[0].ID}, records: records, code: 1,
			stderr: "axlr-tui: repair 20261201-1200-the-watch-never-settles is awaiting_merge; only an interrupted job is recovered\n"},
		{name: "install", args: []string{"install", "d"}, records: []domain.Record{{ID: "d", Status: domain.Completed, Candidate: &domain.Candidate{Path: "/c/d.bin", Version: "repair-d-0123456789ab"}}},
			stdout: "installed repair-d-0123456789ab over /usr/local/bin/axlrd (the previous one kept as /usr/local/bin/axlrd.before-repair-d); restart axlrd (and any axlr-tui running) to run it: axlrd never restarts itself. To go back, rename a backup over its executable.\n"},
		{name: "install a running job", args: []string{"install", records[0].ID}, records: records, code: 1,
			stderr: "axlr-tui: job 20261201-1200-the-watch-never-settles is awaiting_merge: only a merged job is installed\n"},
		{name: "queue", args: []string{"queue", records[0].ID}, records: records,
			stdout: "queued job 20261201-1200-the-watch-never-settles: #2 in the merge queue of underpass-ai/axlr (main)\n"},
		{name: "queue a job that does not wait for its merge", args: []string{"queue", records[1].ID}, records: records, code: 1,
			stderr: "axlr-tui: job 20261201-1100-add-a-changelog-entry is preparing: only a job that waits for its merge decision is queued\n"},
		{name: "unqueue", args: []string{"unqueue", records[0].ID, "--reason", "not yet"}, records: records,
			stdout: "took job 20261201-1200-the-watch-never-settles off the merge queue of underpass-ai/axlr (main); it waits for your merge decision\n"},
		{name: "deny without a reason", args: []string{"deny", records[0].ID}, code: 2,
			stderr: "axlr-tui: jobs deny needs --reason TEXT: the job's record and the model keep it\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := factory.Test()
			fake := &fakeClient{records: tt.records, retries: tt.retries}
			f := &factory.Factory{IOStreams: ios}
			opts := &Options{IO: ios, Client: func(context.Context) (Client, error) { return fake, nil },
				Executable: func() (string, error) { return "/usr/local/bin/axlr-tui", nil }}
			cmd := NewCmdJobs(f, func(ctx context.Context, o *Options) error {
				opts.ID, opts.JSON, opts.Action, opts.Model = o.ID, o.JSON, o.Action, o.Model
				return jobsRun(ctx, opts)
			})
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			code := cmdutil.ExitCode(cmd.Execute(), errOut)
			if code != tt.code || out.String() != tt.stdout || errOut.String() != tt.stderr {
				t.Fatalf("exit %d, stdout\n%s\nstderr\n%s", code, out.String(), errOut.String())
			}
		})
	}
}

func TestRetryText(t *testing.T) {
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		r    client.Retry
		want string
	}{
		{client.Retry{Activity: "forge.Prepare", Attempt: 2, MaxAttempts: 6, Failure: "refused\nat line 2", Next: now.Add(3600 * time.Millisecond)},
			"forge.Prepare, attempt 2 of 6 in 4s; the last failed: refused"},
		{client.Retry{Activity: "session.ModelRequest", Attempt: 5, Failure: "429", Next: now.Add(-time.Second)},
			"session.ModelRequest, attempt 5 due; the last failed: 429"},
	} {
		if got := retryText(tt.r, now); got != tt.want {
			t.Errorf("retryText(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// TestJobsJSON: --json prints the records as one line, the job record's
// JSON (its field names are pinned in package jobs).
func TestJobsJSON(t *testing.T) {
	ios, _, out, _ := factory.Test()
	fake := &fakeClient{records: records}
	opts := &Options{IO: ios, Client: func(context.Context) (Client, error) { return fake, nil }, JSON: true}
	if err := jobsRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || len(got) != 2 || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if got[0]["id"] != records[0].ID || got[0]["pull_request"] != float64(12) || !fake.closed {
		t.Fatalf("first record %v", got[0])
	}
}
