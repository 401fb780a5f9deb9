package client

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	sdkclient "go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// PublishDefinition has axlrd validate a ceremony definition the person
// wrote, publish it to MADE and keep its copy (workflows.
// DefinitionPublish). A definition axlrd refuses (a YAML or validation
// error naming its line, a reserved name, other bytes under a published
// version) is a *RefusedError with axlrd's words.
func (c *Client) PublishDefinition(ctx context.Context, yaml []byte) (workflows.PublishDefinitionResult, error) {
	return runDefinitions[workflows.PublishDefinitionResult](ctx, c, "publish", workflows.DefinitionPublishWorkflow, workflows.PublishDefinitionInput{YAML: string(yaml)})
}

// Definitions lists axlrd's own ceremony definitions and those the person
// published (workflows.DefinitionList).
func (c *Client) Definitions(ctx context.Context) ([]workflows.DefinitionSummary, error) {
	return runDefinitions[[]workflows.DefinitionSummary](ctx, c, "list", workflows.DefinitionListWorkflow, nil)
}

// runDefinitions runs one short definitions workflow to its result.
func runDefinitions[T any](ctx context.Context, c *Client, verb, workflowType string, in any) (T, error) {
	var res T
	rid, err := session.NewID()
	if err != nil {
		return res, err
	}
	args := []any{}
	if in != nil {
		args = append(args, in)
	}
	run, err := c.tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID:                       "axlr-definitions-" + verb + "-" + rid,
		TaskQueue:                c.taskQueue(),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowExecutionTimeout: workflows.DefinitionTimeout,
	}, workflowType, args...)
	if err != nil {
		return res, fmt.Errorf("%s the ceremony definitions: %w", verb, c.reached(err))
	}
	if err := run.Get(ctx, &res); err != nil {
		var app *sdktemporal.ApplicationError
		if errors.As(err, &app) {
			return res, &RefusedError{Message: app.Message(), Err: err}
		}
		return res, fmt.Errorf("%s the ceremony definitions: %w", verb, c.reached(err))
	}
	return res, nil
}
