// Package plans is axlr-tui's /plan: --plan starts a plan and follows it,
// and axlr-tui plans lists the plans, shows one, watches one until it next
// needs the person, and takes the person's decisions on it (approve,
// return, decline) and its recovery. Every decision is an Update of the
// plan's workflow; the records are Queries.
package plans

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/exec"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what plans needs of axlrd.
type Client interface {
	CheckWorker(ctx context.Context) error
	LaunchPlan(ctx context.Context, in client.PlanLaunch) (domain.Record, error)
	Plan(ctx context.Context, id string) (domain.Record, error)
	Plans(ctx context.Context) ([]domain.Record, error)
	DecidePlan(ctx context.Context, dec workflows.PlanDecision) (domain.Record, error)
	RecoverPlan(ctx context.Context, id string) (domain.Record, error)
	InterruptPlan(ctx context.Context, id string) error
	WatchPlan(ctx context.Context, id string, w client.Watcher) (client.PlanEnd, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// Options are the dependencies and flags of plans and --plan.
type Options struct {
	IO         *factory.IOStreams
	Client     func(context.Context) (Client, error)
	Interrupts <-chan os.Signal
	Getwd      func() (string, error)

	// Action is what a plans subcommand does with ID: show, watch,
	// approve, return, decline or recover; empty lists every plan, and
	// "launch" starts Brief.
	Action string
	ID     string
	Reason string
	JSON   bool

	Brief  string
	Model  string
	Root   string
	Detach bool
}

// NewCmdPlans returns the plans command with its subcommands. Each parses
// its arguments, then calls runF, or plansRun when runF is nil.
func NewCmdPlans(f *factory.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts, Getwd: f.Getwd}
	run := func(ctx context.Context) error {
		if runF != nil {
			return runF(ctx, opts)
		}
		return plansRun(ctx, opts)
	}
	cmd := &cobra.Command{
		Use:   "plans",
		Short: "List the plans, newest first",
		Long: `List every plan, newest first, whatever its status: its id, status, tasks
and waves. With --json, one line: the array of plan records.

  axlr-tui plans [--json]
  axlr-tui plans show ID [--json]             tasks, waves, task sessions, sync, changed files
  axlr-tui plans watch ID [--json]            until the plan next needs you, or ends
  axlr-tui plans approve ID                   the commands that wait, or the plan
  axlr-tui plans return ID --reason TEXT      back to the planner (twice at most)
  axlr-tui plans decline ID --reason TEXT
  axlr-tui plans recover ID                   run an interrupted plan again

watch exits 0 when the plan is done, 3 when it waits for you, 1 when it
ended partial, blocked, declined or interrupted.`,
		Args: cmdutil.ExactArgs(0, "usage: axlr-tui plans [--json] | axlr-tui plans show|watch|approve|return|decline|recover ID"),
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd.Context()) },
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the records as JSON")
	cmdutil.AddIDCommands(cmd, []cmdutil.IDCommand{
		{Name: "show", Usage: "show ID [--json]", Short: "Print one plan: its tasks, waves, task sessions, syncs and changed files"},
		{Name: "watch", Usage: "watch ID [--json]", Short: "Follow a plan until it next needs the person, or ends"},
		{Name: "approve", Usage: "approve ID [--json]", Short: "Approve what the plan waits for: the commands it runs as its baseline, or the plan"},
		{Name: "return", Usage: "return ID --reason TEXT [--json]", Short: "Send the plan back to the planner with a reason (twice at most)", Reason: true},
		{Name: "decline", Usage: "decline ID --reason TEXT [--json]", Short: "Decline the plan: it ends declined", Reason: true},
		{Name: "recover", Usage: "recover ID [--json]", Short: "Run an interrupted plan again from where it stood"},
	}, &opts.JSON, &opts.Reason, "the planner and the record keep it", func(c *cobra.Command, name, id string) error {
		opts.Action, opts.ID = name, id
		return run(c.Context())
	})
	return cmd
}

func plansRun(ctx context.Context, opts *Options) error {
	c, err := opts.Client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	switch opts.Action {
	case "launch":
		return launchRun(ctx, opts, c)
	case "watch":
		if err := c.CheckWorker(ctx); err != nil {
			return err
		}
		rec, err := c.Plan(ctx, opts.ID)
		if err != nil {
			return err
		}
		return follow(ctx, opts, c, rec)
	case "approve", "return", "decline":
		return decideRun(ctx, opts, c)
	case "recover":
		if err := c.CheckWorker(ctx); err != nil {
			return err
		}
		rec, err := c.RecoverPlan(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.JSON {
			cmdutil.WriteJSONLine(opts.IO.Out, rec)
			return nil
		}
		fmt.Fprintf(opts.IO.Out, "recovered plan %s: it runs again from where it stood (axlr-tui plans watch %s follows it)\n", rec.ID, rec.ID)
		return nil
	case "show":
		rec, err := c.Plan(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.JSON {
			cmdutil.WriteJSONLine(opts.IO.Out, rec)
			return nil
		}
		printRecord(opts.IO.Out, rec)
		return nil
	}
	all, err := c.Plans(ctx)
	if err != nil {
		return err
	}
	return cmdutil.PrintList(opts.IO.Out, opts.IO.ErrOut, opts.JSON, all, "axlr-tui: no plans yet; start one with --plan \"<brief>\"",
		"ID\tSTATUS\tTASKS\tWAVES\tUPDATED", func(r domain.Record) string {
			return fmt.Sprintf("%s\t%s\t%s\t%d\t%s", r.ID, r.Status, taskCount(r), r.Waves, r.Updated.UTC().Format(time.RFC3339))
		})
}

// taskCount is "done/all" of a plan's tasks.
func taskCount(r domain.Record) string {
	done := 0
	for _, t := range r.Tasks {
		if t.Status == domain.TaskDone {
			done++
		}
	}
	return fmt.Sprintf("%d/%d", done, len(r.Tasks))
}

// printRecord prints a plan: its fields, then each task, the questions its
// task workers asked, then each sync.
func printRecord(out io.Writer, r domain.Record) {
	line := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			fmt.Fprintf(out, "%-9s %s\n", k+":", v)
		}
	}
	line("id", r.ID)
	line("status", string(r.Status))
	line("root", r.Root)
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
	for _, s := range r.Syncs {
		exit := "did not run"
		if s.Exit != nil {
			exit = fmt.Sprintf("exit %d", *s.Exit)
		}
		fmt.Fprintf(out, "sync wave %d round %d: %s: %s\n", s.Wave, s.Round, s.Check.String(), exit)
	}
}

// Result is what a plan's watch ends with: the runtime contract's result,
// its status the plan's, with the plan's record.
type Result struct {
	contract.Result
	Plan domain.Record `json:"plan"`
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

// follow prints the plan, follows it until it next needs the person or
// ends, and prints how it stands; the first Ctrl+C interrupts the plan,
// the second leaves.
func follow(ctx context.Context, opts *Options, c Client, first domain.Record) error {
	stderr := cmdutil.NewLockedWriter(opts.IO.ErrOut)
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, struct {
			Type string        `json:"type"`
			Plan domain.Record `json:"plan"`
		}{"plan", first})
	} else {
		fmt.Fprintf(stderr, "axlr-tui: plan %s: %s\n", first.ID, first.Status)
	}
	wctx, stop := cmdutil.OnInterrupt(ctx, opts.Interrupts, stderr,
		fmt.Sprintf("axlr-tui: interrupting plan %s (Ctrl+C again to leave without waiting; axlr-tui plans recover %s runs it again)", first.ID, first.ID),
		func(ctx context.Context) error { return c.InterruptPlan(ctx, first.ID) })
	end, err := c.WatchPlan(wctx, first.ID, exec.NewPrinter(opts.IO.Out, stderr, opts.JSON))
	if left := stop(); err != nil {
		if left {
			return cmdutil.ErrLeft
		}
		return err
	}
	res := planResult(end)
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, struct {
			Type   string `json:"type"`
			Result Result `json:"result"`
		}{"result", res})
	} else {
		printEnd(opts.IO.Out, stderr, end.Record)
	}
	return cmdutil.StatusExit(res.Status)
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
		fmt.Fprintf(stdout, "plan %s done: %s tasks\n", r.ID, taskCount(r))
	default:
		fmt.Fprintf(stdout, "plan %s %s: %s\n", r.ID, r.Status, cmp.Or(r.Reason, taskCount(r)+" tasks done"))
		if r.Status == domain.Interrupted {
			fmt.Fprintf(stderr, "axlr-tui: axlr-tui plans recover %s runs it again\n", r.ID)
		}
	}
}

// decideRun takes the person's decision on what the plan waits for.
func decideRun(ctx context.Context, opts *Options, c Client) error {
	rec, err := c.Plan(ctx, opts.ID)
	if err != nil {
		return err
	}
	if !rec.NeedsPerson() {
		return fmt.Errorf("plan %s waits for no decision: it is %s", opts.ID, rec.Status)
	}
	dec := workflows.PlanDecision{Plan: opts.ID, Kind: workflows.PlanDecidePlan, Reason: opts.Reason}
	commands := rec.Pending != nil && rec.Pending.Kind == domain.PendingCommand
	switch {
	case commands && opts.Action == "approve":
		dec.Kind, dec.Decision = workflows.PlanDecideCommands, workflows.PlanApprove
	case commands && opts.Action == "return":
		dec.Kind, dec.Decision = workflows.PlanDecideCommands, workflows.PlanDeny
	case commands:
		return fmt.Errorf("plan %s waits for its commands, not its card: axlr-tui plans approve %s runs them, axlr-tui plans return %s --reason TEXT sends the planner back", opts.ID, opts.ID, opts.ID)
	default:
		dec.Decision = map[string]string{"approve": workflows.PlanApprove, "return": workflows.PlanReturn, "decline": workflows.PlanDecline}[opts.Action]
	}
	after, err := c.DecidePlan(ctx, dec)
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, after)
		return nil
	}
	verb := map[string]string{"approve": "approved", "return": "returned", "decline": "declined"}[opts.Action]
	what := "the plan"
	if commands {
		what = "the plan's commands"
	}
	fmt.Fprintf(opts.IO.Out, "%s %s %s; it is %s now (axlr-tui plans watch %s follows it)\n", verb, what, opts.ID, after.Status, opts.ID)
	return nil
}
