package workflows

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// TestDefinitionPublish: a publication runs the activity once with the
// YAML and answers its result; a refusal (a line's error, other bytes
// under a version) fails the workflow with the activity's own words.
func TestDefinitionPublish(t *testing.T) {
	published := PublishDefinitionResult{Outcome: "published", Name: "team_note", Version: "1.0", Digest: "abc"}
	for _, tc := range []struct {
		name string
		res  PublishDefinitionResult
		err  error
		want string
	}{
		{name: "published", res: published},
		{name: "refused", err: temporal.NewNonRetryableApplicationError("line 3: mapping values are not allowed in this context", ErrTypeBadRequest, nil),
			want: "line 3: mapping values are not allowed in this context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(DefinitionPublish, workflow.RegisterOptions{Name: DefinitionPublishWorkflow})
			var asked []PublishDefinitionInput
			env.RegisterActivityWithOptions(func(_ context.Context, in PublishDefinitionInput) (PublishDefinitionResult, error) {
				asked = append(asked, in)
				return tc.res, tc.err
			}, activity.RegisterOptions{Name: ActivityCeremonyPublishDefinition})
			env.ExecuteWorkflow(DefinitionPublishWorkflow, PublishDefinitionInput{YAML: "name: team_note\n"})
			if len(asked) != 1 || asked[0].YAML != "name: team_note\n" {
				t.Fatalf("the activity was asked %+v", asked)
			}
			err := env.GetWorkflowError()
			if tc.want != "" {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) || !app.NonRetryable() || app.Message() != tc.want {
					t.Fatalf("error %v, want a final %q", err, tc.want)
				}
				return
			}
			var got PublishDefinitionResult
			if err != nil || env.GetWorkflowResult(&got) != nil || !reflect.DeepEqual(got, published) {
				t.Fatalf("result %+v %v", got, err)
			}
		})
	}
}

// TestDefinitionList: the listing answers the activity's list.
func TestDefinitionList(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(DefinitionList, workflow.RegisterOptions{Name: DefinitionListWorkflow})
	want := []DefinitionSummary{{Name: "team_note", Versions: []string{"1.0"}, Starts: "/ceremony team_note"}}
	env.RegisterActivityWithOptions(func(context.Context, ListDefinitionsInput) ([]DefinitionSummary, error) { return want, nil },
		activity.RegisterOptions{Name: ActivityCeremonyListDefinitions})
	env.ExecuteWorkflow(DefinitionListWorkflow)
	var got []DefinitionSummary
	if err := env.GetWorkflowError(); err != nil || env.GetWorkflowResult(&got) != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("result %+v %v", got, err)
	}
}
