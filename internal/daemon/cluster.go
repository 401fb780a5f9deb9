package daemon

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/workflows"
)

// announceHost tells the job registry this host is up, and its capacity,
// every workflows.AnnounceEvery until ctx ends, starting the registry on
// the cluster queue when none runs: the registry places jobs on the live
// hosts it hears from. A frontend that does not answer is logged once
// until it answers again.
func announceHost(ctx context.Context, c client.Client, a workflows.HostAnnounce, log zerolog.Logger) {
	failing := false
	for {
		sctx, cancel := context.WithTimeout(ctx, workflows.AnnounceEvery)
		_, err := c.SignalWithStartWorkflow(sctx, workflows.RegistryWorkflowID, workflows.SignalHostAnnounce, a,
			client.StartWorkflowOptions{
				ID:                       workflows.RegistryWorkflowID,
				TaskQueue:                workflows.ClusterTaskQueue,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			}, workflows.RegistryWorkflow, workflows.RegistryInput{})
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			log.Warn().Err(err).Msg("this host could not announce itself to the job registry; trying again")
			failing = true
		case err == nil && failing:
			log.Info().Msg("this host announces itself to the job registry again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(workflows.AnnounceEvery):
		}
	}
}
