// Package shared holds what the plans verbs share: a plan as show prints
// it and its declared JSON fields, the follow of a plan that watch and
// new print, and the decision approve, return and decline take.
package shared

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	domain "github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// RecordFields are the fields of a plan record (plans.Record) that --json
// prints, in order; a test pins them to the type.
var RecordFields = []string{
	"id", "status", "brief", "root", "host", "planner_model", "tasks", "waves", "syncs", "pending", "reason", "created", "updated",
}

// RecordHelp is the --json field list of a command that prints plan
// records, for its Long help.
func RecordHelp() string { return "Plan record fields:\n" + cmdutil.FieldsHelp(RecordFields) }

// Usage is a verb's usage error: "usage: axlr-tui plans show ID [--json]".
func Usage(verb string) string { return "usage: axlr-tui plans " + verb }

// TaskCount is "done/all" of a plan's tasks.
func TaskCount(r domain.Record) string {
	done := 0
	for _, t := range r.Tasks {
		if t.Status == domain.TaskDone {
			done++
		}
	}
	return fmt.Sprintf("%d/%d", done, len(r.Tasks))
}

// PrintRecord prints a plan: its fields, then each task, the questions its
// task workers asked, the scope files put back and the files left of a
// task that did not finish, then each sync.
func PrintRecord(out io.Writer, r domain.Record) {
	line := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			fmt.Fprintf(out, "%-9s %s\n", k+":", v)
		}
	}
	line("id", r.ID)
	line("status", string(r.Status))
	line("root", r.Root)
	line("host", r.Host)
	line("planner", r.PlannerModel)
	if p := r.Pending; p != nil {
		line("waits", string(p.Kind)+" "+strings.Join(p.Commands, "; "))
	}
	line("reason", r.Reason)
	line("brief", cmdutil.OneLine(r.Brief))
	if len(r.Tasks) > 0 {
		fmt.Fprintln(out, "tasks:")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, t := range r.Tasks {
			detail := cmp.Or(t.Reason, strings.Join(t.Changed, ", "))
			fmt.Fprintf(tw, "  wave %d\t%s\t%s\t%s\t%s\n", t.Wave, t.ID, t.Status, cmp.Or(t.Session, "-"), cmdutil.OneLine(detail))
		}
		tw.Flush()
	}
	for _, t := range r.Tasks {
		for _, q := range t.Questions {
			fmt.Fprintf(out, "question from %s: %s\n", t.ID, cmdutil.OneLine(q))
		}
	}
	for _, t := range r.Tasks {
		if len(t.Restored) > 0 {
			fmt.Fprintf(out, "restored for %s, as they were when its worker started: %s\n", t.ID, strings.Join(t.Restored, ", "))
		}
		if len(t.Created) > 0 {
			fmt.Fprintf(out, "created by %s, left in place: %s\n", t.ID, strings.Join(t.Created, ", "))
		}
	}
	for _, s := range r.Syncs {
		exit := "did not run"
		if s.Exit != nil {
			exit = fmt.Sprintf("exit %d", *s.Exit)
		}
		fmt.Fprintf(out, "sync wave %d round %d: %s: %s\n", s.Wave, s.Round, s.Check.String(), exit)
	}
}

// Decider is what a decision on a plan needs of axlrd.
type Decider interface {
	Plan(ctx context.Context, id string) (domain.Record, error)
	DecidePlan(ctx context.Context, dec workflows.PlanDecision) (domain.Record, error)
}

// Decide takes the person's decision (verb: approve, return or decline)
// on what plan id waits for: the commands it runs as its baseline
// (approve or return) or its card, and reports it on out.
func Decide(ctx context.Context, c Decider, out io.Writer, asJSON bool, verb, id, reason string) error {
	rec, err := c.Plan(ctx, id)
	if err != nil {
		return err
	}
	if !rec.NeedsPerson() {
		return fmt.Errorf("plan %s waits for no decision: it is %s", id, rec.Status)
	}
	dec := workflows.PlanDecision{Plan: id, Kind: workflows.PlanDecidePlan, Reason: reason}
	commands := rec.Pending != nil && rec.Pending.Kind == domain.PendingCommand
	switch {
	case commands && verb == "approve":
		dec.Kind, dec.Decision = workflows.PlanDecideCommands, workflows.PlanApprove
	case commands && verb == "return":
		dec.Kind, dec.Decision = workflows.PlanDecideCommands, workflows.PlanDeny
	case commands:
		return fmt.Errorf("plan %s waits for its commands, not its card: axlr-tui plans approve %s runs them, axlr-tui plans return %s --reason TEXT sends the planner back", id, id, id)
	default:
		dec.Decision = map[string]string{"approve": workflows.PlanApprove, "return": workflows.PlanReturn, "decline": workflows.PlanDecline}[verb]
	}
	after, err := c.DecidePlan(ctx, dec)
	if err != nil {
		return err
	}
	what := "the plan"
	if commands {
		what = "the plan's commands"
	}
	done := map[string]string{"approve": "approved", "return": "returned", "decline": "declined"}[verb]
	cmdutil.Report(out, asJSON, after, fmt.Sprintf("%s %s %s; it is %s now (axlr-tui plans watch %s follows it)", done, what, id, after.Status, id))
	return nil
}
