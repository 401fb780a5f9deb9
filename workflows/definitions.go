package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A person's own ceremony definitions are published and listed by axlrd:
// a short workflow runs one activity that validates the YAML (its errors
// name the line), publishes it to MADE and keeps axlrd's copy, which is
// what lists it, since MADE returns no stored definition. The model never
// reaches either: they are the person's commands (axlr-tui ceremonies).

// Workflow types and activity names of the definitions.
const (
	DefinitionPublishWorkflow = "axlr.DefinitionPublish"
	DefinitionListWorkflow    = "axlr.DefinitionList"

	ActivityCeremonyPublishDefinition = "ceremony.PublishDefinition"
	ActivityCeremonyListDefinitions   = "ceremony.ListDefinitions"
)

// DefinitionTimeout bounds a publication's or a listing's workflow, as its
// client starts it: the person waits for it.
const DefinitionTimeout = time.Minute

// DefinitionOptions: one publication or listing; a MADE that does not
// answer is tried three times.
var DefinitionOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeMadeRefused},
	},
}

// MaxDefinitionBytes bounds a definition a person publishes.
const MaxDefinitionBytes = 256 << 10

// PublishDefinitionInput is a definition's YAML as the person wrote it.
type PublishDefinitionInput struct {
	YAML string `json:"yaml"`
}

// PublishDefinitionResult is what a publication did: published, or
// already_published for the same bytes again (nothing changed).
type PublishDefinitionResult struct {
	Outcome  string   `json:"outcome"`
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Digest   string   `json:"digest"`
	Warnings []string `json:"warnings,omitempty"`
}

// DefinitionSummary is one definition as the listing shows it: its
// versions, oldest first, the newest one's description, and what starts
// it.
type DefinitionSummary struct {
	Name        string   `json:"name"`
	Versions    []string `json:"versions"`
	Description string   `json:"description"`
	// Starts says what runs it: a mode ("/debug mode"), a job, a plan;
	// "/ceremony <name>" for a person's own, which the generic loop runs.
	Starts string `json:"starts"`
	// BuiltIn: one of axlrd's own, pinned in the binary.
	BuiltIn bool `json:"built_in"`
}

// DefinitionPublish publishes one definition.
func DefinitionPublish(ctx workflow.Context, in PublishDefinitionInput) (PublishDefinitionResult, error) {
	var res PublishDefinitionResult
	if err := executeActivity(ctx, DefinitionOptions, ActivityCeremonyPublishDefinition, in, &res); err != nil {
		return PublishDefinitionResult{}, temporal.NewNonRetryableApplicationError(failureMessage(err), ErrTypeBadRequest, nil)
	}
	return res, nil
}

// ListDefinitionsInput asks for every definition; it has no fields yet.
type ListDefinitionsInput struct{}

// DefinitionList lists the built-in definitions and the person's.
func DefinitionList(ctx workflow.Context) ([]DefinitionSummary, error) {
	var res []DefinitionSummary
	if err := executeActivity(ctx, DefinitionOptions, ActivityCeremonyListDefinitions, ListDefinitionsInput{}, &res); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(failureMessage(err), ErrTypeBadRequest, nil)
	}
	return res, nil
}
