package client

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	return runShort[T](ctx, c, shortRun{
		prefix:       "axlr-definitions-" + verb,
		what:         verb + " the ceremony definitions",
		workflowType: workflowType,
		timeout:      workflows.DefinitionTimeout,
	}, in)
}

// shortRun is a short workflow a command runs to its result: its workflow
// id is prefix-<random id>, what says what it does in its errors ("list
// the ceremony definitions"), and timeout bounds it.
type shortRun struct {
	prefix, what, workflowType string
	timeout                    time.Duration
}

// runShort runs r with in (none when nil) to its result. A start retried
// after a lost answer attaches to its run. A failure the workflow
// returned (an ApplicationError) is a *RefusedError with axlrd's words;
// an axlrd that does not answer is an *UnreachableError.
func runShort[T any](ctx context.Context, c *Client, r shortRun, in any) (T, error) {
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
		ID:                       r.prefix + "-" + rid,
		TaskQueue:                c.taskQueue(),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowExecutionTimeout: r.timeout,
	}, r.workflowType, args...)
	if err != nil {
		return res, fmt.Errorf("%s: %w", r.what, c.reached(err))
	}
	if err := run.Get(ctx, &res); err != nil {
		var app *sdktemporal.ApplicationError
		if errors.As(err, &app) {
			return res, &RefusedError{Message: app.Message(), Err: err}
		}
		return res, fmt.Errorf("%s: %w", r.what, c.reached(err))
	}
	return res, nil
}
