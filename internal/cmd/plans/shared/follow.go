package shared

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
)

// Result is what a plan's watch ends with: the runtime contract's result,
// its status the plan's, with the plan's record.
type Result struct {
	contract.Result
	Plan domain.Record `json:"plan"`
}

// PlanLine is the first line of a plan's watch with --json.
type PlanLine struct {
	Type string        `json:"type"`
	Plan domain.Record `json:"plan"`
}

// resultLine is the last.
type resultLine struct {
	Type   string `json:"type"`
	Result Result `json:"result"`
}

func planResult(end client.PlanEnd) Result {
	rec := end.Record
	r := contract.Result{Schema: contract.Schema, ToolCalls: []contract.ToolCallRecord{}, Artifacts: []contract.Artifact{}}
	if end.Result != nil {
		r = *end.Result
	}
	switch {
	case rec.NeedsPerson():
		r.Status = contract.NeedsDecision
	case rec.Status == domain.Done:
		r.Status = contract.Completed
	case rec.Status == domain.Interrupted:
		r.Status, r.Error = contract.Interrupted, cmp.Or(rec.Reason, r.Error)
	default:
		r.Status, r.Error = contract.Failed, cmp.Or(rec.Reason, r.Error, "the plan ended "+string(rec.Status))
	}
	return Result{Result: r, Plan: rec}
}

// Watcher is what a plan's follow needs of axlrd.
type Watcher interface {
	WatchPlan(ctx context.Context, id string, w client.Watcher) (client.PlanEnd, error)
	InterruptPlan(ctx context.Context, id string) error
}

// FollowOptions are how a plan is followed.
type FollowOptions struct {
	IO *factory.IOStreams
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
	JSON       bool
}

// Follow prints the plan, follows it until it next needs the person or
// ends, and prints how it stands; its error carries the exit code. The
// first Ctrl+C interrupts the plan, the second leaves.
func Follow(ctx context.Context, o FollowOptions, c Watcher, first domain.Record) error {
	f := cmdutil.Follow[client.PlanEnd]{
		IO: o.IO, Interrupts: o.Interrupts, JSON: o.JSON,
		First:     PlanLine{Type: "plan", Plan: first},
		Started:   fmt.Sprintf("axlr-tui: plan %s: %s", first.ID, first.Status),
		Notice:    fmt.Sprintf("axlr-tui: interrupting plan %s (Ctrl+C again to leave without waiting; axlr-tui plans recover %s runs it again)", first.ID, first.ID),
		Interrupt: func(ctx context.Context) error { return c.InterruptPlan(ctx, first.ID) },
		Watch: func(ctx context.Context, w client.Watcher) (client.PlanEnd, error) {
			return c.WatchPlan(ctx, first.ID, w)
		},
		End: func(end client.PlanEnd) cmdutil.End {
			res := planResult(end)
			return cmdutil.End{Line: resultLine{Type: "result", Result: res}, Status: res.Status,
				Print: func(stdout, stderr io.Writer) { printEnd(stdout, stderr, end.Record) }}
		},
	}
	return f.Run(ctx)
}

func printEnd(stdout, stderr io.Writer, r domain.Record) {
	switch {
	case r.Pending != nil && r.Pending.Kind == domain.PendingCommand:
		fmt.Fprintf(stdout, "plan %s waits for your approval of the commands it runs as its baseline: %s\n", r.ID, strings.Join(r.Pending.Commands, "; "))
		fmt.Fprintf(stderr, "axlr-tui: axlr-tui plans approve %s runs them; axlr-tui plans return %s --reason TEXT sends the planner back\n", r.ID, r.ID)
	case r.NeedsPerson():
		fmt.Fprintf(stdout, "plan %s waits for your approval: %d tasks in %d waves (axlr-tui plans show %s)\n", r.ID, len(r.Tasks), r.Waves, r.ID)
		fmt.Fprintf(stderr, "axlr-tui: axlr-tui plans approve|return|decline %s\n", r.ID)
	case r.Status == domain.Done:
		fmt.Fprintf(stdout, "plan %s done: %s tasks\n", r.ID, TaskCount(r))
	default:
		fmt.Fprintf(stdout, "plan %s %s: %s\n", r.ID, r.Status, cmp.Or(r.Reason, TaskCount(r)+" tasks done"))
		if r.Status == domain.Interrupted {
			fmt.Fprintf(stderr, "axlr-tui: axlr-tui plans recover %s runs it again\n", r.ID)
		}
	}
}
