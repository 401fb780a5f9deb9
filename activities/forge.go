package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/workflows"
)

// Forge implements workflows.ForgeActivities over a job's clone (git, with
// go-git) and its repository's GitHub. Each activity is idempotent on what
// it changes: Prepare finds the clone an earlier attempt made, Propose the
// commit, the pushed branch and the open pull request, Merge a pull request
// already merged at the same head.
type Forge struct {
	// GitHub is the repository's forge; nil when axlrd found no token, and
	// then every GitHub call is refused with NoGitHub.
	GitHub *forge.GitHub
	// NoGitHub says why there is no GitHub client.
	NoGitHub string
	// Git authenticates pushes and clones over http(s).
	Git forge.GitAuth
}

// github returns the forge's client, or the refusal that says why there is
// none.
func (f *Forge) github() (*forge.GitHub, error) {
	if f.GitHub == nil {
		return nil, temporal.NewNonRetryableApplicationError("no GitHub client: "+f.NoGitHub, workflows.ErrTypeForgeRefused, nil)
	}
	return f.GitHub, nil
}

var _ workflows.ForgeActivities = (*Forge)(nil)

// Prepare clones the job's repository into its directory and writes the
// marker, or opens the clone a previous attempt made.
func (f *Forge) Prepare(ctx context.Context, in workflows.PrepareInput) (workflows.PrepareResult, error) {
	dir := filepath.Join(in.Directory, in.Job)
	if m, err := forge.ReadMarker(dir); err == nil {
		if m.Slug != in.Job || m.Kind != in.Kind {
			return workflows.PrepareResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("%s holds the clone of another job (%s %s)", dir, m.Kind, m.Slug), workflows.ErrTypeBadRequest, nil)
		}
		r, err := forge.Open(dir)
		if err != nil {
			return workflows.PrepareResult{}, err
		}
		return prepared(r)
	}
	if _, err := os.Stat(dir); err == nil {
		// An attempt that died before it wrote the marker: start over.
		if err := os.RemoveAll(dir); err != nil {
			return workflows.PrepareResult{}, fmt.Errorf("remove the partial clone %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(in.Directory, 0o755); err != nil {
		return workflows.PrepareResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the jobs directory %s cannot be made: %v", in.Directory, err), workflows.ErrTypeBadRequest, err)
	}
	r, err := forge.Clone(ctx, in.Remote, dir, f.Git)
	if err != nil {
		return workflows.PrepareResult{}, fmt.Errorf("clone %s: %w", in.Repository, err)
	}
	m := forge.Marker{
		Version: forge.MarkerVersion, Kind: in.Kind, Repository: in.Repository, Base: r.Base(), Slug: in.Job,
		Brief: in.Brief, About: in.About, Created: in.Created, OriginSession: in.OriginSession, Build: in.Build,
	}
	if in.Issue > 0 {
		m.Issue = &in.Issue
	}
	if err := forge.WriteMarker(dir, m); err != nil {
		return workflows.PrepareResult{}, err
	}
	return prepared(r)
}

func prepared(r *forge.Repo) (workflows.PrepareResult, error) {
	head, err := r.Head()
	if err != nil {
		return workflows.PrepareResult{}, err
	}
	return workflows.PrepareResult{Clone: r.Dir(), Base: r.Base(), Head: head}, nil
}

// Issue reads an issue for a "#123" brief.
func (f *Forge) Issue(ctx context.Context, in workflows.IssueInput) (forge.Issue, error) {
	gh, err := f.github()
	if err != nil {
		return forge.Issue{}, err
	}
	is, err := gh.Issue(ctx, in.Repository, in.Number)
	return is, forgeError(err)
}

// Propose commits the clone's changes on the job's branch (once), pushes
// the branch (never forced) and finds its open pull request or opens it.
func (f *Forge) Propose(ctx context.Context, in workflows.ProposeInput) (workflows.ProposeResult, error) {
	gh, err := f.github()
	if err != nil {
		return workflows.ProposeResult{}, err
	}
	r, err := forge.Open(in.Clone)
	if err != nil {
		return workflows.ProposeResult{}, err
	}
	sha, err := r.Commit(in.Branch, in.Commit)
	if errors.Is(err, forge.ErrNothingChanged) {
		return workflows.ProposeResult{NothingChanged: true}, nil
	}
	if err != nil {
		return workflows.ProposeResult{}, fmt.Errorf("commit on %s: %w", in.Branch, err)
	}
	if err := r.Push(ctx, in.Branch, f.Git); err != nil {
		return workflows.ProposeResult{}, fmt.Errorf("push %s: %w", in.Branch, err)
	}
	res := workflows.ProposeResult{HeadSHA: sha}
	pr, err := gh.FindPullRequest(ctx, in.Repository, in.Branch, in.Base)
	if err != nil {
		return workflows.ProposeResult{}, forgeError(err)
	}
	if pr == nil {
		opened, err := gh.OpenPullRequest(ctx, in.Repository, forge.NewPullRequest{Title: in.Title, Body: in.Body, Head: in.Branch, Base: in.Base})
		if err != nil {
			return workflows.ProposeResult{}, forgeError(err)
		}
		pr, res.Opened = &opened, true
	}
	res.PullRequest, res.URL = pr.Number, pr.URL
	return res, nil
}

// Read reads a pull request and the checks of its head, once. A forge
// that cannot be read is the watch's to judge: the error is in the result.
func (f *Forge) Read(ctx context.Context, in workflows.ReadInput) (workflows.ReadResult, error) {
	gh, err := f.github()
	if err != nil {
		return workflows.ReadResult{}, err
	}
	pr, err := gh.PullRequest(ctx, in.Repository, in.Number)
	if err != nil {
		if ctx.Err() != nil {
			return workflows.ReadResult{}, ctx.Err()
		}
		return workflows.ReadResult{Error: err.Error()}, nil
	}
	res := workflows.ReadResult{PullRequest: pr}
	if pr.State != "open" {
		return res, nil
	}
	checks, err := gh.Checks(ctx, in.Repository, pr.HeadSHA)
	if err != nil {
		if ctx.Err() != nil {
			return workflows.ReadResult{}, ctx.Err()
		}
		res.Error = err.Error()
		return res, nil
	}
	res.Checks = checks
	return res, nil
}

// UpdateBranch updates a branch behind its base; a head that moved is
// reported stale, not retried.
func (f *Forge) UpdateBranch(ctx context.Context, in workflows.UpdateBranchInput) (workflows.UpdateBranchResult, error) {
	gh, err := f.github()
	if err != nil {
		return workflows.UpdateBranchResult{}, err
	}
	err = gh.UpdateBranch(ctx, in.Repository, in.Number, in.ExpectedHeadSHA)
	if errors.Is(err, forge.ErrStaleHead) {
		return workflows.UpdateBranchResult{Stale: true}, nil
	}
	return workflows.UpdateBranchResult{}, forgeError(err)
}

// RerunFailed reruns the failed jobs of a head's workflow runs.
func (f *Forge) RerunFailed(ctx context.Context, in workflows.RerunInput) (int, error) {
	gh, err := f.github()
	if err != nil {
		return 0, err
	}
	n, err := gh.RerunFailedJobs(ctx, in.Repository, in.HeadSHA)
	return n, forgeError(err)
}

// Merge squash-merges a pull request guarded by its head sha and deletes
// the branch. A refusal (the head moved, the forge will not merge) is the
// result's, so the job records it; a pull request already merged at that
// head is reported merged.
func (f *Forge) Merge(ctx context.Context, in workflows.MergeInput) (workflows.MergeResult, error) {
	gh, err := f.github()
	if err != nil {
		return workflows.MergeResult{}, err
	}
	sha, err := gh.Merge(ctx, in.Repository, in.Number, in.SHA, in.Title, in.Message)
	switch {
	case errors.Is(err, forge.ErrStaleHead), errors.Is(err, forge.ErrNotMergeable):
		return workflows.MergeResult{Refused: err.Error()}, nil
	case err != nil:
		return workflows.MergeResult{}, forgeError(err)
	}
	res := workflows.MergeResult{MergeSHA: sha}
	if err := gh.DeleteBranch(ctx, in.Repository, in.Branch); err != nil {
		// The merge landed; a branch left behind does not undo it.
		res.BranchKept = err.Error()
	}
	return res, nil
}

// forgeError makes a forge error an activity error: a refusal is final,
// an unreadable forge is retried.
func forgeError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, forge.ErrRejected) || errors.Is(err, forge.ErrNotFound) || errors.Is(err, forge.ErrStaleHead) || errors.Is(err, forge.ErrNotMergeable) {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeForgeRefused, err)
	}
	return err
}
