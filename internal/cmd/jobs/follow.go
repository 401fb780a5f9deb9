package jobs

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
	"github.com/underpass-ai/axlr/internal/cmd/exec"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// Result is what a job's watch ends with: the runtime contract's result
// of the job's execution, its status the job's (completed only when the
// job merged and completed, needs_decision while it waits for the person),
// with the job's record.
type Result struct {
	contract.Result
	Job domain.Record `json:"job"`
}

// jobLine is the first line of a job's watch with --json.
type jobLine struct {
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

// follow prints the job's record, follows its session until the job next
// needs the person or ends, and prints how it stands; its error carries
// the exit code. The first Ctrl+C interrupts the job, the second leaves.
func follow(ctx context.Context, ios *factory.IOStreams, interrupts <-chan os.Signal, asJSON bool, c Client, first domain.Record) error {
	stderr := cmdutil.NewLockedWriter(ios.ErrOut)
	if asJSON {
		cmdutil.WriteJSONLine(ios.Out, jobLine{Type: "job", Job: first})
	} else {
		fmt.Fprintf(stderr, "axlr-tui: job %s (%s of %s): %s\n", first.ID, first.Kind.Noun(), first.Repository, first.Status)
	}
	wctx, stop := cmdutil.OnInterrupt(ctx, interrupts, stderr,
		fmt.Sprintf("axlr-tui: interrupting job %s (Ctrl+C again to leave without waiting; axlr-tui jobs recover %s runs it again)", first.ID, first.ID),
		func(ctx context.Context) error { return c.InterruptJob(ctx, first.ID) })
	var retried <-chan struct{}
	rctx, stopRetries := context.WithCancel(wctx)
	if !asJSON {
		// The --json lines are the job's and its session's, as pinned.
		retried = reportRetries(rctx, c, first.ID, stderr, retryEvery)
	}
	end, err := c.WatchJob(wctx, first.ID, exec.NewPrinter(ios.Out, stderr, asJSON))
	stopRetries()
	if retried != nil {
		<-retried
	}
	if left := stop(); err != nil {
		if left {
			return cmdutil.ErrLeft
		}
		return err
	}
	res := jobResult(end)
	if asJSON {
		cmdutil.WriteJSONLine(ios.Out, resultLine{Type: "result", Result: res})
	} else {
		printEnd(ios.Out, stderr, end.Record)
	}
	return cmdutil.StatusExit(res.Status)
}

// retryEvery is how often a job's watch without --json asks whether one of
// the job's activities is tried again.
var retryEvery = 2 * time.Second

// reportRetries tells w of each attempt of the job's activities that
// follows a failed one, once, as jobs show words it: the record says
// "preparing" while a clone is tried for a minute. It asks every every
// until ctx ends, then closes the channel it returns.
func reportRetries(ctx context.Context, c Client, id string, w io.Writer, every time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		told := map[string]int32{} // activity id -> the attempt told
		tick := time.NewTicker(every)
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
				fmt.Fprintf(w, "axlr-tui: retrying %s\n", retryText(r, time.Now()))
			}
		}
	}()
	return done
}

// printEnd says where the job stands on stdout, and on stderr what the
// person can do about it.
func printEnd(stdout, stderr io.Writer, r domain.Record) {
	switch {
	case r.Pending != nil && r.Pending.Kind == domain.PendingCheck:
		fmt.Fprintf(stdout, "job %s waits for your approval of its check command: %s\n", r.ID, r.Pending.Command)
		fmt.Fprintf(stderr, "axlr-tui: axlr-tui jobs approve %s runs it; axlr-tui jobs deny %s --reason TEXT sends the model back\n", r.ID, r.ID)
	case r.Pending != nil:
		fmt.Fprintf(stdout, "job %s waits for your merge decision: pull request #%d %s is green at %s\n", r.ID, r.PullRequest, r.URL, shortSHA(r.Pending.HeadSHA))
		if c := r.Candidate; c != nil {
			fmt.Fprintf(stderr, "axlr-tui: try %s first: the candidate is in %s\n", c.Version, c.Path)
		}
		if r.Pending.Behind {
			// Behind is what a base that must be up to date says: it
			// refuses the merge until the branch is updated.
			fmt.Fprintf(stderr, "axlr-tui: its base moved on again after its branch was updated, and must be up to date: axlr-tui jobs queue %s updates it and merges it once it is green; axlr-tui jobs decline %s --reason TEXT leaves it open and blocks the job\n", r.ID, r.ID)
			break
		}
		fmt.Fprintf(stderr, "axlr-tui: axlr-tui jobs approve %s merges it; axlr-tui jobs decline %s --reason TEXT leaves it open and blocks the job\n", r.ID, r.ID)
	case r.Status == domain.Completed:
		fmt.Fprintf(stdout, "job %s completed: pull request #%d %s merged as %s\n", r.ID, r.PullRequest, r.URL, shortSHA(r.MergeSHA))
	default:
		fmt.Fprintf(stdout, "job %s %s: %s\n", r.ID, r.Status, cmp.Or(r.Reason, "no reason was recorded"))
		if r.Status == domain.Interrupted {
			fmt.Fprintf(stderr, "axlr-tui: axlr-tui jobs recover %s runs it again\n", r.ID)
		}
	}
}

// printEnded prints an ended job whose workflow is gone as a watch that
// ended would.
func printEnded(opts *Options, r domain.Record) error {
	res := jobResult(client.JobEnd{Record: r})
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, jobLine{Type: "job", Job: r})
		cmdutil.WriteJSONLine(opts.IO.Out, resultLine{Type: "result", Result: res})
	} else {
		printEnd(opts.IO.Out, opts.IO.ErrOut, r)
	}
	return cmdutil.StatusExit(res.Status)
}

func shortSHA(s string) string { return s[:min(len(s), 12)] }

// decideRun takes the person's decision on what the job waits for: the
// check command (approve or deny) or the merge (approve or decline).
func decideRun(ctx context.Context, opts *Options, c Client) error {
	id := opts.ID
	rec, err := c.JobNow(ctx, id)
	if err != nil {
		return err
	}
	if rec.Pending == nil {
		return fmt.Errorf("job %s waits for no decision: it is %s", id, rec.Status)
	}
	kind := rec.Pending.Kind
	switch {
	case opts.Action == "deny" && kind != domain.PendingCheck:
		return fmt.Errorf("job %s waits for its merge decision, not a check command: axlr-tui jobs decline %s --reason TEXT", id, id)
	case opts.Action == "decline" && kind != domain.PendingMerge:
		return fmt.Errorf("job %s waits for its check command, not a merge decision: axlr-tui jobs deny %s --reason TEXT", id, id)
	}
	after, err := c.DecideJob(ctx, workflows.JobDecision{Job: id, Kind: kind, Approve: opts.Action == "approve", Reason: opts.Reason})
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, after)
		return nil
	}
	what := "the check command " + rec.Pending.Command
	if kind == domain.PendingMerge {
		what = fmt.Sprintf("the merge of pull request #%d", rec.PullRequest)
	}
	verb := map[string]string{"approve": "approved", "deny": "denied", "decline": "declined"}[opts.Action]
	fmt.Fprintf(opts.IO.Out, "%s %s of job %s; it is %s now (axlr-tui jobs watch %s follows it)\n", verb, what, id, after.Status, id)
	return nil
}
