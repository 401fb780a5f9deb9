package cmdtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// Jobs is axlrd as the jobs commands see it: it answers from Records,
// keeps what it is asked to do, and plays a scripted watch (Events, then
// End, or until its context ends when Block is set).
type Jobs struct {
	Records []domain.Record
	// WorkerErr fails CheckWorker.
	WorkerErr error
	// NowErr fails JobNow: the job's workflow is gone.
	NowErr error
	// LaunchErr refuses LaunchJob.
	LaunchErr error
	Events    []contract.Event
	End       client.JobEnd
	Block     bool
	// Watched, when set, is closed once the watch has told its events.
	Watched chan struct{}
	Retries map[string][]client.Retry
	// RetriesAt, when set, answers the n-th JobRetries (from 1).
	RetriesAt func(n int) []client.Retry

	Closed      bool
	Launched    []workflows.LaunchRequest
	Interrupted []string
	Decisions   []workflows.JobDecision
	Recovered   []string // "id model"
	Installed   []string // "id path"
	Queued      []string
	Unqueued    []string // "id: reason"

	mu        sync.Mutex
	retryAsks int
}

// CheckWorker fails with WorkerErr.
func (f *Jobs) CheckWorker(context.Context) error { return f.WorkerErr }

// Jobs returns Records.
func (f *Jobs) Jobs(context.Context) ([]domain.Record, error) { return f.Records, nil }

// Job finds id in Records.
func (f *Jobs) Job(_ context.Context, id string) (domain.Record, error) {
	return domain.Find(f.Records, id)
}

// JobNow finds id in Records, as its workflow would answer, unless
// NowErr fails it.
func (f *Jobs) JobNow(ctx context.Context, id string) (domain.Record, error) {
	if f.NowErr != nil {
		return domain.Record{}, f.NowErr
	}
	return f.Job(ctx, id)
}

// JobRetries answers from RetriesAt, else Retries.
func (f *Jobs) JobRetries(_ context.Context, id string) ([]client.Retry, error) {
	if f.RetriesAt != nil {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.retryAsks++
		return f.RetriesAt(f.retryAsks), nil
	}
	return f.Retries[id], nil
}

// LaunchJob admits a preparing job of underpass-ai/axlr, unless
// LaunchErr refuses it.
func (f *Jobs) LaunchJob(_ context.Context, req workflows.LaunchRequest) (domain.Record, error) {
	f.Launched = append(f.Launched, req)
	if f.LaunchErr != nil {
		return domain.Record{}, f.LaunchErr
	}
	return domain.Record{ID: "20261201-1200-parse-fails", Kind: req.Kind, Status: domain.Preparing, Repository: "underpass-ai/axlr", Brief: req.Brief}, nil
}

// WatchJob tells Events, then ends with End (or with its context, under
// Block).
func (f *Jobs) WatchJob(ctx context.Context, _ string, w client.Watcher) (client.JobEnd, error) {
	for _, ev := range f.Events {
		w.Event(ev)
	}
	if f.Watched != nil {
		close(f.Watched)
	}
	if f.Block {
		<-ctx.Done()
		return client.JobEnd{}, ctx.Err()
	}
	return f.End, nil
}

// InterruptJob keeps id.
func (f *Jobs) InterruptJob(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Interrupted = append(f.Interrupted, id)
	return nil
}

// DecideJob keeps the decision; the job runs again.
func (f *Jobs) DecideJob(_ context.Context, dec workflows.JobDecision) (domain.Record, error) {
	f.Decisions = append(f.Decisions, dec)
	r, err := domain.Find(f.Records, dec.Job)
	r.Pending, r.Status = nil, domain.Running
	return r, err
}

// RecoverJob runs an interrupted job again and refuses any other.
func (f *Jobs) RecoverJob(_ context.Context, id, model string) (domain.Record, error) {
	f.Recovered = append(f.Recovered, id+" "+model)
	r, err := domain.Find(f.Records, id)
	if err == nil && r.Status != domain.Interrupted {
		return domain.Record{}, &workflows.JobRefusedError{Refusal: domain.Refusal{Code: domain.RefuseNotInterrupted,
			Reason: "repair " + id + " is " + string(r.Status) + "; only an interrupted job is recovered"}}
	}
	r.Status = domain.Preparing
	return r, err
}

// InstallJob installs a completed job's candidate over
// /usr/local/bin/axlrd and refuses any other.
func (f *Jobs) InstallJob(_ context.Context, id, tuiPath string) (domain.Record, error) {
	f.Installed = append(f.Installed, id+" "+tuiPath)
	r, err := domain.Find(f.Records, id)
	if err == nil && r.Status != domain.Completed {
		return domain.Record{}, fmt.Errorf("job %s is %s: only a merged job is installed", id, r.Status)
	}
	r.Installed = &domain.Installed{Path: "/usr/local/bin/axlrd", Backup: "/usr/local/bin/axlrd.before-repair-" + id}
	return r, err
}

// QueueJob queues a job that waits for its merge second in main's queue,
// and refuses any other.
func (f *Jobs) QueueJob(_ context.Context, id string) (workflows.QueueView, error) {
	r, err := domain.Find(f.Records, id)
	if err == nil && r.Status != domain.AwaitingMerge {
		return workflows.QueueView{}, fmt.Errorf("job %s is %s: only a job that waits for its merge decision is queued", id, r.Status)
	}
	f.Queued = append(f.Queued, id)
	return workflows.QueueView{Repository: r.Repository, Base: "main", Entries: []workflows.QueueEntry{{Job: "other"}, {Job: id}}}, err
}

// UnqueueJob keeps id and reason and returns main's queue without it.
func (f *Jobs) UnqueueJob(_ context.Context, id, reason string) (workflows.QueueView, error) {
	f.Unqueued = append(f.Unqueued, id+": "+reason)
	return workflows.QueueView{Repository: "underpass-ai/axlr", Base: "main"}, nil
}

// Close marks the client closed.
func (f *Jobs) Close() { f.Closed = true }

// JobsAt is the time the job fixtures start at.
var JobsAt = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// JobRecords are two jobs, newest first: a repair that waits for its
// merge, second in its queue, and an improvement that prepares.
func JobRecords() []domain.Record {
	at := JobsAt
	return []domain.Record{
		{ID: "20261201-1200-the-watch-never-settles", Kind: domain.Repair, Status: domain.AwaitingMerge, Step: "decide", Repository: "underpass-ai/axlr",
			Queue:       &domain.QueuePlace{Position: 2, State: domain.QueueWaiting, Note: "queued"},
			PullRequest: 12, URL: "https://github.com/underpass-ai/axlr/pull/12", HeadSHA: "abc123", Attempt: 1, Created: at, Updated: at.Add(time.Hour),
			Recoveries: 1, Recovery: "recovery 1 continued instance axlr-s1-1764590400 at watch",
			Brief: "the watch never settles\nwhen checks register late"},
		{ID: "20261201-1100-add-a-changelog-entry", Kind: domain.Improve, Status: domain.Preparing, Created: at.Add(-time.Hour), Updated: at.Add(-time.Hour)},
	}
}

// WaitingCheck is a repair that waits for the approval of its check
// command.
var WaitingCheck = domain.Record{ID: "20261201-1200-parse-fails", Kind: domain.Repair, Status: domain.AwaitingApproval, Session: "s1", Sessions: []string{"s1"},
	Pending: &domain.Pending{Kind: domain.PendingCheck, Command: "go test ./..."}}
