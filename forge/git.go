package forge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/underpass-ai/axlr/forge/pull"
)

// AuthorName and AuthorEmail sign every commit a job makes, as author and
// as committer.
const (
	AuthorName  = "AXLR"
	AuthorEmail = "axlr@underpass.ai"
)

// GitAuth is what a clone or a push presents to the remote.
type GitAuth struct {
	// Token is sent as HTTP basic auth "x-access-token:<token>" to http and
	// https remotes, and to no other kind. It is never written to the
	// clone's configuration nor quoted in an error. Empty: anonymous.
	Token string
}

// method returns the transport credentials for remote, nil when none apply.
func (a GitAuth) method(remote string) transport.AuthMethod {
	if a.Token == "" {
		return nil
	}
	ep, err := transport.NewEndpoint(remote)
	if err != nil || (ep.Protocol != "http" && ep.Protocol != "https") {
		return nil
	}
	return &githttp.BasicAuth{Username: "x-access-token", Password: a.Token}
}

// refusedError is a clone's, push's or fetch's error that matches
// ErrRemoteRefused, its text unchanged.
type refusedError struct{ error }

func (e refusedError) Unwrap() error        { return e.error }
func (e refusedError) Is(target error) bool { return target == pull.ErrRemoteRefused }

// remoteError is the error of a clone, push or fetch: the token scrubbed
// from it, and a refusal of the remote matching ErrRemoteRefused.
func (a GitAuth) remoteError(err error) error {
	refused := errors.Is(err, transport.ErrRepositoryNotFound) || errors.Is(err, transport.ErrEmptyRemoteRepository) ||
		errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrInvalidAuthMethod)
	err = a.scrub(err)
	if refused {
		return refusedError{err}
	}
	return err
}

// scrub returns err with every occurrence of the token replaced. An error
// whose text quoted the token loses its chain, so that no wrapped value can
// print it later.
func (a GitAuth) scrub(err error) error {
	if err == nil || a.Token == "" || !strings.Contains(err.Error(), a.Token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), a.Token, "[token]"))
}

// Repo is a job's clone: a non-bare repository with a worktree and an
// "origin" remote.
type Repo struct {
	dir  string
	repo *git.Repository
	base string
}

// Clone clones remote into dir, which must not exist yet, and returns the
// clone with its base branch set to the branch the remote's HEAD names.
// remote is any git URL or a local path (a relative path is made absolute
// first); local paths run git-upload-pack and git-receive-pack, as go-git's
// file transport does. Credentials written into remote itself are kept in
// the clone's configuration like any URL; auth's are not. A clone that
// fails removes what it wrote.
func Clone(ctx context.Context, remote, dir string, auth GitAuth) (*Repo, error) {
	if strings.TrimSpace(remote) == "" {
		return nil, errors.New("clone: the remote is empty")
	}
	if dir == "" {
		return nil, errors.New("clone: the directory is empty")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("clone into %s: %w", dir, err)
	}
	url, err := remoteURL(remote)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", displayRemote(remote), err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("clone into %s: the directory already exists; a job clones into a new directory", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("clone into %s: %w", dir, err)
	}
	r, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{URL: url, Auth: auth.method(url)})
	if err != nil {
		return nil, auth.remoteError(fmt.Errorf("clone %s into %s: %w", displayRemote(url), dir, err))
	}
	head, err := r.Head()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clone %s into %s: read HEAD: %w", displayRemote(url), dir, err)
	}
	if !head.Name().IsBranch() {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clone %s into %s: the remote's HEAD is not a branch", displayRemote(url), dir)
	}
	base := head.Name().Short()
	// Like git clone, record the remote's default branch, so that Open can
	// tell the base of a clone it did not make.
	originHead := plumbing.NewSymbolicReference(
		plumbing.NewRemoteHEADReferenceName(git.DefaultRemoteName),
		plumbing.NewRemoteReferenceName(git.DefaultRemoteName, base))
	if err := r.Storer.SetReference(originHead); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clone %s into %s: record origin/HEAD: %w", displayRemote(url), dir, err)
	}
	return &Repo{dir: dir, repo: r, base: base}, nil
}

// Open opens a clone that exists, such as the clone of a job resumed after a
// crash. Its base is the branch refs/remotes/origin/HEAD names, else the
// base its marker records.
func Open(dir string) (*Repo, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open clone %s: %w", dir, err)
	}
	r, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("open clone %s: %w", dir, err)
	}
	if _, err := r.Worktree(); err != nil {
		return nil, fmt.Errorf("open clone %s: %w", dir, err)
	}
	if _, err := r.Remote(git.DefaultRemoteName); err != nil {
		return nil, fmt.Errorf("open clone %s: remote %q: %w", dir, git.DefaultRemoteName, err)
	}
	base := ""
	ref, err := r.Storer.Reference(plumbing.NewRemoteHEADReferenceName(git.DefaultRemoteName))
	if err == nil && ref.Type() == plumbing.SymbolicReference {
		base = strings.TrimPrefix(ref.Target().String(), "refs/remotes/"+git.DefaultRemoteName+"/")
	}
	if base == "" {
		m, merr := ReadMarker(dir)
		if merr != nil {
			return nil, fmt.Errorf("open clone %s: it has no refs/remotes/origin/HEAD, so its base comes from its marker: %w", dir, merr)
		}
		base = m.Base
	}
	return &Repo{dir: dir, repo: r, base: base}, nil
}

// Dir is the clone's absolute path.
func (r *Repo) Dir() string { return r.dir }

// Base is the branch the clone started from: the remote's default branch.
func (r *Repo) Base() string { return r.base }

// Head returns the commit HEAD points at, as 40 hex digits.
func (r *Repo) Head() (string, error) {
	head, err := r.repo.Head()
	if err != nil {
		return "", fmt.Errorf("read HEAD of %s: %w", r.dir, err)
	}
	return head.Hash().String(), nil
}

// Dirty lists, sorted, the paths that git status --porcelain would show:
// changed, staged, deleted and untracked files. Ignored files and the job
// marker are left out.
func (r *Repo) Dirty() ([]string, error) {
	wt, err := r.worktree()
	if err != nil {
		return nil, err
	}
	st, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", r.dir, err)
	}
	var paths []string
	for p, s := range st {
		if p == MarkerFile || (s.Staging == git.Unmodified && s.Worktree == git.Unmodified) {
			continue
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, nil
}

// RepositoryOf returns the owner/name of the repository whose work tree
// holds dir, read from its origin remote's URL (https, ssh or scp-like:
// the URL's last two path segments, without .git), and false when dir is
// in no repository or its origin names no owner and name.
func RepositoryOf(dir string) (string, bool) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", false
	}
	origin, err := r.Remote("origin")
	if err != nil || len(origin.Config().URLs) == 0 {
		return "", false
	}
	u := origin.Config().URLs[0]
	host, p := "", u
	switch {
	case strings.Contains(u, "://"):
		_, rest, _ := strings.Cut(u, "://")
		host, p, _ = strings.Cut(rest, "/")
	case strings.Contains(u, ":") && !strings.HasPrefix(u, "/"):
		host, p, _ = strings.Cut(u, ":") // git@github.com:owner/name.git
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(p, ".git"), "/"), "/")
	if host == "" || len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return "", false
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1], true
}

// Changed lists, sorted, the files HEAD changes from the base branch as
// the clone holds it (origin's, else the local one): what a pull request
// of HEAD shows.
func (r *Repo) Changed() ([]string, error) {
	var base *plumbing.Reference
	var err error
	for _, name := range []plumbing.ReferenceName{plumbing.NewRemoteReferenceName("origin", r.base), plumbing.NewBranchReferenceName(r.base)} {
		if base, err = r.repo.Reference(name, true); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("changed files of %s: read base %s: %w", r.dir, r.base, err)
	}
	head, err := r.repo.Head()
	if err != nil {
		return nil, fmt.Errorf("changed files of %s: read HEAD: %w", r.dir, err)
	}
	trees := make([]*object.Tree, 2)
	for i, h := range []plumbing.Hash{base.Hash(), head.Hash()} {
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("changed files of %s: read commit %s: %w", r.dir, h, err)
		}
		if trees[i], err = c.Tree(); err != nil {
			return nil, fmt.Errorf("changed files of %s: read tree of %s: %w", r.dir, h, err)
		}
	}
	changes, err := object.DiffTree(trees[0], trees[1])
	if err != nil {
		return nil, fmt.Errorf("changed files of %s: %w", r.dir, err)
	}
	var paths []string
	for _, c := range changes {
		p := c.To.Name
		if p == "" {
			p = c.From.Name
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, nil
}

// Commit commits every change of the worktree on branch, the way
//
//	git checkout -B <branch> && git add -A && git commit -m <message>
//
// does: branch is pointed at the current HEAD, the worktree and index are
// kept, new, changed and deleted files are staged (ignored files and the
// marker are not), and the commit is made by AXLR <axlr@underpass.ai>,
// unsigned. It returns ErrNothingChanged when the staged tree equals HEAD's.
//
// A retry is safe: when HEAD already is branch at a commit with exactly this
// message and the worktree has no further change, that commit's hash is
// returned and nothing is committed.
func (r *Repo) Commit(branch string, c pull.CommitMessage) (string, error) {
	msg, err := c.Text()
	if err != nil {
		return "", fmt.Errorf("commit on %s: %w", branch, err)
	}
	name := plumbing.NewBranchReferenceName(branch)
	if branch == "" || name.Validate() != nil {
		return "", fmt.Errorf("commit: %q is not a valid branch name", branch)
	}
	head, err := r.repo.Head()
	if err != nil {
		return "", fmt.Errorf("commit on %s: read HEAD: %w", branch, err)
	}
	done, err := r.committed(name, head.Hash(), msg)
	if err != nil {
		return "", fmt.Errorf("commit on %s: %w", branch, err)
	}
	if done {
		return head.Hash().String(), nil
	}

	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(name, head.Hash())); err != nil {
		return "", fmt.Errorf("commit on %s: create the branch: %w", branch, err)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, name)); err != nil {
		return "", fmt.Errorf("commit on %s: check out the branch: %w", branch, err)
	}
	wt, err := r.worktree()
	if err != nil {
		return "", err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("commit on %s: stage the changes: %w", branch, err)
	}
	sig := &object.Signature{Name: AuthorName, Email: AuthorEmail, When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if errors.Is(err, git.ErrEmptyCommit) {
		return "", pull.ErrNothingChanged
	}
	if err != nil {
		return "", fmt.Errorf("commit on %s: %w", branch, err)
	}
	return h.String(), nil
}

// committed reports whether a previous Commit of msg on branch already
// landed: HEAD is the branch, its commit carries msg and AXLR's address, and
// the worktree is clean.
func (r *Repo) committed(branch plumbing.ReferenceName, head plumbing.Hash, msg string) (bool, error) {
	ref, err := r.repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return false, fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() != plumbing.SymbolicReference || ref.Target() != branch {
		return false, nil
	}
	c, err := r.repo.CommitObject(head)
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", head, err)
	}
	if c.Message != msg || c.Author.Email != AuthorEmail {
		return false, nil
	}
	dirty, err := r.Dirty()
	if err != nil {
		return false, err
	}
	return len(dirty) == 0, nil
}

// Push pushes refs/heads/<branch> to the same name on origin, never forced:
// a remote branch that moved elsewhere fails the push. A branch the remote
// already has at this commit is success, so a retry is safe. The branch is
// then tracked as git push -u would record it.
func (r *Repo) Push(ctx context.Context, branch string, auth GitAuth) error {
	name := plumbing.NewBranchReferenceName(branch)
	if branch == "" || name.Validate() != nil {
		return fmt.Errorf("push: %q is not a valid branch name", branch)
	}
	remote, url, err := r.origin()
	if err != nil {
		return fmt.Errorf("push %s: %w", branch, err)
	}
	spec := config.RefSpec(name.String() + ":" + name.String())
	err = remote.PushContext(ctx, &git.PushOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{spec},
		Auth:       auth.method(url),
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return auth.remoteError(fmt.Errorf("push %s to %s: %w", branch, displayRemote(url), err))
	}
	cfg, err := r.repo.Config()
	if err != nil {
		return fmt.Errorf("push %s: read the clone's configuration: %w", branch, err)
	}
	if b, ok := cfg.Branches[branch]; ok && b.Remote == git.DefaultRemoteName && b.Merge == name {
		return nil
	}
	cfg.Branches[branch] = &config.Branch{Name: branch, Remote: git.DefaultRemoteName, Merge: name}
	if err := r.repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("push %s: record its upstream: %w", branch, err)
	}
	return nil
}

// BranchConflictError is Sync's refusal when the forge updated the branch
// (GitHub's update-branch merges the base into it) with changes to files
// the worktree changes too. Files lists the worktree's paths, sorted.
type BranchConflictError struct {
	Branch string
	Files  []string
}

func (e *BranchConflictError) Error() string {
	return fmt.Sprintf("the branch %s was updated on the forge with changes to files this round changes too: %s",
		e.Branch, strings.Join(e.Files, ", "))
}

// Is makes a BranchConflictError match ErrBranchMoved.
func (e *BranchConflictError) Is(target error) bool { return target == pull.ErrBranchMoved }

// BranchDivergedError is Sync's refusal when the forge's branch neither
// descends from the clone's HEAD nor is behind it: it was force-pushed, or
// pushed to after the clone committed.
type BranchDivergedError struct {
	Branch string
	// Local is the clone's HEAD, Remote the head of the forge's branch.
	Local, Remote string
}

func (e *BranchDivergedError) Error() string {
	return fmt.Sprintf("the branch %s on the forge is at %s, which does not descend from the clone's HEAD %s "+
		"(it was force-pushed, or pushed to after the clone committed); the job does not overwrite it",
		e.Branch, pull.ShortSHA(e.Remote), pull.ShortSHA(e.Local))
}

// Is makes a BranchDivergedError match ErrBranchMoved.
func (e *BranchDivergedError) Is(target error) bool { return target == pull.ErrBranchMoved }

// Sync brings the clone to origin's branch when the forge moved it on, as
// GitHub does when it updates a pull request's branch with a merge of its
// base, and keeps the worktree's uncommitted changes. It fetches the
// branch into refs/remotes/origin/<branch> and returns the HEAD it leaves:
//
//   - the forge has no such branch yet, or has it at HEAD or at an
//     ancestor of HEAD (a commit not pushed yet): nothing changes;
//   - the forge's head descends from HEAD: the branch is pointed at it and
//     checked out, the files that differ between the two commits are
//     written from it, and the worktree's own changes stay on top,
//     uncommitted. When one of those files is one the worktree changes
//     (or lies under or above one), it returns a *BranchConflictError
//     naming them and changes nothing;
//   - otherwise it returns a *BranchDivergedError.
//
// Both refusals match ErrBranchMoved. Sync never merges: go-git has no
// merge, and a job does not resolve conflicts behind the person's back.
func (r *Repo) Sync(ctx context.Context, branch string, auth GitAuth) (string, error) {
	name := plumbing.NewBranchReferenceName(branch)
	if branch == "" || name.Validate() != nil {
		return "", fmt.Errorf("sync: %q is not a valid branch name", branch)
	}
	remote, url, err := r.origin()
	if err != nil {
		return "", fmt.Errorf("sync %s: %w", branch, err)
	}
	head, err := r.repo.Head()
	if err != nil {
		return "", fmt.Errorf("sync %s: read HEAD: %w", branch, err)
	}
	tracking := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch)
	err = remote.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec("+" + name.String() + ":" + tracking.String())},
		Auth:       auth.method(url),
	})
	switch {
	case errors.Is(err, git.NoMatchingRefSpecError{}):
		return head.Hash().String(), nil
	case err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate):
		return "", auth.remoteError(fmt.Errorf("sync %s: fetch it from %s: %w", branch, displayRemote(url), err))
	}
	ref, err := r.repo.Storer.Reference(tracking)
	if err != nil {
		return "", fmt.Errorf("sync %s: read %s: %w", branch, tracking, err)
	}
	to := ref.Hash()
	if to == head.Hash() {
		return to.String(), nil
	}
	local, err := r.repo.CommitObject(head.Hash())
	if err != nil {
		return "", fmt.Errorf("sync %s: read HEAD's commit %s: %w", branch, head.Hash(), err)
	}
	forged, err := r.repo.CommitObject(to)
	if err != nil {
		return "", fmt.Errorf("sync %s: read the forge's commit %s: %w", branch, to, err)
	}
	// The usual case first: HEAD is a parent of the forge's merge, found at
	// once, where the other test walks HEAD's whole history.
	ahead, err := local.IsAncestor(forged)
	if err != nil {
		return "", fmt.Errorf("sync %s: walk the history of %s: %w", branch, to, err)
	}
	if !ahead {
		behind, err := forged.IsAncestor(local)
		if err != nil {
			return "", fmt.Errorf("sync %s: walk the history of %s: %w", branch, head.Hash(), err)
		}
		if behind {
			return head.Hash().String(), nil
		}
		return "", &BranchDivergedError{Branch: branch, Local: head.Hash().String(), Remote: to.String()}
	}
	moved, err := changedBetween(ctx, local, forged)
	if err != nil {
		return "", fmt.Errorf("sync %s: %w", branch, err)
	}
	dirty, err := r.Dirty()
	if err != nil {
		return "", fmt.Errorf("sync %s: %w", branch, err)
	}
	if clash := overlapping(dirty, moved); len(clash) > 0 {
		return "", &BranchConflictError{Branch: branch, Files: clash}
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(name, to)); err != nil {
		return "", fmt.Errorf("sync %s: move the branch to %s: %w", branch, to, err)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, name)); err != nil {
		return "", fmt.Errorf("sync %s: check out the branch: %w", branch, err)
	}
	wt, err := r.worktree()
	if err != nil {
		return "", err
	}
	// Only the files the forge changed are reset, in the index and the
	// worktree; a hard reset of the whole tree would delete the untracked
	// files, the marker among them.
	opts := &git.ResetOptions{Commit: to, Mode: git.SoftReset}
	if len(moved) > 0 {
		opts.Mode, opts.Files = git.HardReset, moved
	}
	if err := wt.Reset(opts); err != nil {
		return "", fmt.Errorf("sync %s: check out %s: %w", branch, to, err)
	}
	return to.String(), nil
}

// Branch returns the branch HEAD is on, such as the job's branch after
// Commit; a detached HEAD is an error.
func (r *Repo) Branch() (string, error) {
	ref, err := r.repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return "", fmt.Errorf("read HEAD of %s: %w", r.dir, err)
	}
	if ref.Type() != plumbing.SymbolicReference || !ref.Target().IsBranch() {
		return "", fmt.Errorf("HEAD of %s is not on a branch", r.dir)
	}
	return ref.Target().Short(), nil
}

// changedBetween lists the paths whose file differs between the trees of
// two commits: added, removed, or changed in content or mode.
func changedBetween(ctx context.Context, from, to *object.Commit) ([]string, error) {
	a, err := from.Tree()
	if err != nil {
		return nil, fmt.Errorf("read the tree of %s: %w", from.Hash, err)
	}
	b, err := to.Tree()
	if err != nil {
		return nil, fmt.Errorf("read the tree of %s: %w", to.Hash, err)
	}
	changes, err := object.DiffTreeWithOptions(ctx, a, b, &object.DiffTreeOptions{})
	if err != nil {
		return nil, fmt.Errorf("compare %s with %s: %w", from.Hash, to.Hash, err)
	}
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		if c.From.Name != "" {
			paths = append(paths, c.From.Name)
		}
		if c.To.Name != "" && c.To.Name != c.From.Name {
			paths = append(paths, c.To.Name)
		}
	}
	return paths, nil
}

// overlapping returns, sorted, the paths of mine that are one of theirs or
// a directory above or a file under one of theirs.
func overlapping(mine, theirs []string) []string {
	set := make(map[string]bool, len(theirs))
	for _, p := range theirs {
		set[p] = true
	}
	var out []string
	for _, p := range mine {
		if clashes(p, set, theirs) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func clashes(p string, set map[string]bool, theirs []string) bool {
	for d := p; d != "." && d != "/"; d = path.Dir(d) {
		if set[d] {
			return true
		}
	}
	for _, q := range theirs {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// origin returns the clone's origin remote and its first URL.
func (r *Repo) origin() (*git.Remote, string, error) {
	remote, err := r.repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return nil, "", fmt.Errorf("remote %q: %w", git.DefaultRemoteName, err)
	}
	urls := remote.Config().URLs
	if len(urls) == 0 {
		return nil, "", fmt.Errorf("remote %q has no URL", git.DefaultRemoteName)
	}
	return remote, urls[0], nil
}

// worktree returns the clone's worktree with the marker excluded, so that
// neither status nor staging sees it even where .git/info/exclude lacks it.
func (r *Repo) worktree() (*git.Worktree, error) {
	wt, err := r.repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("worktree of %s: %w", r.dir, err)
	}
	wt.Excludes = append(wt.Excludes, gitignore.ParsePattern("/"+MarkerFile, nil))
	return wt, nil
}

// remoteURL returns remote as go-git needs it: local paths absolute.
func remoteURL(remote string) (string, error) {
	ep, err := transport.NewEndpoint(remote)
	if err != nil {
		return "", err
	}
	if ep.Protocol == "file" && !strings.Contains(remote, "://") {
		return filepath.Abs(remote)
	}
	return remote, nil
}

// displayRemote returns remote without any password it carries.
func displayRemote(remote string) string {
	ep, err := transport.NewEndpoint(remote)
	if err != nil || ep.Password == "" {
		return remote
	}
	ep.Password = ""
	return ep.String()
}
