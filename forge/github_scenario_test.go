package forge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/forge/pull"
)

// ghClone is a working clone of a githubtest repository, pushing with git's
// own receive-pack the way a job's clone does.
type ghClone struct {
	t   *testing.T
	dir string
	g   *git.Repository
}

func ghCloneOf(t *testing.T, r *githubtest.Repository) *ghClone {
	t.Helper()
	dir := t.TempDir()
	g, err := git.PlainClone(dir, false, &git.CloneOptions{URL: r.Path()})
	if err != nil {
		t.Fatal(err)
	}
	return &ghClone{t: t, dir: dir, g: g}
}

// push commits files on branch (made from HEAD the first time) and pushes
// it; it returns the commit's SHA.
func (c *ghClone) push(branch string, files map[string]string) string {
	c.t.Helper()
	wt, err := c.g.Worktree()
	if err != nil {
		c.t.Fatal(err)
	}
	ref := plumbing.NewBranchReferenceName(branch)
	_, err = c.g.Reference(ref, false)
	if err := wt.Checkout(&git.CheckoutOptions{Branch: ref, Create: err != nil, Keep: true}); err != nil {
		c.t.Fatal(err)
	}
	for p, content := range files {
		if err := os.WriteFile(filepath.Join(c.dir, p), []byte(content), 0o644); err != nil {
			c.t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			c.t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: forge.AuthorName, Email: forge.AuthorEmail, When: time.Now()}
	h, err := wt.Commit("change "+branch+"\n", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		c.t.Fatal(err)
	}
	spec := config.RefSpec(ref.String() + ":" + ref.String())
	if err := c.g.Push(&git.PushOptions{RefSpecs: []config.RefSpec{spec}}); err != nil {
		c.t.Fatal(err)
	}
	return h.String()
}

// A repair's pull request from open to merged: checks that register late,
// pending, red; a pushed fix whose new head leaves the old checks behind;
// green; the base moves (behind); a stale then a good update; a stale then
// a good merge; a repeated merge; the branch deleted twice.
func TestPullRequestScenario(t *testing.T) {
	s, err := githubtest.Start(githubtest.Config{Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.CreateRepository(ghRepo, map[string]string{"calc.go": "package calc // divides by zero\n", "README.md": "calc\n"})
	if err != nil {
		t.Fatal(err)
	}
	r.SetProtection("main", githubtest.Protection{Strict: true})
	// CI: build passes; test passes once calc.go is fixed. Both register
	// one read late and test runs for one more read.
	r.SetCI(func(c githubtest.Commit) []githubtest.CheckRun {
		test := "failure"
		if strings.Contains(c.Files["calc.go"], "fixed") {
			test = "success"
		}
		return []githubtest.CheckRun{
			{Name: "build", Conclusion: "success", AfterReads: 1},
			{Name: "test", Conclusion: test, AfterReads: 1, PendingReads: 1, URL: "https://ci.example/" + c.SHA[:7]},
		}
	})
	gh, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clone := ghCloneOf(t, r)
	const branch = "repair/20260301-1200-calc-divides-by-zero"

	first := clone.push(branch, map[string]string{"README.md": "calc, tried\n"})
	if found, err := gh.FindPullRequest(ctx, ghRepo, branch, "main"); err != nil || found != nil {
		t.Fatalf("before opening: %+v, %v", found, err)
	}
	open := forge.NewPullRequest{Title: "Repair: calc divides by zero", Body: "## Cause\n…", Head: branch, Base: "main"}
	pr, err := gh.OpenPullRequest(ctx, ghRepo, open)
	if err != nil {
		t.Fatal(err)
	}
	if retried, err := gh.OpenPullRequest(ctx, ghRepo, open); err != nil || retried.Number != pr.Number {
		t.Fatalf("a retried open gave %+v, %v", retried, err)
	}

	w := pull.WatchState{Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Grace: 2 * time.Minute}
	read := func(want pull.VerdictKind, reason string) pull.Verdict {
		t.Helper()
		p, err := gh.PullRequest(ctx, ghRepo, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		c, err := gh.Checks(ctx, ghRepo, p.HeadSHA)
		if err != nil {
			t.Fatal(err)
		}
		v := pull.Evaluate(p, c, w)
		if v.Kind != want || !strings.Contains(v.Reason, reason) {
			t.Fatalf("read %d: %s (%s), want %s containing %q", w.Reads+1, v.Kind, v.Reason, want, reason)
		}
		w = v.Next
		w.Now = w.Now.Add(30 * time.Second)
		return v
	}

	read(pull.Waiting, "register")
	read(pull.Waiting, "1 pending, 1 passed")
	red := read(pull.Red, "test: failure https://ci.example/"+first[:7])
	if red.HeadSHA != first || len(red.Failed) != 1 {
		t.Errorf("red verdict %+v", red)
	}

	fix := clone.push(branch, map[string]string{"calc.go": "package calc // fixed\n"})
	v := read(pull.Waiting, "register") // the old head's red is not this head's
	if v.HeadSHA != fix || w.HeadSHA != fix {
		t.Fatalf("watching %s, want the fix %s", v.HeadSHA, fix)
	}
	read(pull.Waiting, "pending")
	read(pull.Green, "checks green (2 passed)")

	if _, err := r.Commit("main", "someone else's change\n", map[string]string{"NEWS": "1.1\n"}); err != nil {
		t.Fatal(err)
	}
	read(pull.Behind, "behind")
	_, err = gh.Merge(ctx, ghRepo, pr.Number, fix, "", "")
	ghKind(t, err, pull.ErrNotMergeable) // strict protection: not up to date

	ghKind(t, gh.UpdateBranch(ctx, ghRepo, pr.Number, first), pull.ErrStaleHead)
	if err := gh.UpdateBranch(ctx, ghRepo, pr.Number, fix); err != nil {
		t.Fatal(err)
	}
	w.UpdatedFrom = fix
	v = read(pull.Waiting, "register")
	updated := v.HeadSHA
	if updated == fix || w.UpdatedFrom != "" {
		t.Fatalf("after the update the head is %s (UpdatedFrom %q)", updated, w.UpdatedFrom)
	}
	read(pull.Waiting, "pending")
	read(pull.Green, "checks green")

	_, err = gh.Merge(ctx, ghRepo, pr.Number, fix, "Repair: calc divides by zero (#1)", "")
	ghKind(t, err, pull.ErrStaleHead) // 409: the head is the update's
	mergeSHA, err := gh.Merge(ctx, ghRepo, pr.Number, updated, "Repair: calc divides by zero (#1)", "Repaired-by: AXLR axlr_repair 1.0 i-1")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := gh.Merge(ctx, ghRepo, pr.Number, updated, "Repair: calc divides by zero (#1)", ""); err != nil || again != mergeSHA {
		t.Errorf("the repeated merge gave %q, %v; want %s", again, err, mergeSHA)
	}
	for range 2 {
		if err := gh.DeleteBranch(ctx, ghRepo, branch); err != nil {
			t.Fatal(err)
		}
	}
	read(pull.MergedOutside, "merged")

	if c := s.Calls(); c.PullRequestsOpened != 1 || c.Merges != 1 || c.BranchUpdates != 1 || c.RefsDeleted != 1 {
		t.Errorf("calls %+v: want one pull request, one merge, one update, one delete", c)
	}
	files, err := r.Files(mergeSHA)
	if err != nil || files["calc.go"] != "package calc // fixed\n" || files["NEWS"] != "1.1\n" || files["README.md"] != "calc, tried\n" {
		t.Errorf("main after the merge: %v, %v", files, err)
	}
	if tip, _ := r.Head("main"); tip != mergeSHA {
		t.Errorf("main at %s, want %s", tip, mergeSHA)
	}
}
