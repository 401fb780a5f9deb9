// Package plans is axlr-tui plans: it groups the verbs on plans, each in
// its own package (plans/list, show, watch, approve, returnplan — plans
// return, return being a Go keyword —, decline, recover, and launch, which
// holds new); plans/shared holds what they share. "axlr-tui plans" alone
// lists the plans, as "plans list" does.
package plans

import (
	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/approve"
	"github.com/underpass-ai/axlr/internal/cmd/plans/decline"
	"github.com/underpass-ai/axlr/internal/cmd/plans/launch"
	"github.com/underpass-ai/axlr/internal/cmd/plans/list"
	planrecover "github.com/underpass-ai/axlr/internal/cmd/plans/recover"
	"github.com/underpass-ai/axlr/internal/cmd/plans/returnplan"
	"github.com/underpass-ai/axlr/internal/cmd/plans/show"
	"github.com/underpass-ai/axlr/internal/cmd/plans/watch"
)

// NewCmdPlans returns the plans command with its verbs.
func NewCmdPlans(f *factory.Factory) *cobra.Command {
	cmd := list.NewCmdList(f, nil)
	cmd.Use = "plans"
	cmd.Args = cmdutil.NoCommand
	cmd.Short = "Start plans, list them, follow them and decide them"
	cmd.Long = `Start a plan, list the plans, follow one and take your decisions on it.
Alone, it lists them as plans list does.

  axlr-tui plans [--json]                     every plan, newest first
  axlr-tui plans new "<brief>"                start a plan (--model, --root, --json, --detach)
  axlr-tui plans show ID [--json]             tasks, waves, sessions, syncs, changed files
  axlr-tui plans watch ID [--json]            until the plan next needs you, or ends
  axlr-tui plans approve ID                   the commands that wait, or the plan
  axlr-tui plans return ID --reason TEXT      back to the planner (twice at most)
  axlr-tui plans decline ID --reason TEXT
  axlr-tui plans recover ID                   run an interrupted plan again

--plan is plans new. watch and new exit 0 when the plan is done, 3 when it
waits for you, 1 when it ended partial, blocked, declined or interrupted.
Every verb exits 1 for an error, 2 for a usage error and 4 when axlrd is
unreachable.`
	cmd.AddCommand(
		list.NewCmdList(f, nil),
		launch.NewCmdNew(f, nil),
		show.NewCmdShow(f, nil),
		watch.NewCmdWatch(f, nil),
		approve.NewCmdApprove(f, nil),
		returnplan.NewCmdReturn(f, nil),
		decline.NewCmdDecline(f, nil),
		planrecover.NewCmdRecover(f, nil),
	)
	return cmd
}
