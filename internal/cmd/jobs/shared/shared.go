// Package shared holds what the jobs verbs share: a job's record as show
// prints it and its declared JSON fields, the follow of a job that watch,
// repair and improve print, and the decision approve, deny and decline
// take.
package shared

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// RecordFields are the fields of a job record (jobs.Record) that --json
// prints, in order; a test pins them to the type.
var RecordFields = []string{
	"id", "kind", "signature", "repository", "origin_session", "person", "session", "sessions", "clone", "brief", "status",
	"step", "step_attempt", "step_limit", "state", "instance", "check", "pending", "base", "pull_request", "url",
	"head_sha", "merge_sha", "files", "reason", "rounds", "red_rounds", "memory", "recoveries", "recovery", "host", "moves", "attempt", "candidate", "installed", "queue", "build", "created", "updated",
}

// RecordHelp is the --json field list of a command that prints job
// records, for its Long help.
func RecordHelp() string { return "Job record fields:\n" + cmdutil.FieldsHelp(RecordFields) }

// Usage is a verb's usage error: "usage: axlr-tui jobs show ID [--json]".
func Usage(verb string) string { return "usage: axlr-tui jobs " + verb }

// Queued is a job's place in its merge queue: "#2 queued", "ejected".
func Queued(r domain.Record) string {
	switch q := r.Queue; {
	case q == nil:
		return "-"
	case q.Position > 0:
		return fmt.Sprintf("#%d %s", q.Position, q.State)
	}
	return string(r.Queue.State)
}

// Pull is a job's pull request: "#12", "-".
func Pull(r domain.Record) string {
	if r.PullRequest == 0 {
		return "-"
	}
	return fmt.Sprintf("#%d", r.PullRequest)
}

// RetryText is an activity tried again, as jobs show prints it:
// "forge.Prepare, attempt 3 of 6 in 4s; the last failed: …".
func RetryText(r client.Retry, now time.Time) string {
	of := ""
	if r.MaxAttempts > 0 {
		of = fmt.Sprintf(" of %d", r.MaxAttempts)
	}
	when := "running"
	switch d := r.Next.Sub(now); {
	case r.Next.IsZero():
	case d > 0:
		when = "in " + d.Round(time.Second).String()
	default:
		when = "due"
	}
	return fmt.Sprintf("%s, attempt %d%s %s; the last failed: %s", r.Activity, r.Attempt, of, when, cmdutil.OneLine(r.Failure))
}

// PrintRecord prints a record's fields that are set, one per line.
func PrintRecord(out io.Writer, r domain.Record) {
	line := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			fmt.Fprintf(out, "%-13s %s\n", k+":", v)
		}
	}
	line("id", r.ID)
	line("kind", string(r.Kind))
	line("status", string(r.Status))
	line("repository", r.Repository)
	line("host", r.Host)
	line("step", strings.TrimPrefix(r.StepText(), "-"))
	line("state", r.State)
	line("instance", r.Instance)
	if r.PullRequest != 0 {
		line("pull request", fmt.Sprintf("#%d %s", r.PullRequest, r.URL))
	}
	line("head", r.HeadSHA)
	if q := r.Queue; q != nil {
		line("queue", strings.TrimSpace(strings.TrimPrefix(Queued(r), "-")+": "+q.Note))
	}
	line("merged as", r.MergeSHA)
	line("files", strings.Join(r.Files, ", "))
	line("reason", r.Reason)
	line("recovery", r.Recovery)
	for _, m := range r.Moves {
		line("moved", m)
	}
	for _, m := range r.Memory {
		line("memory", m)
	}
	line("session", r.Session)
	line("origin", r.OriginSession)
	line("clone", r.Clone)
	if r.Attempt > 0 {
		line("attempt", fmt.Sprint(r.Attempt))
	}
	line("created", r.Created.UTC().Format(time.RFC3339))
	line("updated", r.Updated.UTC().Format(time.RFC3339))
	line("brief", cmdutil.OneLine(r.Brief))
}

// Decider is what a decision on a job needs of axlrd.
type Decider interface {
	JobNow(ctx context.Context, id string) (domain.Record, error)
	DecideJob(ctx context.Context, dec workflows.JobDecision) (domain.Record, error)
}

// Decide takes the person's decision (verb: approve, deny or decline) on
// what job id waits for: its check command (approve or deny) or its merge
// (approve or decline), and reports it on out.
func Decide(ctx context.Context, c Decider, out io.Writer, asJSON bool, verb, id, reason string) error {
	rec, err := c.JobNow(ctx, id)
	if err != nil {
		return err
	}
	if rec.Pending == nil {
		return fmt.Errorf("job %s waits for no decision: it is %s", id, rec.Status)
	}
	kind := rec.Pending.Kind
	switch {
	case verb == "deny" && kind != domain.PendingCheck:
		return fmt.Errorf("job %s waits for its merge decision, not a check command: axlr-tui jobs decline %s --reason TEXT", id, id)
	case verb == "decline" && kind != domain.PendingMerge:
		return fmt.Errorf("job %s waits for its check command, not a merge decision: axlr-tui jobs deny %s --reason TEXT", id, id)
	}
	after, err := c.DecideJob(ctx, workflows.JobDecision{Job: id, Kind: kind, Approve: verb == "approve", Reason: reason})
	if err != nil {
		return err
	}
	what := "the check command " + rec.Pending.Command
	if kind == domain.PendingMerge {
		what = fmt.Sprintf("the merge of pull request #%d", rec.PullRequest)
	}
	done := map[string]string{"approve": "approved", "deny": "denied", "decline": "declined"}[verb]
	cmdutil.Report(out, asJSON, after, fmt.Sprintf("%s %s of job %s; it is %s now (axlr-tui jobs watch %s follows it)", done, what, id, after.Status, id))
	return nil
}

func shortSHA(s string) string { return s[:min(len(s), 12)] }

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
