package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/forge/pull"
)

const (
	ghRepo  = "octo/widget"
	ghToken = "ghp_testtoken0123456789"
)

// ghSetup starts a githubtest server that accepts only ghToken, with ghRepo
// holding one commit, and a client of it.
func ghSetup(t *testing.T) (*githubtest.Server, *githubtest.Repository, *forge.GitHub) {
	t.Helper()
	s, err := githubtest.Start(githubtest.Config{Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	r, err := s.CreateRepository(ghRepo, map[string]string{"README.md": "widget\n"})
	if err != nil {
		t.Fatal(err)
	}
	gh, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	return s, r, gh
}

func ghCommit(t *testing.T, r *githubtest.Repository, branch string, files map[string]string) string {
	t.Helper()
	sha, err := r.Commit(branch, "change on "+branch+"\n", files)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func ghOpen(t *testing.T, gh *forge.GitHub, branch string) pull.Request {
	t.Helper()
	pr, err := gh.OpenPullRequest(context.Background(), ghRepo, forge.NewPullRequest{Title: "Repair: " + branch, Body: "body", Head: branch, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// ghServe starts a forge answering with h until the test ends, and a
// client of it.
func ghServe(t *testing.T, h http.HandlerFunc) *forge.GitHub {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	gh, err := forge.NewGitHub(forge.Options{APIURL: srv.URL, Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	return gh
}

// ghKind fails the test unless err is a *forge.GitHubError of kind want.
func ghKind(t *testing.T, err, want error) {
	t.Helper()
	var ge *forge.GitHubError
	if !errors.As(err, &ge) || !errors.Is(err, want) {
		t.Fatalf("error %v (%T), want a GitHubError of kind %v", err, err, want)
	}
	if strings.Contains(err.Error(), ghToken) {
		t.Errorf("error text holds the token: %v", err)
	}
}

func TestNewGitHubOptions(t *testing.T) {
	tests := []struct {
		name    string
		o       forge.Options
		wantErr string
	}{
		{"github.com by default", forge.Options{Token: "t"}, ""},
		{"enterprise over https", forge.Options{APIURL: "https://ghe.example.com/api/v3", Token: "t"}, ""},
		{"http on 127.0.0.1", forge.Options{APIURL: "http://127.0.0.1:8080/", Token: "t"}, ""},
		{"http on localhost", forge.Options{APIURL: "http://localhost:8080/", Token: "t"}, ""},
		{"http on ::1", forge.Options{APIURL: "http://[::1]:8080/", Token: "t"}, ""},
		{"http elsewhere", forge.Options{APIURL: "http://ghe.example.com/api/v3/", Token: "t"}, "plain http is allowed only on loopback"},
		{"http on a name that resolves anywhere", forge.Options{APIURL: "http://127.0.0.1.example.com/", Token: "t"}, "only on loopback"},
		{"another scheme", forge.Options{APIURL: "ftp://ghe.example.com/", Token: "t"}, "want an https:// URL"},
		{"no host", forge.Options{APIURL: "https:///api/v3/", Token: "t"}, "no host"},
		{"a query", forge.Options{APIURL: "https://ghe.example.com/?x=1", Token: "t"}, "no user, query or fragment"},
		{"user info", forge.Options{APIURL: "https://me:pw@ghe.example.com/", Token: "t"}, "no user, query or fragment"},
		{"no token", forge.Options{}, "no token"},
		{"a token with a newline", forge.Options{Token: "abc\ndef"}, "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := forge.NewGitHub(tt.o)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "abc"):
				t.Errorf("error quotes the token: %v", err)
			}
		})
	}
}

func TestAPIHost(t *testing.T) {
	for in, want := range map[string]string{"": "api.github.com", "https://ghe.example.com/api/v3/": "ghe.example.com", "http://127.0.0.1:9/": "127.0.0.1"} {
		if got, err := forge.APIHost(in); err != nil || got != want {
			t.Errorf("APIHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := forge.APIHost("http://example.com/"); err == nil {
		t.Error("APIHost accepted plain http off loopback")
	}
}

func TestToken(t *testing.T) {
	// gh's configuration: one host known, and no gh to ask.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hosts.yml"), []byte("ghe.example.com:\n    oauth_token: from-gh-config\n    user: octo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GH_CONFIG_DIR", dir)
	t.Setenv("GH_PATH", filepath.Join(dir, "no-gh"))
	for _, v := range []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"} {
		t.Setenv(v, "")
	}
	tests := []struct {
		name    string
		host    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{"GH_TOKEN for github.com", "github.com", map[string]string{"GH_TOKEN": "a", "GITHUB_TOKEN": "b"}, "a", ""},
		{"GITHUB_TOKEN after it", "github.com", map[string]string{"GITHUB_TOKEN": "b"}, "b", ""},
		{"api.github.com is github.com", "api.github.com", map[string]string{"GH_TOKEN": "a", "GH_ENTERPRISE_TOKEN": "e"}, "a", ""},
		{"github.com ignores GH_ENTERPRISE_TOKEN", "github.com", map[string]string{"GH_ENTERPRISE_TOKEN": "e"}, "", "set GH_TOKEN or GITHUB_TOKEN"},
		{"GH_ENTERPRISE_TOKEN first elsewhere", "ghe.example.com", map[string]string{"GH_TOKEN": "a", "GH_ENTERPRISE_TOKEN": "e"}, "e", ""},
		{"GH_TOKEN on loopback", "127.0.0.1", map[string]string{"GH_TOKEN": "a"}, "a", ""},
		{"gh's config for the host", "ghe.example.com", nil, "from-gh-config", ""},
		{"no token anywhere", "other.example.com", nil, "", "no GitHub token for other.example.com: set GH_ENTERPRISE_TOKEN or GH_TOKEN or GITHUB_TOKEN, or log in with \"gh auth login --hostname other.example.com\""},
		{"no host", " ", nil, "", "no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := forge.Token(tt.host, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Token = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Token = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestIssue(t *testing.T) {
	_, r, gh := ghSetup(t)
	n := r.AddIssue("calc breaks on 0", "divide by zero")
	is, err := gh.Issue(context.Background(), ghRepo, n)
	if err != nil {
		t.Fatal(err)
	}
	if is.Number != n || is.Title != "calc breaks on 0" || is.Body != "divide by zero" || !strings.HasSuffix(is.URL, "/octo/widget/issues/1") {
		t.Errorf("issue = %+v", is)
	}
	_, err = gh.Issue(context.Background(), ghRepo, 42)
	ghKind(t, err, pull.ErrNotFound)
	_, err = gh.Issue(context.Background(), "not a repo", 1)
	ghKind(t, err, pull.ErrRejected)
	_, err = gh.Issue(context.Background(), ghRepo, 0)
	ghKind(t, err, pull.ErrRejected)
}

func TestOpenPullRequestOnce(t *testing.T) {
	s, r, gh := ghSetup(t)
	ctx := context.Background()
	head := ghCommit(t, r, "repair/x", map[string]string{"fix.txt": "fix"})
	if found, err := gh.FindPullRequest(ctx, ghRepo, "repair/x", "main"); err != nil || found != nil {
		t.Fatalf("before opening: %+v, %v", found, err)
	}
	pr := ghOpen(t, gh, "repair/x")
	if pr.Number != 1 || pr.State != "open" || pr.HeadRef != "repair/x" || pr.HeadSHA != head || pr.BaseRef != "main" || !strings.HasSuffix(pr.URL, "/octo/widget/pull/1") {
		t.Errorf("opened %+v", pr)
	}
	for _, h := range []string{"repair/x", "octo:repair/x"} {
		found, err := gh.FindPullRequest(ctx, ghRepo, h, "main")
		if err != nil || found == nil || found.Number != pr.Number || found.HeadSHA != head {
			t.Errorf("FindPullRequest(%s) = %+v, %v", h, found, err)
		}
	}
	if found, err := gh.FindPullRequest(ctx, ghRepo, "repair/x", "develop"); err != nil || found != nil {
		t.Errorf("into another base: %+v, %v", found, err)
	}
	again := ghOpen(t, gh, "repair/x") // a retried open
	if again.Number != pr.Number {
		t.Errorf("second open gave #%d, want #%d", again.Number, pr.Number)
	}
	if got := s.Calls().PullRequestsOpened; got != 1 {
		t.Errorf("pull requests opened = %d, want 1", got)
	}

	tests := []struct {
		name string
		p    forge.NewPullRequest
	}{
		{"a head that does not exist", forge.NewPullRequest{Title: "T", Head: "nope", Base: "main"}},
		{"an empty title", forge.NewPullRequest{Title: " ", Head: "repair/x", Base: "main"}},
		{"a title too long", forge.NewPullRequest{Title: strings.Repeat("t", 257), Head: "repair/x", Base: "main"}},
		{"a body too long", forge.NewPullRequest{Title: "T", Body: strings.Repeat("b", 65537), Head: "repair/x", Base: "main"}},
		{"a bad branch name", forge.NewPullRequest{Title: "T", Head: "repair x", Base: "main"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gh.OpenPullRequest(ctx, ghRepo, tt.p)
			ghKind(t, err, pull.ErrRejected)
		})
	}
}

func TestPullRequestRead(t *testing.T) {
	_, r, gh := ghSetup(t)
	ctx := context.Background()
	head := ghCommit(t, r, "repair/x", map[string]string{"fix.txt": "fix"})
	pr := ghOpen(t, gh, "repair/x")
	if err := r.AddCheckRun(head, githubtest.CheckRun{Name: "test", Conclusion: "success"}); err != nil {
		t.Fatal(err)
	}
	got, err := gh.PullRequest(ctx, ghRepo, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	want := pull.Request{Number: 1, URL: pr.URL, State: "open", MergeableState: "clean", HeadRef: "repair/x", HeadSHA: head, BaseRef: "main"}
	if got != want {
		t.Errorf("read %+v, want %+v", got, want)
	}
	sha, err := gh.Merge(ctx, ghRepo, pr.Number, head, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err = gh.PullRequest(ctx, ghRepo, pr.Number)
	if err != nil || !got.Merged || got.State != "closed" || got.MergeSHA != sha {
		t.Errorf("after the merge %+v, %v; want merged at %s", got, err, sha)
	}
	_, err = gh.PullRequest(ctx, ghRepo, 99)
	ghKind(t, err, pull.ErrNotFound)
}

func TestChecksClassification(t *testing.T) {
	_, r, gh := ghSetup(t)
	head := ghCommit(t, r, "repair/x", nil)
	runs := []githubtest.CheckRun{
		{Name: "build", Conclusion: "success"},
		{Name: "docs", Conclusion: "skipped"},
		{Name: "lint", Conclusion: "neutral"},
		{Name: "queued", Status: "queued"},
		{Name: "running", Status: "in_progress"},
		{Name: "waiting", Status: "waiting"},
		{Name: "test", Conclusion: "failure", URL: "https://ci.example/test"},
		{Name: "e2e", Conclusion: "timed_out", URL: "https://ci.example/e2e"},
		{Name: "perf", Conclusion: "cancelled", URL: "https://ci.example/perf"},
		{Name: "late", Conclusion: "success", AfterReads: 5},
	}
	for _, c := range runs {
		if err := r.AddCheckRun(head, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []githubtest.Status{
		{Context: "ci/jenkins", State: "success"},
		{Context: "ci/deploy", State: "pending"},
		{Context: "ci/sec", State: "error", URL: "https://sec.example/1"},
		{Context: "ci/flaky", State: "failure"},
		{Context: "ci/flaky", State: "success"}, // the latest of a context counts
	} {
		if err := r.SetStatus(head, s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := gh.Checks(context.Background(), ghRepo, head)
	if err != nil {
		t.Fatal(err)
	}
	want := pull.Checks{
		SHA:     head,
		Passed:  []string{"build", "docs", "lint", "ci/jenkins", "ci/flaky"},
		Pending: []string{"queued", "running", "waiting", "ci/deploy"},
		Failed: []string{"test: failure https://ci.example/test", "e2e: timed_out https://ci.example/e2e",
			"perf: cancelled https://ci.example/perf", "ci/sec: error https://sec.example/1"},
	}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("checks\n got %+v\nwant %+v", c, want)
	}
	if c.Total() != 13 {
		t.Errorf("Total = %d, want 13", c.Total())
	}
	_, err = gh.Checks(context.Background(), ghRepo, "HEAD")
	ghKind(t, err, pull.ErrRejected)
}

func TestChecksReadEveryPage(t *testing.T) {
	_, r, gh := ghSetup(t)
	head := ghCommit(t, r, "repair/x", nil)
	for i := range 250 {
		if err := r.AddCheckRun(head, githubtest.CheckRun{Name: fmt.Sprintf("c%03d", i), Conclusion: "success"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 120 {
		if err := r.SetStatus(head, githubtest.Status{Context: fmt.Sprintf("s%03d", i), State: "pending"}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := gh.Checks(context.Background(), ghRepo, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Passed) != 250 || len(c.Pending) != 120 || c.Passed[249] != "c249" {
		t.Errorf("read %d passed, %d pending", len(c.Passed), len(c.Pending))
	}
}

// A forge that answers for another commit than the one asked about.
func TestChecksIgnoreAnotherSHA(t *testing.T) {
	asked, other := strings.Repeat("a", 40), strings.Repeat("b", 40)
	gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(req.URL.Path, "/check-runs"):
			fmt.Fprintf(w, `{"total_count":2,"check_runs":[{"name":"old","status":"completed","conclusion":"success","head_sha":%q},{"name":"new","status":"completed","conclusion":"failure","head_sha":%q,"details_url":"https://ci.example/new"}]}`, other, asked)
		case strings.HasSuffix(req.URL.Path, "/status"):
			fmt.Fprintf(w, `{"sha":%q,"total_count":1,"statuses":[{"context":"ci","state":"success"}]}`, other)
		default:
			http.NotFound(w, req)
		}
	})
	c, err := gh.Checks(context.Background(), ghRepo, asked)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Passed) != 0 || len(c.Failed) != 1 || c.Failed[0] != "new: failure https://ci.example/new" || c.Ignored != 2 {
		t.Errorf("checks = %+v, want only the check run of %s", c, asked)
	}
}

func TestUpdateBranch(t *testing.T) {
	s, r, gh := ghSetup(t)
	ctx := context.Background()
	head := ghCommit(t, r, "repair/x", map[string]string{"fix.txt": "fix"})
	pr := ghOpen(t, gh, "repair/x")

	// Up to date: GitHub's 422 is not a stale head.
	ghKind(t, gh.UpdateBranch(ctx, ghRepo, pr.Number, head), pull.ErrRejected)

	ghCommit(t, r, "main", map[string]string{"base.txt": "moved"})
	ghKind(t, gh.UpdateBranch(ctx, ghRepo, pr.Number, strings.Repeat("0", 40)), pull.ErrStaleHead)
	if err := gh.UpdateBranch(ctx, ghRepo, pr.Number, head); err != nil {
		t.Fatal(err)
	}
	got, err := gh.PullRequest(ctx, ghRepo, pr.Number)
	if err != nil || got.HeadSHA == head || got.MergeableState == "behind" {
		t.Errorf("after the update %+v, %v", got, err)
	}
	ghKind(t, gh.UpdateBranch(ctx, ghRepo, pr.Number, head), pull.ErrStaleHead)
	ghKind(t, gh.UpdateBranch(ctx, ghRepo, 99, head), pull.ErrNotFound)
	ghKind(t, gh.UpdateBranch(ctx, ghRepo, pr.Number, "abc"), pull.ErrRejected)
	if got := s.Calls().BranchUpdates; got != 1 {
		t.Errorf("branch updates = %d, want 1", got)
	}
}

func TestMerge(t *testing.T) {
	s, r, gh := ghSetup(t)
	ctx := context.Background()
	head := ghCommit(t, r, "repair/x", map[string]string{"fix.txt": "fix"})
	pr := ghOpen(t, gh, "repair/x")

	_, err := gh.Merge(ctx, ghRepo, pr.Number, strings.Repeat("0", 40), "", "")
	ghKind(t, err, pull.ErrStaleHead)

	if err := r.SetConflicting(pr.Number, true); err != nil {
		t.Fatal(err)
	}
	_, err = gh.Merge(ctx, ghRepo, pr.Number, head, "", "")
	ghKind(t, err, pull.ErrNotMergeable)
	var ge *forge.GitHubError
	if errors.As(err, &ge); ge.StatusCode != http.StatusMethodNotAllowed || ge.Message != "Pull Request is not mergeable" {
		t.Errorf("error carries %d %q", ge.StatusCode, ge.Message)
	}
	if err := r.SetConflicting(pr.Number, false); err != nil {
		t.Fatal(err)
	}

	sha, err := gh.Merge(ctx, ghRepo, pr.Number, head, "Repair: fix (#1)", "Repaired-by: AXLR axlr_repair 1.0 i-1")
	if err != nil {
		t.Fatal(err)
	}
	if tip, _ := r.Head("main"); tip != sha {
		t.Errorf("main at %s, want the merge %s", tip, sha)
	}
	again, err := gh.Merge(ctx, ghRepo, pr.Number, head, "Repair: fix (#1)", "")
	if err != nil || again != sha {
		t.Errorf("second merge = %q, %v; want %s, nil", again, err, sha)
	}
	if c := s.Calls(); c.Merges != 1 {
		t.Errorf("merges = %d, want 1", c.Merges)
	}

	// Merged, but at another head than asked: not this caller's merge.
	_, err = gh.Merge(ctx, ghRepo, pr.Number, strings.Repeat("1", 40), "", "")
	ghKind(t, err, pull.ErrStaleHead)
}

func TestDeleteBranch(t *testing.T) {
	s, r, gh := ghSetup(t)
	ctx := context.Background()
	ghCommit(t, r, "repair/x", nil)
	for i := range 2 { // the second finds it gone
		if err := gh.DeleteBranch(ctx, ghRepo, "repair/x"); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
	if _, err := r.Head("repair/x"); err == nil {
		t.Error("the branch is still there")
	}
	if got := s.Calls().RefsDeleted; got != 1 {
		t.Errorf("refs deleted = %d, want 1", got)
	}
	ghKind(t, gh.DeleteBranch(ctx, ghRepo, "../main"), pull.ErrRejected)
}

func TestRerunFailedJobs(t *testing.T) {
	s, r, gh := ghSetup(t)
	ctx := context.Background()
	head := ghCommit(t, r, "repair/x", nil)
	for _, c := range []githubtest.CheckRun{
		{Name: "flaky", Workflow: "CI", Conclusion: "failure", RerunConclusion: "success"},
		{Name: "unit", Workflow: "CI", Conclusion: "success"},
		{Name: "lint", Workflow: "Lint", Conclusion: "success"},
		{Name: "slow", Workflow: "Slow"},
	} {
		if err := r.AddCheckRun(head, c); err != nil {
			t.Fatal(err)
		}
	}
	n, err := gh.RerunFailedJobs(ctx, ghRepo, head)
	if err != nil || n != 1 {
		t.Fatalf("rerun = %d, %v; want 1 run", n, err)
	}
	if n, err := gh.RerunFailedJobs(ctx, ghRepo, head); err != nil || n != 0 {
		t.Errorf("second rerun = %d, %v; want 0", n, err)
	}
	c, err := gh.Checks(ctx, ghRepo, head)
	if err != nil || len(c.Failed) != 0 || len(c.Passed) != 3 {
		t.Errorf("after the rerun %+v, %v", c, err)
	}
	if s.Calls().Reruns != 1 {
		t.Errorf("reruns = %d", s.Calls().Reruns)
	}
	s.Fail("rerun-failed-jobs", http.StatusInternalServerError, 1)
	r.AddCheckRun(head, githubtest.CheckRun{Name: "unit", Conclusion: "failure"})
	_, err = gh.RerunFailedJobs(ctx, ghRepo, head)
	ghKind(t, err, pull.ErrUnreadable)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestErrorKinds(t *testing.T) {
	s, r, gh := ghSetup(t)
	ctx := context.Background()
	ghCommit(t, r, "repair/x", nil)
	pr := ghOpen(t, gh, "repair/x")
	tests := []struct {
		name   string
		status int
		want   error
	}{
		{"server error", http.StatusBadGateway, pull.ErrUnreadable},
		{"rate limited", http.StatusTooManyRequests, pull.ErrUnreadable},
		{"forbidden", http.StatusForbidden, pull.ErrRejected},
		{"gone", http.StatusNotFound, pull.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Fail("/pulls/", tt.status, 1)
			_, err := gh.PullRequest(ctx, ghRepo, pr.Number)
			ghKind(t, err, tt.want)
			var ge *forge.GitHubError
			if errors.As(err, &ge); ge.StatusCode != tt.status || ge.Op != "read pull request 1 of octo/widget" {
				t.Errorf("error %+v", ge)
			}
		})
	}

	t.Run("bad credentials", func(t *testing.T) {
		wrong, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: "ghp_wrongtoken"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = wrong.PullRequest(ctx, ghRepo, pr.Number)
		ghKind(t, err, pull.ErrRejected)
		if strings.Contains(err.Error(), "ghp_wrongtoken") || !strings.Contains(err.Error(), "Bad credentials") {
			t.Errorf("error %v", err)
		}
	})

	t.Run("a transport that echoes the token", func(t *testing.T) {
		echo := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return nil, fmt.Errorf("proxy refused %q", req.Header.Get("Authorization"))
		})
		c, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: ghToken, Transport: echo})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.PullRequest(ctx, ghRepo, pr.Number)
		ghKind(t, err, pull.ErrUnreadable) // and ghKind checks the token is not in it
		if !strings.Contains(err.Error(), "token [token]") {
			t.Errorf("error %v, want the token replaced", err)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := gh.PullRequest(cctx, ghRepo, pr.Number)
		ghKind(t, err, pull.ErrUnreadable)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not say it was cancelled", err)
		}
	})
}

func TestUnusableAnswers(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"malformed", `{"number":`, "malformed response"},
		{"oversized", `{"title":"` + strings.Repeat("x", 8<<20) + `"}`, "exceeds 8388608 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tt.body)
			})
			_, err := gh.Issue(context.Background(), ghRepo, 1)
			ghKind(t, err, pull.ErrUnreadable)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestCompatibleForge: a GitHub-compatible forge that has no checks API
// (404 on check-runs) and gives mergeable instead of mergeable_state, as
// Gitea does: its commit statuses are the checks, and mergeable true reads
// as clean, so the watch goes green; mergeable false reads as a conflict.
func TestCompatibleForge(t *testing.T) {
	head := strings.Repeat("c", 40)
	var conflicted atomic.Bool
	gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(req.URL.Path, "/check-runs"):
			http.NotFound(w, req)
		case strings.HasSuffix(req.URL.Path, "/status"):
			fmt.Fprintf(w, `{"sha":%q,"total_count":1,"statuses":[{"context":"ci/test","state":"success","target_url":"https://ci.example/1"}]}`, head)
		case strings.HasSuffix(req.URL.Path, "/pulls/4"):
			fmt.Fprintf(w, `{"number":4,"html_url":"https://forge.example/o/r/pulls/4","state":"open","merged":false,"mergeable":%t,"head":{"ref":"repair/x","sha":%q},"base":{"ref":"main"}}`, !conflicted.Load(), head)
		default:
			http.NotFound(w, req)
		}
	})
	ctx := context.Background()
	c, err := gh.Checks(ctx, ghRepo, head)
	if err != nil || len(c.Passed) != 1 || c.Total() != 1 {
		t.Fatalf("checks %+v, %v", c, err)
	}
	pr, err := gh.PullRequest(ctx, ghRepo, 4)
	if err != nil || pr.MergeableState != "clean" {
		t.Fatalf("pull request %+v, %v", pr, err)
	}
	if v := pull.Evaluate(pr, c, pull.WatchState{Now: time.Now()}); v.Kind != pull.Green {
		t.Fatalf("verdict %+v", v)
	}
	conflicted.Store(true)
	if pr, err = gh.PullRequest(ctx, ghRepo, 4); err != nil || pr.MergeableState != "dirty" {
		t.Fatalf("an unmergeable pull request %+v, %v", pr, err)
	}
}

// TestAnswersThatAreNotWhatWasAsked: a forge whose answer parses but is not
// the issue or the pull request asked for (an envelope around it, another
// number, no head SHA) is unreadable, with what was wrong, and never read as
// an issue or a pull request of zero values.
func TestAnswersThatAreNotWhatWasAsked(t *testing.T) {
	head := strings.Repeat("d", 40)
	pullJSON := func(number int, state, sha string) string {
		return fmt.Sprintf(`{"number":%d,"state":%q,"head":{"ref":"repair/x","sha":%q},"base":{"ref":"main"}}`, number, state, sha)
	}
	tests := []struct {
		name string
		body string
		read func(*forge.GitHub) error
		want string
	}{
		{"issue in an envelope", `{"value":{"number":7,"title":"t"}}`, func(gh *forge.GitHub) error {
			_, err := gh.Issue(context.Background(), ghRepo, 7)
			return err
		}, "the answer is not issue 7 (number 0)"},
		{"another pull request", pullJSON(8, "open", head), func(gh *forge.GitHub) error {
			_, err := gh.PullRequest(context.Background(), ghRepo, 7)
			return err
		}, "the answer is not pull request 7 (number 8)"},
		{"no head SHA", pullJSON(7, "open", ""), func(gh *forge.GitHub) error {
			_, err := gh.PullRequest(context.Background(), ghRepo, 7)
			return err
		}, `pull request 7 has no head SHA ("")`},
		{"unknown state", pullJSON(7, "merged", head), func(gh *forge.GitHub) error {
			_, err := gh.PullRequest(context.Background(), ghRepo, 7)
			return err
		}, `pull request 7 has state "merged" (open or closed)`},
		{"opened without a number", `{"value":{}}`, func(gh *forge.GitHub) error {
			_, err := gh.OpenPullRequest(context.Background(), ghRepo, forge.NewPullRequest{Title: "t", Head: "repair/x", Base: "main"})
			return err
		}, "the answer has no pull request number"},
		{"found without a head SHA", "[" + pullJSON(7, "open", "HEAD") + "]", func(gh *forge.GitHub) error {
			_, err := gh.FindPullRequest(context.Background(), ghRepo, "repair/x", "main")
			return err
		}, `pull request 7 has no head SHA ("HEAD")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if req.Method == http.MethodPost {
					w.WriteHeader(http.StatusCreated)
				}
				fmt.Fprint(w, tt.body)
			})
			err := tt.read(gh)
			ghKind(t, err, pull.ErrUnreadable)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestChecksOnAForgeThatCapsItsPages: a GitHub-compatible forge that gives
// at most 50 items a page whatever per_page asks (as Gitea does) is read to
// its last page, by its Link header or, without one, by the total it
// reports; the one failed check on the last page is seen.
func TestChecksOnAForgeThatCapsItsPages(t *testing.T) {
	head := strings.Repeat("e", 40)
	const runs, capped = 120, 50
	for _, withLink := range []bool{true, false} {
		t.Run(fmt.Sprintf("link=%v", withLink), func(t *testing.T) {
			gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if strings.HasSuffix(req.URL.Path, "/status") {
					fmt.Fprintf(w, `{"sha":%q,"total_count":0,"statuses":[]}`, head)
					return
				}
				page, _ := strconv.Atoi(req.URL.Query().Get("page"))
				lo, hi := min((page-1)*capped, runs), min(page*capped, runs)
				var items []string
				for i := lo; i < hi; i++ {
					conclusion := "success"
					if i == runs-3 {
						conclusion = "failure"
					}
					items = append(items, fmt.Sprintf(`{"name":"c%03d","status":"completed","conclusion":%q,"head_sha":%q}`, i, conclusion, head))
				}
				total := runs
				if withLink {
					total = 0
					if hi < runs {
						w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?page=%d>; rel="next"`, req.Host, req.URL.Path, page+1))
					}
				}
				fmt.Fprintf(w, `{"total_count":%d,"check_runs":[%s]}`, total, strings.Join(items, ","))
			})
			c, err := gh.Checks(context.Background(), ghRepo, head)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Passed) != runs-1 || len(c.Failed) != 1 || !strings.HasPrefix(c.Failed[0], "c117: failure") {
				t.Fatalf("read %d passed, failed %v", len(c.Passed), c.Failed)
			}
		})
	}
}

// TestChecksKeepTheLatestOfEach: a forge that ignores filter=latest lists a
// rerun beside the failed run it replaces, and one that lists every status
// it was sent holds a context's pending status beside its success; the
// latest of each (the greatest id) is what counts, per app for check runs,
// and a later run of another commit replaces none.
func TestChecksKeepTheLatestOfEach(t *testing.T) {
	head := strings.Repeat("f", 40)
	gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(req.URL.Path, "/status") {
			fmt.Fprintf(w, `{"sha":%q,"total_count":3,"statuses":[
				{"id":12,"context":"ci/lint","state":"success"},
				{"id":11,"context":"ci/lint","state":"pending"},
				{"id":10,"context":"ci/docs","state":"failure"}]}`, head)
			return
		}
		fmt.Fprintf(w, `{"total_count":4,"check_runs":[
			{"id":1,"name":"test","status":"completed","conclusion":"failure","head_sha":%[1]q,"app":{"id":15368}},
			{"id":7,"name":"test","status":"completed","conclusion":"success","head_sha":%[1]q,"app":{"id":15368}},
			{"id":3,"name":"test","status":"in_progress","conclusion":null,"head_sha":%[1]q,"app":{"id":99}},
			{"id":2,"name":"build","status":"completed","conclusion":"success","head_sha":%[1]q,"app":{"id":15368}},
			{"id":9,"name":"build","status":"completed","conclusion":"failure","head_sha":"%[2]s","app":{"id":15368}}]}`, head, strings.Repeat("0", 40))
	})
	c, err := gh.Checks(context.Background(), ghRepo, head)
	if err != nil {
		t.Fatal(err)
	}
	want := pull.Checks{SHA: head, Passed: []string{"test", "build", "ci/lint"}, Pending: []string{"test"}, Failed: []string{"ci/docs: failure"}, Ignored: 1}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("checks\n got %+v\nwant %+v", c, want)
	}
}

// TestFindPullRequestOnAForgeThatIgnoresTheFilter: a forge that ignores the
// head filter lists every open pull request, page by page; the one of the
// head branch is found on the second page, so no second one is opened.
func TestFindPullRequestOnAForgeThatIgnoresTheFilter(t *testing.T) {
	head := strings.Repeat("a", 40)
	gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		page, _ := strconv.Atoi(req.URL.Query().Get("page"))
		var items []string
		for i := (page - 1) * 100; i < min(page*100, 130); i++ {
			branch := fmt.Sprintf("feature-%d", i)
			if i == 120 {
				branch = "repair/x"
			}
			items = append(items, fmt.Sprintf(`{"number":%d,"state":"open","head":{"ref":%q,"sha":%q},"base":{"ref":"main"}}`, i+1, branch, head))
		}
		if page == 1 {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?page=2>; rel="next", <http://%[1]s%[2]s?page=2>; rel="last"`, req.Host, req.URL.Path))
		}
		fmt.Fprintf(w, "[%s]", strings.Join(items, ","))
	})
	pr, err := gh.FindPullRequest(context.Background(), ghRepo, "repair/x", "main")
	if err != nil || pr == nil || pr.Number != 121 {
		t.Fatalf("found %+v, %v", pr, err)
	}
}

// TestListsEndAtTheirBound: a list longer than the pages the client reads
// is an unreadable forge that says how much it read, not a partial list.
func TestListsEndAtTheirBound(t *testing.T) {
	head := strings.Repeat("9", 40)
	gh := ghServe(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		page, _ := strconv.Atoi(req.URL.Query().Get("page"))
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?page=%d>; rel="next"`, req.Host, req.URL.Path, page+1))
		fmt.Fprintf(w, `{"total_count":0,"check_runs":[{"id":%d,"name":"c%d","status":"completed","conclusion":"success","head_sha":%q}]}`, page, page, head)
	})
	_, err := gh.Checks(context.Background(), ghRepo, head)
	ghKind(t, err, pull.ErrUnreadable)
	if !strings.Contains(err.Error(), "more than 10 pages of check runs (10 read)") {
		t.Fatalf("error %v", err)
	}
}
