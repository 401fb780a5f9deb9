// Package jobs is axlr-tui jobs: it groups the verbs on /repair and
// /improve jobs, each in its own package (jobs/list, show, watch,
// approve, deny, decline, recover, install, queue, unqueue, and launch,
// which holds repair and improve); jobs/shared holds what they share.
// "axlr-tui jobs" alone lists the jobs, as "jobs list" does.
package jobs

import (
	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/approve"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/decline"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/deny"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/install"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/launch"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/list"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/queue"
	jobrecover "github.com/underpass-ai/axlr/internal/cmd/jobs/recover"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/show"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/unqueue"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/watch"
)

// NewCmdJobs returns the jobs command with its verbs.
func NewCmdJobs(f *factory.Factory) *cobra.Command {
	cmd := list.NewCmdList(f, nil)
	cmd.Use = "jobs"
	cmd.Args = cmdutil.NoCommand
	cmd.Short = "Start /repair and /improve jobs, list them, follow them and decide them"
	cmd.Long = `Start a /repair or /improve job, list the jobs the job registry holds,
follow one and take your decisions on it. Alone, it lists them as jobs list
does.

  axlr-tui jobs [--json]                   every job, newest first
  axlr-tui jobs repair "<failure brief or #123>"       start a /repair job
  axlr-tui jobs improve "<improvement brief or #123>"  start an /improve job
  axlr-tui jobs show ID [--json]
  axlr-tui jobs watch ID [--json]          until the job next needs you, or ends
  axlr-tui jobs approve ID [--json]        the check command, or the merge
  axlr-tui jobs deny ID --reason TEXT      the check command
  axlr-tui jobs decline ID --reason TEXT   the merge
  axlr-tui jobs recover ID [--model NAME]  run an interrupted job again
  axlr-tui jobs install ID                 install a merged job's candidate build
  axlr-tui jobs queue ID                   queue the merge in its merge queue
  axlr-tui jobs unqueue ID [--reason TEXT] take it back

repair and improve take --model NAME, --json and --detach; --repair and
--improve are jobs repair and jobs improve. watch, repair and
improve exit 0 when the job merged and completed, 3 when it waits for you
(approve, deny or decline it), 1 when it ended blocked, failed or
interrupted. approve, deny and decline return once the job's workflow has
taken the decision; --json prints the record then. Every verb exits 1 for
an error, 2 for a usage error and 4 when axlrd is unreachable.`
	cmd.AddCommand(
		list.NewCmdList(f, nil),
		launch.NewCmdRepair(f, nil),
		launch.NewCmdImprove(f, nil),
		show.NewCmdShow(f, nil),
		watch.NewCmdWatch(f, nil),
		approve.NewCmdApprove(f, nil),
		deny.NewCmdDeny(f, nil),
		decline.NewCmdDecline(f, nil),
		jobrecover.NewCmdRecover(f, nil),
		install.NewCmdInstall(f, nil),
		queue.NewCmdQueue(f, nil),
		unqueue.NewCmdUnqueue(f, nil),
	)
	return cmd
}
