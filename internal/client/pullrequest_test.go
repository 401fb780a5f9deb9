package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	sdkclient "go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// readTemporal is fakeTemporal whose started workflow ends with result or
// runErr.
type readTemporal struct {
	*fakeTemporal
	result workflows.ReadResult
	runErr error
}

func (f *readTemporal) ExecuteWorkflow(ctx context.Context, opts sdkclient.StartWorkflowOptions, workflow any, args ...any) (sdkclient.WorkflowRun, error) {
	if _, err := f.fakeTemporal.ExecuteWorkflow(ctx, opts, workflow, args...); err != nil {
		return nil, err
	}
	return readRun{fakeRun: fakeRun{id: opts.ID}, result: f.result, err: f.runErr}, nil
}

type readRun struct {
	fakeRun
	result workflows.ReadResult
	err    error
}

func (r readRun) Get(_ context.Context, ptr any) error {
	if r.err != nil {
		return r.err
	}
	return roundTrip(r.result, ptr)
}

// TestPullRequest: g's read asks axlrd, never the forge: it starts a
// workflows.PullRead on this host for the job's repository and pull
// request, bounded by PullReadTimeout, and reads no token from the
// client's environment. Its result is the view; a forge that could not be
// read and a read axlrd refused name the job and the pull request; a job
// without a pull request, or no such job, starts no read.
func TestPullRequest(t *testing.T) {
	const repoName = "underpass-ai/app"
	open := workflows.ReadResult{
		PullRequest: pull.Request{Number: 7, URL: "https://github.com/underpass-ai/app/pull/7", State: "open", MergeableState: "behind",
			HeadRef: "repair/lint-fails", HeadSHA: "abc123", BaseRef: "main"},
		Checks: pull.Checks{SHA: "abc123", Passed: []string{"test", "ci/build"}, Pending: []string{"e2e"}, Failed: []string{"lint: failure https://ci.example/lint"}},
	}
	records := []jobs.Record{
		{ID: "lint-fails", Repository: repoName, Status: jobs.AwaitingMerge, PullRequest: 7},
		{ID: "exec-timeout", Repository: repoName, Status: jobs.Running},
	}
	refused := sdktemporal.NewNonRetryableApplicationError("read pull request #7 of underpass-ai/app for job lint-fails: no GitHub client: no token for github.com", workflows.ErrTypePullRead, nil)
	tests := []struct {
		name    string
		job     string
		result  workflows.ReadResult
		runErr  error
		reads   int
		want    PullRequestView
		is      error
		refused bool
		err     string
	}{
		{name: "open with checks of each class", job: "lint-fails", result: open, reads: 1,
			want: PullRequestView{Job: "lint-fails", Repository: repoName, PullRequest: open.PullRequest, Checks: open.Checks}},
		{name: "the forge could not be read", job: "lint-fails", result: workflows.ReadResult{Error: "read pull request 7 of underpass-ai/app: not found"}, reads: 1,
			err: "job lint-fails, pull request #7: read pull request 7 of underpass-ai/app: not found"},
		{name: "axlrd has no GitHub client", job: "lint-fails", runErr: refused, reads: 1, refused: true,
			err: "read pull request #7 of underpass-ai/app for job lint-fails: no GitHub client: no token for github.com"},
		{name: "no pull request yet", job: "exec-timeout", is: ErrNoPullRequest, err: "job exec-timeout (running): no pull request yet"},
		{name: "no such job", job: "nope", is: jobs.ErrNotFound, err: "no such job: nope (axlr-tui jobs lists the jobs)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &readTemporal{fakeTemporal: &fakeTemporal{query: func(_ int, workflowID, queryType string, _ []any) (any, error) {
				if workflowID != workflows.RegistryWorkflowID || queryType != workflows.QueryJobs {
					return nil, fmt.Errorf("query %s of %s", queryType, workflowID)
				}
				return records, nil
			}}, result: tc.result, runErr: tc.runErr}
			c := newTestClient(t, f.fakeTemporal)
			c.tc = f
			c.set = &settings.Settings{Forge: settings.Forge{APIURL: "https://ghe.example.com/api/v3"}}
			c.getenv = func(k string) string {
				if strings.Contains(k, "TOKEN") {
					t.Errorf("the client read %s: g is axlrd's to read", k)
				}
				return ""
			}
			got, err := c.PullRequest(context.Background(), tc.job)
			if len(f.executed) != tc.reads {
				t.Fatalf("%d reads started, want %d", len(f.executed), tc.reads)
			}
			if tc.reads > 0 {
				s := f.executed[0]
				in := workflows.PullReadInput{Job: "lint-fails", Read: workflows.ReadInput{Repository: repoName, Number: 7}}
				if s.workflow != workflows.PullReadWorkflow || !strings.HasPrefix(s.opts.ID, "axlr-pull-lint-fails-") || s.opts.TaskQueue != "axlr-host-h" ||
					s.opts.WorkflowExecutionTimeout != workflows.PullReadTimeout || s.opts.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING ||
					!reflect.DeepEqual(s.args, []any{in}) {
					t.Errorf("started %v %+v with %+v", s.workflow, s.opts, s.args)
				}
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("PullRequest = %+v, %v; want %q", got, err, tc.err)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("error %v is not %v", err, tc.is)
				}
				if ref := new(RefusedError); tc.refused && !errors.As(err, &ref) {
					t.Errorf("error %v is not a *RefusedError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PullRequest =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
