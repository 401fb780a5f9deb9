package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/workflows"
)

// Cluster is the cluster's own activities, over Temporal: when a host was
// last seen, and a new host for a job whose host was lost.
type Cluster struct {
	// Client reaches the frontend. Default: the worker's own client.
	Client client.Client
}

func (c *Cluster) client(ctx context.Context) client.Client { return orWorkerClient(ctx, c.Client) }

// HostAlive says when a host was last seen: the latest poll of its task
// queue (for workflow or activity tasks) the frontend remembers, or its
// latest announcement to the registry, whichever is later.
func (c *Cluster) HostAlive(ctx context.Context, in workflows.HostAliveInput) (workflows.HostAliveResult, error) {
	if strings.TrimSpace(in.Host) == "" {
		return workflows.HostAliveResult{}, temporal.NewNonRetryableApplicationError("ask about a host: the host id is empty", workflows.ErrTypeBadRequest, nil)
	}
	tc := c.client(ctx)
	var seen time.Time
	queue := workflows.HostTaskQueue(in.Host)
	for _, kind := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_ACTIVITY, enumspb.TASK_QUEUE_TYPE_WORKFLOW} {
		resp, err := tc.DescribeTaskQueue(ctx, queue, kind)
		if err != nil {
			return workflows.HostAliveResult{}, fmt.Errorf("describe task queue %s: %w", queue, err)
		}
		for _, p := range resp.GetPollers() {
			if t := p.GetLastAccessTime().AsTime(); p.GetLastAccessTime() != nil && t.After(seen) {
				seen = t
			}
		}
	}
	// The registry answers when it runs; without it the polls tell.
	if v, err := tc.QueryWorkflow(ctx, workflows.RegistryWorkflowID, "", workflows.QueryHosts); err == nil {
		var hosts []workflows.HostSeen
		if v.Get(&hosts) == nil {
			for _, h := range hosts {
				if h.ID == in.Host && h.Seen.After(seen) {
					seen = h.Seen
				}
			}
		}
	}
	return workflows.HostAliveResult{Seen: seen.UTC()}, nil
}

// Place asks the registry for a new host for a job; the update's id is
// the request's, so a retry places it once. A registry with no live host
// refuses, and the activity is tried again until one announces itself.
func (c *Cluster) Place(ctx context.Context, in workflows.PlaceInput) (workflows.PlaceResult, error) {
	h, err := c.client(ctx).UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.RegistryWorkflowID, UpdateID: in.RequestID, UpdateName: workflows.UpdatePlace,
		Args: []any{in}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var out workflows.PlaceResult
	if err == nil {
		err = h.Get(ctx, &out)
	}
	if err != nil {
		return workflows.PlaceResult{}, fmt.Errorf("place job %s: %w", in.Job, err)
	}
	return out, nil
}
