package activities

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/workflows"
)

// TestForgeActivities against the GitHub fake and a bare origin: every
// activity run twice, as a retry after a crash would, changes the forge
// once — one clone, one commit, one pull request, one merge — and a merge
// guarded by a stale head is refused as the result's, not as an error.
func TestForgeActivities(t *testing.T) {
	s, err := githubtest.Start(githubtest.Config{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	repo, err := s.CreateRepository("underpass-ai/app", map[string]string{"calc.go": "package calc\n"})
	if err != nil {
		t.Fatal(err)
	}
	repo.SetCI(func(githubtest.Commit) []githubtest.CheckRun {
		return []githubtest.CheckRun{{Name: "test", Conclusion: "success"}}
	})
	gh, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	f := &Forge{GitHub: gh}
	ctx := context.Background()
	dir := t.TempDir()
	prep := workflows.PrepareInput{Job: "20261201-1200-parse-fails", Kind: "repair", Repository: "underpass-ai/app", Remote: repo.Path(),
		Directory: dir, Brief: "Parse fails", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	p1, err := f.Prepare(ctx, prep)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := f.Prepare(ctx, prep)
	if err != nil || p2 != p1 || p1.Base != "main" || p1.Clone != filepath.Join(dir, prep.Job) {
		t.Fatalf("prepare twice: %+v then %+v, %v", p1, p2, err)
	}
	if m, err := forge.CheckMarker(p1.Clone, "repair"); err != nil || m.Slug != prep.Job {
		t.Fatalf("marker %+v, %v", m, err)
	}

	in := workflows.ProposeInput{Clone: p1.Clone, Repository: "underpass-ai/app", Branch: "repair/" + prep.Job, Base: p1.Base,
		Commit: forge.CommitMessage{Title: "Repair: Parse handles empty input", Body: "## Cause\n…", Trailer: "Repaired-by: AXLR axlr_repair 1.0 axlr-x"},
		Title:  "Repair: Parse handles empty input", Body: "## Cause\n…"}
	if res, err := f.Propose(ctx, in); err != nil || !res.NothingChanged {
		t.Fatalf("propose with nothing changed: %+v, %v", res, err)
	}
	if err := os.WriteFile(filepath.Join(p1.Clone, "calc.go"), []byte("package calc\n\n// Fixed.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := f.Propose(ctx, in)
	if err != nil || first.PullRequest == 0 || !first.Opened || first.HeadSHA == "" {
		t.Fatalf("propose: %+v, %v", first, err)
	}
	again, err := f.Propose(ctx, in)
	if err != nil || again.PullRequest != first.PullRequest || again.Opened || again.HeadSHA != first.HeadSHA {
		t.Fatalf("propose again: %+v, %v", again, err)
	}

	read, err := f.Read(ctx, workflows.ReadInput{Repository: "underpass-ai/app", Number: first.PullRequest})
	if err != nil || read.Error != "" || read.PullRequest.HeadSHA != first.HeadSHA || len(read.Checks.Passed) != 1 {
		t.Fatalf("read: %+v, %v", read, err)
	}
	if res, err := f.UpdateBranch(ctx, workflows.UpdateBranchInput{Repository: "underpass-ai/app", Number: first.PullRequest, ExpectedHeadSHA: p1.Head}); err != nil || !res.Stale {
		t.Fatalf("update with a stale head: %+v, %v", res, err)
	}
	mi := workflows.MergeInput{Repository: "underpass-ai/app", Number: first.PullRequest, SHA: p1.Head, Branch: in.Branch, Title: in.Title}
	if res, err := f.Merge(ctx, mi); err != nil || res.Refused == "" || res.MergeSHA != "" {
		t.Fatalf("merge with a stale head: %+v, %v", res, err)
	}
	mi.SHA = first.HeadSHA
	merged, err := f.Merge(ctx, mi)
	if err != nil || merged.MergeSHA == "" || merged.Refused != "" {
		t.Fatalf("merge: %+v, %v", merged, err)
	}
	twice, err := f.Merge(ctx, mi)
	if err != nil || twice.MergeSHA != merged.MergeSHA {
		t.Fatalf("merge again: %+v, %v", twice, err)
	}
	calls := s.Calls()
	if calls.PullRequestsOpened != 1 || calls.Merges != 1 {
		t.Fatalf("forge calls %+v: want one pull request and one merge", calls)
	}

	_, err = f.Issue(ctx, workflows.IssueInput{Repository: "underpass-ai/app", Number: 999})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeForgeRefused || !app.NonRetryable() {
		t.Fatalf("a missing issue: %v", err)
	}
	n := repo.AddIssue("Parse fails on empty input", "It panics.")
	if is, err := f.Issue(ctx, workflows.IssueInput{Repository: "underpass-ai/app", Number: n}); err != nil || is.Title != "Parse fails on empty input" {
		t.Fatalf("issue %+v, %v", is, err)
	}
}
