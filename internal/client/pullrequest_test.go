package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// TestPullRequest against the GitHub fake: g's read names the job's pull
// request's state, mergeable_state, head and the head's checks in their
// three classes, merged or open; a job without a pull request is refused
// before the forge, and the forge's refusals name the job and the pull
// request.
func TestPullRequest(t *testing.T) {
	const repoName, token = "underpass-ai/app", "t0ken"
	s, err := githubtest.Start(githubtest.Config{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	repo, err := s.CreateRepository(repoName, map[string]string{"calc.go": "package calc\n"})
	if err != nil {
		t.Fatal(err)
	}
	gh, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	open := func(branch string) (pull.Request, string) {
		t.Helper()
		sha, err := repo.Commit(branch, "fix "+branch, map[string]string{branch + ".go": "package calc\n"})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := gh.OpenPullRequest(ctx, repoName, forge.NewPullRequest{Title: "Fix " + branch, Head: branch, Base: "main"})
		if err != nil {
			t.Fatal(err)
		}
		return pr, sha
	}

	checked, checkedSHA := open("checked")
	for _, c := range []githubtest.CheckRun{
		{Name: "test", Conclusion: "success"},
		{Name: "lint", Conclusion: "failure", URL: "https://ci.example/lint"},
		{Name: "e2e", Status: "in_progress"},
	} {
		if err := repo.AddCheckRun(checkedSHA, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := repo.SetStatus(checkedSHA, githubtest.Status{Context: "ci/build", State: "success"}); err != nil {
		t.Fatal(err)
	}
	merged, mergedSHA := open("merged")
	if err := repo.AddCheckRun(mergedSHA, githubtest.CheckRun{Name: "test", Conclusion: "success"}); err != nil {
		t.Fatal(err)
	}
	squash, err := gh.Merge(ctx, repoName, merged.Number, mergedSHA, "", "")
	if err != nil {
		t.Fatal(err)
	}

	records := []jobs.Record{
		{ID: "lint-fails", Repository: repoName, Status: jobs.AwaitingMerge, PullRequest: checked.Number},
		{ID: "parse-fails", Repository: repoName, Status: jobs.Completed, PullRequest: merged.Number},
		{ID: "exec-timeout", Repository: repoName, Status: jobs.Running},
		{ID: "gone", Repository: repoName, Status: jobs.Blocked, PullRequest: 99},
	}
	tests := []struct {
		name, job string
		getenv    map[string]string
		want      PullRequestView
		state     string
		is        error
		err       []string // what the error names
	}{
		// Merging the second pull request moved main on: this one is behind.
		{name: "open with checks of each class", job: "lint-fails", state: "open", want: PullRequestView{
			Job: "lint-fails", Repository: repoName,
			PullRequest: pull.Request{Number: checked.Number, URL: checked.URL, State: "open", MergeableState: "behind",
				HeadRef: "checked", HeadSHA: checkedSHA, BaseRef: "main"},
			Checks: pull.Checks{SHA: checkedSHA, Passed: []string{"test", "ci/build"}, Pending: []string{"e2e"},
				Failed: []string{"lint: failure https://ci.example/lint"}},
		}},
		{name: "merged", job: "parse-fails", state: "merged", want: PullRequestView{
			Job: "parse-fails", Repository: repoName,
			PullRequest: pull.Request{Number: merged.Number, URL: merged.URL, State: "closed", Merged: true, MergeSHA: squash,
				MergeableState: "unknown", HeadRef: "merged", HeadSHA: mergedSHA, BaseRef: "main"},
			Checks: pull.Checks{SHA: mergedSHA, Passed: []string{"test"}},
		}},
		{name: "no pull request yet", job: "exec-timeout", is: ErrNoPullRequest, err: []string{"job exec-timeout (running): no pull request yet"}},
		{name: "pull request not on the forge", job: "gone", is: pull.ErrNotFound,
			err: []string{"job gone, pull request #99: read pull request 99 of underpass-ai/app: not found"}},
		{name: "token refused", job: "lint-fails", getenv: map[string]string{"GH_ENTERPRISE_TOKEN": "wrong"}, is: pull.ErrRejected,
			err: []string{fmt.Sprintf("job lint-fails, pull request #%d: read pull request %d of underpass-ai/app", checked.Number, checked.Number)}},
		{name: "no such job", job: "nope", is: jobs.ErrNotFound, err: []string{"nope"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTemporal{query: func(_ int, workflowID, queryType string, _ []any) (any, error) {
				if workflowID != workflows.RegistryWorkflowID || queryType != workflows.QueryJobs {
					return nil, fmt.Errorf("query %s of %s", queryType, workflowID)
				}
				return records, nil
			}}
			c := newTestClient(t, f)
			env := tc.getenv
			if env == nil {
				env = map[string]string{"GH_TOKEN": token}
			}
			c.set = &settings.Settings{Forge: settings.Forge{APIURL: s.URL}}
			c.getenv = func(k string) string { return env[k] }
			got, err := c.PullRequest(ctx, tc.job)
			if tc.is != nil {
				if !errors.Is(err, tc.is) {
					t.Fatalf("PullRequest = %+v, %v; want %v", got, err, tc.is)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "wrong") {
					t.Errorf("error %q holds the token", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PullRequest =\n%+v\nwant\n%+v", got, tc.want)
			}
			if got.State() != tc.state {
				t.Errorf("State() = %q, want %q", got.State(), tc.state)
			}
		})
	}
	if c := s.Calls(); c.Merges != 1 || c.PullRequestsOpened != 2 {
		t.Errorf("the reads changed the forge: %+v", c)
	}
}

// TestPullRequestForgeURL: a forge.api_url the forge client refuses is
// said before any read of the forge.
func TestPullRequestForgeURL(t *testing.T) {
	f := &fakeTemporal{query: func(int, string, string, []any) (any, error) {
		return []jobs.Record{{ID: "lint-fails", Repository: "underpass-ai/app", PullRequest: 7}}, nil
	}}
	c := newTestClient(t, f)
	c.set = &settings.Settings{Forge: settings.Forge{APIURL: "http://github.example.com/api/v3"}}
	c.getenv = func(string) string { return "" }
	_, err := c.PullRequest(context.Background(), "lint-fails")
	if err == nil || !strings.Contains(err.Error(), "job lint-fails, pull request #7 of underpass-ai/app") || !strings.Contains(err.Error(), "plain http is allowed only on loopback") {
		t.Fatalf("PullRequest = %v, want the refusal of forge.api_url", err)
	}
}
