package githubtest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/underpass-ai/axlr/forge/githubtest"
)

const repoName = "octo/widget"

func start(t *testing.T, c githubtest.Config) (*githubtest.Server, *githubtest.Repository) {
	t.Helper()
	s, err := githubtest.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	r, err := s.CreateRepository(repoName, map[string]string{"README.md": "widget\n", "src/a.go": "package a\n"})
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// call sends one request and decodes the JSON answer (nil on 204).
func call(t *testing.T, s *githubtest.Server, method, path string, body any) (int, any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out any
	if resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: %d, undecodable body: %v", method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode, out
}

func field(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

func mustCommit(t *testing.T, r *githubtest.Repository, branch string, files map[string]string) string {
	t.Helper()
	sha, err := r.Commit(branch, "change "+branch+"\n", files)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func openPull(t *testing.T, s *githubtest.Server, head string) int {
	t.Helper()
	code, out := call(t, s, "POST", "repos/"+repoName+"/pulls", map[string]string{"title": "T", "head": head, "base": "main"})
	if code != http.StatusCreated {
		t.Fatalf("open pull request: %d %v", code, out)
	}
	return int(field(out, "number").(float64))
}

func mergeableState(t *testing.T, s *githubtest.Server, n int) string {
	t.Helper()
	code, out := call(t, s, "GET", "repos/"+repoName+"/pulls/"+itoa(n), nil)
	if code != http.StatusOK {
		t.Fatalf("read pull request %d: %d %v", n, code, out)
	}
	st, _ := field(out, "mergeable_state").(string)
	return st
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestMergeableState(t *testing.T) {
	green := func(t *testing.T, r *githubtest.Repository, sha string) {
		if err := r.AddCheckRun(sha, githubtest.CheckRun{Name: "test", Conclusion: "success"}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string)
		want  string
	}{
		{"clean with green checks", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			green(t, r, head)
		}, "clean"},
		{"unstable while checks are not green", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			r.AddCheckRun(head, githubtest.CheckRun{Name: "test"})
		}, "unstable"},
		{"behind when the base moved", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			green(t, r, head)
			mustCommit(t, r, "main", map[string]string{"other.txt": "x"})
		}, "behind"},
		{"dirty when both sides change a file", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			mustCommit(t, r, "main", map[string]string{"src/a.go": "package a // base\n"})
		}, "dirty"},
		{"dirty when marked", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			green(t, r, head)
			r.SetConflicting(n, true)
		}, "dirty"},
		{"blocked by a required review", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			green(t, r, head)
			r.SetProtection("main", githubtest.Protection{RequireReview: true})
		}, "blocked"},
		{"clean once approved", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			green(t, r, head)
			r.SetProtection("main", githubtest.Protection{RequireReview: true})
			r.Approve(n)
		}, "clean"},
		{"blocked by strict protection while checks are not green", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			r.SetProtection("main", githubtest.Protection{Strict: true})
		}, "blocked"},
		{"behind under strict protection with green checks", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			green(t, r, head)
			r.SetProtection("main", githubtest.Protection{Strict: true})
			mustCommit(t, r, "main", map[string]string{"other.txt": "x"})
		}, "behind"},
		{"has_hooks when set", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			green(t, r, head)
			r.SetMergeableState(n, "has_hooks")
		}, "has_hooks"},
		{"unknown once closed", func(t *testing.T, s *githubtest.Server, r *githubtest.Repository, n int, head string) {
			r.ClosePullRequest(n)
		}, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, r := start(t, githubtest.Config{})
			head := mustCommit(t, r, "feature", map[string]string{"src/a.go": "package a // feature\n"})
			n := openPull(t, s, "feature")
			tt.setup(t, s, r, n, head)
			if got := mergeableState(t, s, n); got != tt.want {
				t.Errorf("mergeable_state = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCreatePullRequestValidation(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	mustCommit(t, r, "feature", map[string]string{"f.txt": "f"})
	openPull(t, s, "octo:feature")
	tests := []struct {
		name string
		body map[string]string
		want string
	}{
		{"second pull request of a head", map[string]string{"title": "T", "head": "feature", "base": "main"}, "A pull request already exists for octo:feature."},
		{"missing head", map[string]string{"title": "T", "head": "nope", "base": "main"}, "head"},
		{"missing base", map[string]string{"title": "T", "head": "feature", "base": "nope"}, "base"},
		{"no title", map[string]string{"head": "feature", "base": "main"}, "title"},
		{"head of another owner", map[string]string{"title": "T", "head": "someone:feature", "base": "main"}, "head"},
		{"nothing between", map[string]string{"title": "T", "head": "main", "base": "main"}, "No commits between main and main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := call(t, s, "POST", "repos/"+repoName+"/pulls", tt.body)
			b, _ := json.Marshal(out)
			if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), tt.want) {
				t.Errorf("got %d %s, want 422 naming %q", code, b, tt.want)
			}
		})
	}
	if got := s.Calls().PullRequestsOpened; got != 1 {
		t.Errorf("PullRequestsOpened = %d, want 1", got)
	}
}

func TestListPullRequestsFilters(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	mustCommit(t, r, "a", map[string]string{"a.txt": "a"})
	mustCommit(t, r, "b", map[string]string{"b.txt": "b"})
	na, nb := openPull(t, s, "a"), openPull(t, s, "b")
	if err := r.ClosePullRequest(nb); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  []int
	}{
		{"", []int{na}},
		{"?state=all", []int{nb, na}},
		{"?state=closed", []int{nb}},
		{"?state=all&head=octo:b", []int{nb}},
		{"?head=someone:a", nil},
		{"?base=other", nil},
	}
	for _, tt := range tests {
		code, out := call(t, s, "GET", "repos/"+repoName+"/pulls"+tt.query, nil)
		list, _ := out.([]any)
		var got []int
		for _, p := range list {
			got = append(got, int(field(p, "number").(float64)))
		}
		if code != http.StatusOK || len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
			t.Errorf("pulls%s = %d %v, want %v", tt.query, code, got, tt.want)
		}
	}
}

func TestUpdateBranchAndSquashMerge(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	head := mustCommit(t, r, "feature", map[string]string{"f.txt": "feature\n"})
	n := openPull(t, s, "feature")
	base := mustCommit(t, r, "main", map[string]string{"m.txt": "main\n"})
	path := "repos/" + repoName + "/pulls/" + itoa(n)

	code, out := call(t, s, "PUT", path+"/update-branch", map[string]string{"expected_head_sha": strings.Repeat("0", 40)})
	if code != http.StatusUnprocessableEntity || !strings.Contains(field(out, "message").(string), "expected head sha") {
		t.Fatalf("stale update-branch: %d %v", code, out)
	}
	if code, out = call(t, s, "PUT", path+"/update-branch", map[string]string{"expected_head_sha": head}); code != http.StatusAccepted {
		t.Fatalf("update-branch: %d %v", code, out)
	}
	updated, _ := r.Head("feature")
	parents, err := r.Parents(updated)
	if err != nil || len(parents) != 2 || parents[0] != head || parents[1] != base {
		t.Fatalf("update made %s with parents %v (%v), want [%s %s]", updated, parents, err, head, base)
	}
	if code, out = call(t, s, "PUT", path+"/update-branch", map[string]string{"expected_head_sha": updated}); code != http.StatusUnprocessableEntity {
		t.Errorf("update-branch when up to date: %d %v, want 422", code, out)
	}

	if code, out = call(t, s, "PUT", path+"/merge", map[string]string{"sha": head, "merge_method": "squash"}); code != http.StatusConflict {
		t.Errorf("merge at the old head: %d %v, want 409", code, out)
	}
	code, out = call(t, s, "PUT", path+"/merge", map[string]string{"sha": updated, "merge_method": "squash", "commit_title": "Squashed", "commit_message": "body"})
	if code != http.StatusOK || field(out, "merged") != true {
		t.Fatalf("merge: %d %v", code, out)
	}
	squash := field(out, "sha").(string)
	if tip, _ := r.Head("main"); tip != squash {
		t.Errorf("main is at %s, want the squash commit %s", tip, squash)
	}
	if parents, _ := r.Parents(squash); len(parents) != 1 || parents[0] != base {
		t.Errorf("squash parents = %v, want [%s]", parents, base)
	}
	files, err := r.Files(squash)
	if err != nil || files["f.txt"] != "feature\n" || files["m.txt"] != "main\n" || files["src/a.go"] != "package a\n" {
		t.Errorf("squash files = %v (%v)", files, err)
	}
	if code, out = call(t, s, "PUT", path+"/merge", map[string]string{"sha": updated, "merge_method": "squash"}); code != http.StatusMethodNotAllowed {
		t.Errorf("second merge: %d %v, want 405", code, out)
	}
	if c := s.Calls(); c.Merges != 1 || c.MergeAttempts != 3 || c.BranchUpdates != 1 {
		t.Errorf("calls = %+v, want 1 merge of 3 attempts and 1 update", c)
	}
	if p := r.PullRequests(); len(p) != 1 || !p[0].Merged || p[0].MergeSHA != squash || p[0].State != "closed" {
		t.Errorf("pull requests = %+v", p)
	}
	// What the server wrote is a repository git itself accepts.
	if out, err := exec.Command("git", "-C", r.Path(), "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
	// A clone checks out main, the bare repository's HEAD.
	if out, err := exec.Command("git", "-C", r.Path(), "symbolic-ref", "HEAD").CombinedOutput(); err != nil || string(out) != "refs/heads/main\n" {
		t.Errorf("HEAD = %q, %v; want refs/heads/main", out, err)
	}
}

func TestMergeRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, r *githubtest.Repository, n int, head string)
		want  string
	}{
		{"conflict", func(t *testing.T, r *githubtest.Repository, n int, head string) {
			r.SetConflicting(n, true)
		}, "not mergeable"},
		{"review required", func(t *testing.T, r *githubtest.Repository, n int, head string) {
			r.SetProtection("main", githubtest.Protection{RequireReview: true})
		}, "approving review"},
		{"strict with pending checks", func(t *testing.T, r *githubtest.Repository, n int, head string) {
			r.SetProtection("main", githubtest.Protection{Strict: true})
			r.AddCheckRun(head, githubtest.CheckRun{Name: "test"})
		}, "status checks"},
		{"strict and behind", func(t *testing.T, r *githubtest.Repository, n int, head string) {
			r.SetProtection("main", githubtest.Protection{Strict: true})
			r.AddCheckRun(head, githubtest.CheckRun{Name: "test", Conclusion: "success"})
			mustCommit(t, r, "main", map[string]string{"m.txt": "m"})
		}, "out of date"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, r := start(t, githubtest.Config{})
			head := mustCommit(t, r, "feature", map[string]string{"f.txt": "f"})
			n := openPull(t, s, "feature")
			tt.setup(t, r, n, head)
			code, out := call(t, s, "PUT", "repos/"+repoName+"/pulls/"+itoa(n)+"/merge", map[string]string{"sha": head, "merge_method": "squash"})
			if msg, _ := field(out, "message").(string); code != http.StatusMethodNotAllowed || !strings.Contains(msg, tt.want) {
				t.Errorf("merge: %d %v, want 405 naming %q", code, out, tt.want)
			}
			if s.Calls().Merges != 0 {
				t.Error("a refused merge counted as a merge")
			}
		})
	}
}

func TestNonStrictMergeOfABehindBranch(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	head := mustCommit(t, r, "feature", map[string]string{"f.txt": "f"})
	n := openPull(t, s, "feature")
	mustCommit(t, r, "main", map[string]string{"m.txt": "m"})
	code, out := call(t, s, "PUT", "repos/"+repoName+"/pulls/"+itoa(n)+"/merge", map[string]string{"sha": head, "merge_method": "merge"})
	if code != http.StatusOK {
		t.Fatalf("merge: %d %v", code, out)
	}
	parents, _ := r.Parents(field(out, "sha").(string))
	if len(parents) != 2 || parents[1] != head {
		t.Errorf("merge commit parents = %v, want the base tip and %s", parents, head)
	}
}

func TestChecksRegisterLateAndComplete(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	head := mustCommit(t, r, "feature", nil)
	r.AddCheckRun(head, githubtest.CheckRun{Name: "build", Conclusion: "success"})
	r.AddCheckRun(head, githubtest.CheckRun{Name: "test", Conclusion: "failure", AfterReads: 1, PendingReads: 1})
	r.SetStatus(head, githubtest.Status{Context: "ci/ext", State: "pending", AfterReads: 1})
	read := func() (runs []string, combined string) {
		_, out := call(t, s, "GET", "repos/"+repoName+"/commits/"+head+"/check-runs", nil)
		for _, c := range field(out, "check_runs").([]any) {
			runs = append(runs, field(c, "name").(string)+"="+field(c, "status").(string)+"/"+str(field(c, "conclusion")))
		}
		_, st := call(t, s, "GET", "repos/"+repoName+"/commits/"+head+"/status", nil)
		return runs, field(st, "state").(string)
	}
	want := []struct {
		runs     string
		combined string
	}{
		{"build=completed/success", "pending"},
		{"build=completed/success test=in_progress/", "pending"},
		{"build=completed/success test=completed/failure", "pending"},
	}
	for i, w := range want {
		runs, combined := read()
		if got := strings.Join(runs, " "); got != w.runs || combined != w.combined {
			t.Errorf("read %d: runs %q, status %q; want %q, %q", i, got, combined, w.runs, w.combined)
		}
	}
	r.SetStatus(head, githubtest.Status{Context: "ci/ext", State: "success"})
	if _, combined := read(); combined != "success" {
		t.Errorf("status after success = %q", combined)
	}
}

func str(v any) string { s, _ := v.(string); return s }

func TestCIRunsOnEveryNewHead(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	r.SetCI(func(c githubtest.Commit) []githubtest.CheckRun {
		conclusion := "failure"
		if c.Files["fixed.txt"] != "" {
			conclusion = "success"
		}
		return []githubtest.CheckRun{{Name: "test", Conclusion: conclusion}}
	})
	first := mustCommit(t, r, "feature", map[string]string{"f.txt": "f"})
	n := openPull(t, s, "feature")
	second := mustCommit(t, r, "feature", map[string]string{"fixed.txt": "yes"})
	conclusion := func(sha string) string {
		_, out := call(t, s, "GET", "repos/"+repoName+"/commits/"+sha+"/check-runs", nil)
		runs := field(out, "check_runs").([]any)
		if len(runs) != 1 {
			t.Fatalf("check runs of %s: %v", sha, runs)
		}
		return str(field(runs[0], "conclusion"))
	}
	if got := mergeableState(t, s, n); got != "clean" {
		t.Errorf("state after the fix = %q, want clean", got)
	}
	if a, b := conclusion(first), conclusion(second); a != "failure" || b != "success" {
		t.Errorf("conclusions = %s, %s; want failure, success", a, b)
	}
}

func TestWorkflowRunRerun(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	head := mustCommit(t, r, "feature", nil)
	r.AddCheckRun(head, githubtest.CheckRun{Name: "flaky", Conclusion: "failure", RerunConclusion: "success", PendingReads: 0})
	r.AddCheckRun(head, githubtest.CheckRun{Name: "lint", Conclusion: "success", Workflow: "Lint"})
	_, out := call(t, s, "GET", "repos/"+repoName+"/actions/runs?head_sha="+head, nil)
	runs := field(out, "workflow_runs").([]any)
	var failedID string
	for _, wr := range runs {
		if str(field(wr, "conclusion")) == "failure" {
			failedID = itoa(int(field(wr, "id").(float64)))
		}
	}
	if len(runs) != 2 || failedID == "" {
		t.Fatalf("workflow runs = %v", runs)
	}
	if code, out := call(t, s, "POST", "repos/"+repoName+"/actions/runs/"+failedID+"/rerun-failed-jobs", map[string]any{}); code != http.StatusCreated {
		t.Fatalf("rerun: %d %v", code, out)
	}
	if code, _ := call(t, s, "POST", "repos/"+repoName+"/actions/runs/"+failedID+"/rerun-failed-jobs", map[string]any{}); code != http.StatusForbidden {
		t.Errorf("second rerun of a run without failed jobs: %d, want 403", code)
	}
	_, out = call(t, s, "GET", "repos/"+repoName+"/commits/"+head+"/check-runs", nil)
	for _, c := range field(out, "check_runs").([]any) {
		if str(field(c, "conclusion")) != "success" {
			t.Errorf("after the rerun %v", c)
		}
	}
	_, out = call(t, s, "GET", "repos/"+repoName+"/commits/"+head+"/check-runs?filter=all", nil)
	if n := len(field(out, "check_runs").([]any)); n != 3 {
		t.Errorf("filter=all shows %d runs, want 3", n)
	}
	if s.Calls().Reruns != 1 {
		t.Errorf("reruns = %d", s.Calls().Reruns)
	}
}

func TestPagination(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	head := mustCommit(t, r, "feature", nil)
	for i := range 150 {
		r.AddCheckRun(head, githubtest.CheckRun{Name: "c" + itoa(i), Conclusion: "success"})
	}
	resp, err := http.Get(s.URL + "repos/" + repoName + "/commits/" + head + "/check-runs?per_page=100")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if link := resp.Header.Get("Link"); !strings.Contains(link, `page=2`) || !strings.Contains(link, `rel="next"`) {
		t.Errorf("Link = %q", link)
	}
	_, out := call(t, s, "GET", "repos/"+repoName+"/commits/"+head+"/check-runs?per_page=100&page=2", nil)
	if n := len(field(out, "check_runs").([]any)); n != 50 || field(out, "total_count").(float64) != 150 {
		t.Errorf("page 2: %d runs of %v", n, field(out, "total_count"))
	}
}

func TestDeleteBranchClosesItsPullRequest(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	mustCommit(t, r, "repair/x-y", map[string]string{"f": "f"})
	n := openPull(t, s, "repair/x-y")
	if code, out := call(t, s, "DELETE", "repos/"+repoName+"/git/refs/heads/repair/x-y", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, out)
	}
	if code, _ := call(t, s, "DELETE", "repos/"+repoName+"/git/refs/heads/repair/x-y", nil); code != http.StatusUnprocessableEntity {
		t.Errorf("second delete: %d, want 422", code)
	}
	if p := r.PullRequests(); p[0].Number != n || p[0].State != "closed" || p[0].Merged {
		t.Errorf("pull request after its branch went: %+v", p[0])
	}
}

func TestIssues(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	n := r.AddIssue("It breaks", "steps")
	code, out := call(t, s, "GET", "repos/"+repoName+"/issues/"+itoa(n), nil)
	if code != http.StatusOK || field(out, "title") != "It breaks" || field(out, "body") != "steps" || !strings.HasSuffix(str(field(out, "html_url")), "/octo/widget/issues/1") {
		t.Errorf("issue: %d %v", code, out)
	}
	if code, _ := call(t, s, "GET", "repos/"+repoName+"/issues/99", nil); code != http.StatusNotFound {
		t.Errorf("missing issue: %d", code)
	}
}

func TestAuthFaultsAndUnknownRoutes(t *testing.T) {
	s, _ := start(t, githubtest.Config{Token: "sekrit"})
	get := func(path, auth string) int {
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		path, auth string
		want       int
	}{
		{"repos/" + repoName + "/pulls", "", http.StatusUnauthorized},
		{"repos/" + repoName + "/pulls", "token wrong", http.StatusUnauthorized},
		{"repos/" + repoName + "/pulls", "token sekrit", http.StatusOK},
		{"repos/" + repoName + "/pulls", "Bearer sekrit", http.StatusOK},
		{"repos/octo/none/pulls", "token sekrit", http.StatusNotFound},
		{"user", "token sekrit", http.StatusNotFound},
	}
	for _, tt := range tests {
		if got := get(tt.path, tt.auth); got != tt.want {
			t.Errorf("GET %s with %q = %d, want %d", tt.path, tt.auth, got, tt.want)
		}
	}
	s.Fail("GET /repos/"+repoName+"/pulls", http.StatusBadGateway, 2)
	for i, want := range []int{http.StatusBadGateway, http.StatusBadGateway, http.StatusOK} {
		if got := get("repos/"+repoName+"/pulls", "token sekrit"); got != want {
			t.Errorf("request %d after Fail = %d, want %d", i, got, want)
		}
	}
}

// A real git push moves a pull request's head.
func TestPushMovesTheHead(t *testing.T) {
	s, r := start(t, githubtest.Config{})
	mustCommit(t, r, "feature", map[string]string{"f": "1"})
	n := openPull(t, s, "feature")
	dir := t.TempDir()
	g, err := git.PlainClone(dir, false, &git.CloneOptions{URL: r.Path(), ReferenceName: plumbing.NewBranchReferenceName("feature")})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := g.Worktree()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt.Add("f")
	sha, err := wt.Commit("two\n", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Push(&git.PushOptions{RefSpecs: []config.RefSpec{"refs/heads/feature:refs/heads/feature"}}); err != nil {
		t.Fatal(err)
	}
	_, out := call(t, s, "GET", "repos/"+repoName+"/pulls/"+itoa(n), nil)
	if got := field(out, "head", "sha"); got != sha.String() {
		t.Errorf("head after push = %v, want %s", got, sha)
	}
}
