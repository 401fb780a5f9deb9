package workflows

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/forge/pull"
)

// TestPullRead: g's read runs the forge's read activity once, asking for
// the checks of a closed pull request too, and answers its result, a
// forge that could not be read included; a read that names no pull
// request, and an axlrd whose forge refuses (no GitHub client), fail with
// the job and the reason.
func TestPullRead(t *testing.T) {
	merged := ReadResult{PullRequest: pull.Request{Number: 7, State: "closed", Merged: true, HeadSHA: "abc"},
		Checks: pull.Checks{SHA: "abc", Passed: []string{"test"}}}
	tests := []struct {
		name  string
		read  ReadInput
		res   ReadResult
		err   error
		calls int
		want  ReadResult
		fails []string
	}{
		{name: "merged with its checks", read: ReadInput{Repository: "acme/app", Number: 7}, res: merged, calls: 1, want: merged},
		{name: "the forge could not be read", read: ReadInput{Repository: "acme/app", Number: 7}, res: ReadResult{Error: "read pull request 7 of acme/app: not found"},
			calls: 1, want: ReadResult{Error: "read pull request 7 of acme/app: not found"}},
		{name: "no number", read: ReadInput{Repository: "acme/app"},
			fails: []string{"read the pull request of job fix-parse: it names no repository (\"acme/app\") or no number (0)"}},
		{name: "no GitHub client", read: ReadInput{Repository: "acme/app", Number: 7}, calls: 1,
			err:   temporal.NewNonRetryableApplicationError("no GitHub client: no token for github.com", ErrTypeForgeRefused, nil),
			fails: []string{"read pull request #7 of acme/app for job fix-parse", "no GitHub client: no token for github.com"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(PullRead, workflow.RegisterOptions{Name: PullReadWorkflow})
			var asked []ReadInput
			env.RegisterActivityWithOptions(func(_ context.Context, in ReadInput) (ReadResult, error) {
				asked = append(asked, in)
				return tc.res, tc.err
			}, activity.RegisterOptions{Name: ActivityForgeRead})
			env.ExecuteWorkflow(PullReadWorkflow, PullReadInput{Job: "fix-parse", Read: tc.read})
			if !env.IsWorkflowCompleted() {
				t.Fatal("the read did not end")
			}
			if len(asked) != tc.calls {
				t.Fatalf("the activity ran %d times, want %d", len(asked), tc.calls)
			}
			if tc.calls > 0 && (!asked[0].ClosedChecks || asked[0].Number != tc.read.Number || asked[0].Repository != tc.read.Repository) {
				t.Errorf("the activity was asked %+v", asked[0])
			}
			err := env.GetWorkflowError()
			if tc.fails != nil {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) || !app.NonRetryable() {
					t.Fatalf("error %v, want a non-retryable application error", err)
				}
				for _, w := range tc.fails {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got ReadResult
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("result %+v, want %+v", got, tc.want)
			}
		})
	}
}
