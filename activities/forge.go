package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/sandbox"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// Forge implements workflows.ForgeActivities over a job's clone (git, with
// go-git) and its repository's GitHub. Each activity is idempotent on what
// it changes: Prepare finds the clone an earlier attempt made, Propose the
// commit, the pushed branch and the open pull request, Merge a pull request
// already merged at the same head, BuildCandidate the binaries built for
// the same commit, Install the executables it replaced already. Clones,
// fetches, pushes and builds heartbeat while they run.
type Forge struct {
	// GitHub is the repository's forge; nil when axlrd found no token, and
	// then every GitHub call is refused with NoGitHub.
	GitHub *forge.GitHub
	// NoGitHub says why there is no GitHub client.
	NoGitHub string
	// Git authenticates pushes and clones over http(s).
	Git forge.GitAuth
	// Env is the environment a candidate build takes PATH, HOME and the
	// GO* variables from (default os.Environ()).
	Env []string
	// Executable is axlrd's executable, which Install replaces (default
	// os.Executable()).
	Executable string
	// Sandbox confines the candidate build as it does the model's
	// commands (tools.sandbox); nil builds unconfined.
	Sandbox *tools.Sandbox
	// HeartbeatEvery is how often a clone, fetch, push or build heartbeats
	// (default 2 s), well within ForgeOptions' and CandidateOptions'
	// heartbeat timeout.
	HeartbeatEvery time.Duration
	// Jobs is this host's jobs directory (repair.directory): where a job
	// the registry placed here clones, whatever host asked for it.
	Jobs string
}

// beating runs call, heartbeating what it does every f.HeartbeatEvery
// until it returns: a clone or a push of a big repository can outlast the
// heartbeat timeout, and an activity that does not heartbeat is then
// timed out and started again, over and over.
func (f *Forge) beating(ctx context.Context, what string, call func() error) error {
	stop := heartbeat(ctx, f.HeartbeatEvery, func() any { return what })
	defer stop()
	return call()
}

// github returns the forge's client, or the refusal that says why there is
// none.
func (f *Forge) github() (*forge.GitHub, error) {
	if f.GitHub == nil {
		return nil, temporal.NewNonRetryableApplicationError("no GitHub client: "+f.NoGitHub, workflows.ErrTypeForgeRefused, nil)
	}
	return f.GitHub, nil
}

var (
	_ workflows.ForgeActivities     = (*Forge)(nil)
	_ workflows.CandidateActivities = (*Forge)(nil)
)

// Prepare clones the job's repository into its directory and writes the
// marker, or opens the clone a previous attempt made.
func (f *Forge) Prepare(ctx context.Context, in workflows.PrepareInput) (workflows.PrepareResult, error) {
	if in.Placed && f.Jobs != "" {
		in.Directory = f.Jobs
	}
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
	var r *forge.Repo
	err := f.beating(ctx, "clone "+in.Repository, func() (err error) {
		r, err = forge.Clone(ctx, in.Remote, dir, f.Git)
		return err
	})
	if err != nil {
		return workflows.PrepareResult{}, gitError(fmt.Errorf("clone %s: %w", in.Repository, err))
	}
	m := forge.Marker{
		Version: forge.MarkerVersion, Kind: in.Kind, Repository: in.Repository, Base: r.Base(), Slug: in.Job,
		Brief: in.Brief, About: in.About, Created: in.Created, OriginSession: in.OriginSession, Build: in.Build,
	}
	if in.Issue > 0 {
		m.Issue = &in.Issue
	}
	if in.Branch != "" {
		// A recovered or moved job's new clone goes on from the branch it
		// pushed, if it pushed one.
		if err := f.beating(ctx, "fetch "+in.Branch, func() error {
			_, err := r.Sync(ctx, in.Branch, f.Git)
			return err
		}); err != nil {
			return workflows.PrepareResult{}, branchError(err)
		}
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
func (f *Forge) Issue(ctx context.Context, in workflows.IssueInput) (pull.Issue, error) {
	gh, err := f.github()
	if err != nil {
		return pull.Issue{}, err
	}
	is, err := gh.Issue(ctx, in.Repository, in.Number)
	return is, forgeError(err)
}

// Propose commits the clone's changes on the job's branch (once), pushes
// the branch (never forced) and finds its open pull request or opens it.
// A branch the forge moved on since the last round (GitHub's update of a
// branch behind its base) is fetched first and the round's changes are
// committed on top of it; one the clone cannot follow (the update changed
// a file the round changes too, or the branch was force-pushed) is a
// final ErrTypeBranchMoved that says so, and nothing is committed.
func (f *Forge) Propose(ctx context.Context, in workflows.ProposeInput) (workflows.ProposeResult, error) {
	gh, err := f.github()
	if err != nil {
		return workflows.ProposeResult{}, err
	}
	r, err := forge.Open(in.Clone)
	if err != nil {
		return workflows.ProposeResult{}, err
	}
	if err := f.beating(ctx, "fetch "+in.Branch, func() error {
		_, err := r.Sync(ctx, in.Branch, f.Git)
		return err
	}); err != nil {
		return workflows.ProposeResult{}, branchError(err)
	}
	sha, err := r.Commit(in.Branch, in.Commit)
	if errors.Is(err, pull.ErrNothingChanged) {
		return workflows.ProposeResult{NothingChanged: true}, nil
	}
	if err != nil {
		return workflows.ProposeResult{}, fmt.Errorf("commit on %s: %w", in.Branch, err)
	}
	if err := f.beating(ctx, "push "+in.Branch, func() error { return r.Push(ctx, in.Branch, f.Git) }); err != nil {
		return workflows.ProposeResult{}, gitError(fmt.Errorf("push %s: %w", in.Branch, err))
	}
	res := workflows.ProposeResult{HeadSHA: sha}
	if res.Files, err = r.Changed(); err != nil {
		return workflows.ProposeResult{}, err
	}
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

// Read reads a pull request and the checks of its head (of an open one,
// or of any with in.ClosedChecks), once. A forge that cannot be read is
// the caller's to judge: the error is in the result.
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
	if pr.State != "open" && !in.ClosedChecks {
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
	if errors.Is(err, pull.ErrStaleHead) {
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
	case errors.Is(err, pull.ErrStaleHead), errors.Is(err, pull.ErrNotMergeable):
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
	if errors.Is(err, pull.ErrRejected) || errors.Is(err, pull.ErrNotFound) || errors.Is(err, pull.ErrStaleHead) || errors.Is(err, pull.ErrNotMergeable) {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeForgeRefused, err)
	}
	return err
}

// branchError makes an error of forge.Repo.Sync an activity error: a
// branch the clone cannot follow is final, with Sync's words; a forge
// that did not answer the fetch is retried.
func branchError(err error) error {
	if errors.Is(err, pull.ErrBranchMoved) {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeBranchMoved, err)
	}
	return gitError(err)
}

// gitError makes an error of a clone, push or fetch an activity error: a
// remote that refused (no such repository, wrong or missing credentials)
// is final, so the job says so at once instead of after its retries; a
// remote that did not answer is retried.
func gitError(err error) error {
	if errors.Is(err, pull.ErrRemoteRefused) {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeForgeRefused, err)
	}
	return err
}

// BuildCandidate builds the job's candidate from its clone's HEAD into
// <clone>.bin, heartbeating while go build runs. When HeadSHA is set and
// the clone is not there, the clone's branch is fetched first, since the
// forge may have moved it on since the last push (an update of the branch
// behind its base); a clone that still is not at HeadSHA after that is a
// final ErrTypeBranchMoved, not a candidate of another commit. A
// candidate built there already for that commit is returned as it is; a
// clone with nothing to build, or whose build fails, is the result's.
func (f *Forge) BuildCandidate(ctx context.Context, in workflows.BuildCandidateInput) (workflows.BuildCandidateResult, error) {
	if in.Job == "" || in.Clone == "" {
		return workflows.BuildCandidateResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("build candidate: job %q and clone %q must both be set", in.Job, in.Clone), workflows.ErrTypeBadRequest, nil)
	}
	r, err := forge.Open(in.Clone)
	if err != nil {
		return workflows.BuildCandidateResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("build the candidate of job %s: %v", in.Job, err), workflows.ErrTypeBadRequest, err)
	}
	head, err := r.Head()
	if err != nil {
		return workflows.BuildCandidateResult{}, fmt.Errorf("build the candidate of job %s: %w", in.Job, err)
	}
	if in.HeadSHA != "" && head != in.HeadSHA {
		if err := f.follow(ctx, r, in); err != nil {
			return workflows.BuildCandidateResult{}, err
		}
		head = in.HeadSHA
	}
	version := workflows.CandidateVersion(in.Job, head)
	env := f.Env
	if env == nil {
		env = os.Environ()
	}
	var confine forge.Confine
	if f.Sandbox != nil {
		confine = f.Sandbox.Confine
	}
	var c forge.Candidate
	err = f.beating(ctx, "build "+version, func() (err error) {
		c, err = forge.BuildCandidate(ctx, in.Clone, in.Clone+".bin", version, env, confine)
		return err
	})
	var be *forge.BuildError
	switch {
	case errors.Is(err, forge.ErrNothingToBuild):
		return workflows.BuildCandidateResult{NothingToBuild: true}, nil
	case ctx.Err() != nil:
		return workflows.BuildCandidateResult{}, ctx.Err()
	case errors.As(err, &be):
		failed := be.Error()
		if f.Sandbox != nil && f.Sandbox.Plan.ABI > 0 {
			if note := sandbox.Denied(be.Output); note != "" {
				failed += "\n" + note
			}
		}
		return workflows.BuildCandidateResult{Failed: failed}, nil
	case err != nil:
		// Not the code's failure but this host's (no go, an unwritable
		// directory): a retry finds the same.
		return workflows.BuildCandidateResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("build the candidate of job %s: %v", in.Job, err), workflows.ErrTypeBadRequest, err)
	}
	return workflows.BuildCandidateResult{Path: c.Dir, Version: c.Version, Commit: c.Commit, Binaries: c.Binaries}, nil
}

// follow brings the clone to the pull request's head in.HeadSHA by
// fetching the branch its HEAD is on, the job's since Propose.
func (f *Forge) follow(ctx context.Context, r *forge.Repo, in workflows.BuildCandidateInput) error {
	refuse := func(format string, args ...any) error {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("build the candidate of job %s: "+format, append([]any{in.Job}, args...)...), workflows.ErrTypeBranchMoved, nil)
	}
	branch, err := r.Branch()
	if err != nil {
		return refuse("its clone is not on the pull request's branch, so it cannot be brought to the head %s: %v", in.HeadSHA, err)
	}
	var head string
	err = f.beating(ctx, "fetch "+branch, func() (err error) {
		head, err = r.Sync(ctx, branch, f.Git)
		return err
	})
	switch {
	case errors.Is(err, pull.ErrBranchMoved):
		return refuse("%v", err)
	case err != nil:
		return gitError(fmt.Errorf("build the candidate of job %s: %w", in.Job, err))
	case head != in.HeadSHA:
		return refuse("its clone's branch %s is at %s after fetching it from the forge, not at the pull request's head %s; "+
			"a candidate is built only from the head the merge decision names", branch, head, in.HeadSHA)
	}
	return nil
}

// The executables a candidate holds.
const (
	daemonName = "axlrd"
	tuiName    = "axlr-tui"
)

// Install puts the candidate of a merged job in place of axlrd's own
// executable, of the axlr-tui beside it and of in.TUIPath, those the
// candidate has a binary for, each with forge.Install: the previous one
// kept as a hard link <path>.before-repair-<job>, the candidate renamed
// over the path in one step. It is all or nothing: when one fails, those
// already replaced are put back. An executable that holds the candidate
// already beside its backup is an earlier attempt's install, and counts
// as done. Every failure is an ErrTypeInstallRefused: a retry finds the
// same. axlrd keeps running the executable it started from.
func (f *Forge) Install(ctx context.Context, in workflows.InstallInput) (workflows.InstallResult, error) {
	refuse := func(format string, args ...any) (workflows.InstallResult, error) {
		return workflows.InstallResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), workflows.ErrTypeInstallRefused, nil)
	}
	switch {
	case in.Job == "":
		return refuse("install: the job is not named")
	case in.Candidate == "":
		return refuse("install job %s: it has no candidate; only a job that repairs axlr builds one, when its merge decision opens", in.Job)
	case in.MergeSHA == "":
		return refuse("install job %s: it is not merged; only a merged job is installed", in.Job)
	}
	targets, err := f.installTargets(in)
	if err != nil {
		return refuse("install job %s: %v", in.Job, err)
	}
	if len(targets) == 0 {
		return refuse("install job %s: the candidate in %s holds no %s or %s", in.Job, in.Candidate, daemonName, tuiName)
	}
	var res workflows.InstallResult
	for _, t := range targets {
		done, err := installOne(t.candidate, t.path, in.Job)
		if err != nil {
			if back := putBack(res.Installed); back != nil {
				return refuse("install job %s: %v; and putting back what it replaced: %v", in.Job, err, back)
			}
			return refuse("install job %s: %v", in.Job, err)
		}
		res.Installed = append(res.Installed, done)
	}
	return res, nil
}

// target is an executable to replace and the candidate's binary for it.
type target struct{ path, candidate string }

// installTargets lists axlrd's executable, the axlr-tui beside it and
// in.TUIPath, links resolved, each once, with the candidate's binary of
// the same command; one the candidate has no binary for is left as it is.
func (f *Forge) installTargets(in workflows.InstallInput) ([]target, error) {
	exe := f.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find axlrd's executable: %w", err)
		}
	}
	daemon, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return nil, fmt.Errorf("axlrd's executable %s: %w", exe, err)
	}
	type want struct{ path, command string }
	wants := []want{{daemon, daemonName}}
	if beside := filepath.Join(filepath.Dir(daemon), tuiName); fileExists(beside) {
		wants = append(wants, want{beside, tuiName})
	}
	if in.TUIPath != "" {
		p, err := filepath.EvalSymlinks(in.TUIPath)
		if err != nil {
			return nil, fmt.Errorf("the axlr-tui to replace, %s: %w", in.TUIPath, err)
		}
		wants = append(wants, want{p, tuiName})
	}
	var out []target
	seen := map[string]bool{}
	for _, w := range wants {
		if seen[w.path] {
			continue
		}
		seen[w.path] = true
		if bin := filepath.Join(in.Candidate, w.command); fileExists(bin) {
			out = append(out, target{path: w.path, candidate: bin})
		}
	}
	return out, nil
}

// installOne installs candidate over path, or finds it installed by an
// earlier attempt: the backup is there and path holds the candidate.
func installOne(candidate, path, job string) (jobs.Installed, error) {
	backup := path + ".before-repair-" + job
	if fileExists(backup) && sameContent(candidate, path) {
		return jobs.Installed{Path: path, Backup: backup}, nil
	}
	in, err := forge.Install(candidate, path, job)
	if err != nil {
		return jobs.Installed{}, err
	}
	return jobs.Installed{Path: in.Path, Backup: in.Backup}, nil
}

// putBack renames each backup over the executable it was kept for.
func putBack(done []jobs.Installed) error {
	var errs []error
	for _, d := range done {
		if err := os.Rename(d.Backup, d.Path); err != nil {
			errs = append(errs, fmt.Errorf("rename %s over %s by hand: %w", d.Backup, d.Path, err))
		}
	}
	return errors.Join(errs...)
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// sameContent reports whether two files hold the same bytes.
func sameContent(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	sa, errA := fa.Stat()
	sb, errB := fb.Stat()
	if errA != nil || errB != nil || sa.Size() != sb.Size() {
		return false
	}
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, errA := io.ReadFull(fa, ba)
		nb, errB := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if errA != nil || errB != nil {
			return errors.Is(errA, io.ErrUnexpectedEOF) || errors.Is(errA, io.EOF)
		}
	}
}
