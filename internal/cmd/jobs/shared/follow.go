package shared

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
)

// Result is what a job's watch ends with: the runtime contract's result
// of the job's execution, its status the job's (completed only when the
// job merged and completed, needs_decision while it waits for the person),
// with the job's record.
type Result struct {
	contract.Result
	Job domain.Record `json:"job"`
}

// JobLine is the first line of a job's watch with --json.
type JobLine struct {
	Type string        `json:"type"`
	Job  domain.Record `json:"job"`
}

// resultLine is the last.
type resultLine struct {
	Type   string `json:"type"`
	Result Result `json:"result"`
}

// jobResult is the result of a watch that stopped at end.
func jobResult(end client.JobEnd) Result {
	rec := end.Record
	r := contract.Result{Schema: contract.Schema, SessionID: rec.Session, Sessions: rec.Sessions,
		ToolCalls: []contract.ToolCallRecord{}, Artifacts: []contract.Artifact{}}
	if end.Result != nil {
		r = *end.Result
	}
	switch rec.Status {
	case domain.Completed:
		r.Status = contract.Completed
	case domain.AwaitingApproval, domain.AwaitingMerge:
		r.Status = contract.NeedsDecision
	case domain.Interrupted:
		r.Status, r.Error = contract.Interrupted, cmp.Or(rec.Reason, r.Error)
	default:
		r.Status, r.Error = contract.Failed, cmp.Or(rec.Reason, r.Error, "the job ended "+string(rec.Status))
	}
	return Result{Result: r, Job: rec}
}

// Watcher is what a job's follow needs of axlrd.
type Watcher interface {
	WatchJob(ctx context.Context, id string, w client.Watcher) (client.JobEnd, error)
	InterruptJob(ctx context.Context, id string) error
	JobRetries(ctx context.Context, id string) ([]client.Retry, error)
}

// FollowOptions are how a job is followed.
type FollowOptions struct {
	IO *factory.IOStreams
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
	// Now is the clock a retry's next attempt is told against.
	Now  func() time.Time
	JSON bool
}

// RetryEvery is how often a job's watch without --json asks whether one of
// the job's activities is tried again; tests shorten it.
var RetryEvery = 2 * time.Second

// follow is the follow of job first.
func follow(o FollowOptions, c Watcher, first domain.Record) *cmdutil.Follow[client.JobEnd] {
	return &cmdutil.Follow[client.JobEnd]{
		IO: o.IO, Interrupts: o.Interrupts, JSON: o.JSON,
		First:     JobLine{Type: "job", Job: first},
		Started:   fmt.Sprintf("axlr-tui: job %s (%s of %s): %s", first.ID, first.Kind.Noun(), first.Repository, first.Status),
		Notice:    fmt.Sprintf("axlr-tui: interrupting job %s (Ctrl+C again to leave without waiting; axlr-tui jobs recover %s runs it again)", first.ID, first.ID),
		Interrupt: func(ctx context.Context) error { return c.InterruptJob(ctx, first.ID) },
		Watch: func(ctx context.Context, w client.Watcher) (client.JobEnd, error) {
			return c.WatchJob(ctx, first.ID, w)
		},
		// The --json lines are the job's and its session's, as pinned:
		// retries are told without --json only.
		Beside: func(ctx context.Context, stderr io.Writer) <-chan struct{} {
			return reportRetries(ctx, c, first.ID, stderr, o.Now)
		},
		End: func(end client.JobEnd) cmdutil.End {
			res := jobResult(end)
			return cmdutil.End{Line: resultLine{Type: "result", Result: res}, Status: res.Status,
				Print: func(stdout, stderr io.Writer) { printEnd(stdout, stderr, end.Record) }}
		},
	}
}

// Follow prints the job's record, follows its session until the job next
// needs the person or ends, and prints how it stands; its error carries
// the exit code. The first Ctrl+C interrupts the job, the second leaves.
func Follow(ctx context.Context, o FollowOptions, c Watcher, first domain.Record) error {
	return follow(o, c, first).Run(ctx)
}

// Ended prints an ended job whose workflow is gone as a watch that ended
// would.
func Ended(o FollowOptions, r domain.Record) error {
	return follow(o, nil, r).Ended(client.JobEnd{Record: r})
}

// reportRetries tells w of each attempt of the job's activities that
// follows a failed one, once, as jobs show words it: the record says
// "preparing" while a clone is tried for a minute. It asks every
// RetryEvery until ctx ends, then closes the channel it returns.
func reportRetries(ctx context.Context, c Watcher, id string, w io.Writer, now func() time.Time) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		told := map[string]int32{} // activity id -> the attempt told
		tick := time.NewTicker(RetryEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			retries, err := c.JobRetries(ctx, id)
			if err != nil {
				continue
			}
			for _, r := range retries {
				if told[r.ID] >= r.Attempt {
					continue
				}
				told[r.ID] = r.Attempt
				fmt.Fprintf(w, "axlr-tui: retrying %s\n", RetryText(r, now()))
			}
		}
	}()
	return done
}
