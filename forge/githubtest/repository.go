package githubtest

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Repository is one repository of the server: a bare git repository plus
// what GitHub keeps beside it (issues, pull requests, checks, protection).
// Its methods are the test's hooks; all are safe for concurrent use.
type Repository struct {
	s             *Server
	fullName      string
	owner         string
	path          string
	defaultBranch string

	next       int // the next issue or pull request number
	issues     map[int]*issue
	pulls      []*pull
	commits    map[string]*commitChecks // by SHA
	runs       []*workflowRun
	ci         func(Commit) []CheckRun
	ciDone     map[string]bool
	protection map[string]Protection // by base branch
}

type issue struct {
	number      int
	title, body string
}

type pull struct {
	number      int
	title, body string
	head, base  string // branch names
	headSHA     string // the head last seen, or at the close or merge
	state       string // "open" or "closed"
	merged      bool
	mergeSHA    string
	created     time.Time
	closed      time.Time

	conflicting   bool   // SetConflicting
	stateOverride string // SetMergeableState
	approved      bool   // Approve
}

// Protection is a base branch's protection rule.
type Protection struct {
	// Strict requires the head to be up to date with the base and its
	// checks green to merge (405 otherwise); mergeable_state is blocked
	// while the checks are not green.
	Strict bool
	// RequireReview requires an approving review (Approve): blocked, and
	// 405 on merge, until then.
	RequireReview bool
}

// Commit is a new head as SetCI's function sees it.
type Commit struct {
	SHA    string
	Branch string
	Files  map[string]string // path → content
}

// PullRequest is a snapshot of a pull request, for assertions.
type PullRequest struct {
	Number   int
	Title    string
	Body     string
	Head     string // branch
	Base     string // branch
	HeadSHA  string
	State    string // "open" or "closed"
	Merged   bool
	MergeSHA string
}

func newRepository(s *Server, fullName, path string) *Repository {
	owner, _, _ := strings.Cut(fullName, "/")
	return &Repository{
		s: s, fullName: fullName, owner: owner, path: path, defaultBranch: "main",
		next: 1, issues: map[int]*issue{}, commits: map[string]*commitChecks{},
		ciDone: map[string]bool{}, protection: map[string]Protection{},
	}
}

// Path is the bare repository's directory: the URL to clone from and push to.
func (r *Repository) Path() string { return r.path }

// FullName is "owner/name".
func (r *Repository) FullName() string { return r.fullName }

// DefaultBranch is the branch CreateRepository made: "main".
func (r *Repository) DefaultBranch() string { return r.defaultBranch }

// putFiles writes the blobs of files into g and sets them in fs.
func putFiles(g *git.Repository, fs map[string]entry, files map[string]string) error {
	for p, content := range files {
		if p == "" || path.Clean(p) != p || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "../") || p == ".." || p == "." {
			return fmt.Errorf("file path %q: want a clean relative path", p)
		}
		if _, ok := fs[p]; !ok {
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				if _, isFile := fs[d]; isFile {
					return fmt.Errorf("file path %q: %s is a file", p, d)
				}
			}
		}
		h, err := writeBlob(g.Storer, content)
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		fs[p] = entry{mode: filemode.Regular, hash: h}
	}
	return nil
}

// Commit commits changes (path → content; added or replaced, the others
// kept) on branch, as a push would: on the branch's head, or on the default
// branch's head when the branch does not exist yet. It returns the SHA.
func (r *Repository) Commit(branch, message string, changes map[string]string) (string, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	g, err := git.PlainOpen(r.path)
	if err != nil {
		return "", fmt.Errorf("githubtest: commit on %s: %w", branch, err)
	}
	if err := plumbing.NewBranchReferenceName(branch).Validate(); err != nil {
		return "", fmt.Errorf("githubtest: commit on %q: not a branch name", branch)
	}
	from, exists, err := branchHead(g, branch)
	if err != nil {
		return "", fmt.Errorf("githubtest: commit on %s: %w", branch, err)
	}
	parent := from
	if !exists {
		if parent, _, err = branchHead(g, r.defaultBranch); err != nil {
			return "", fmt.Errorf("githubtest: commit on %s: %w", branch, err)
		}
	}
	fs, err := files(g, parent)
	if err == nil {
		err = putFiles(g, fs, changes)
	}
	var h plumbing.Hash
	if err == nil {
		h, err = writeCommit(g, fs, message, parent)
	}
	if err == nil {
		err = moveBranch(g, branch, from, h)
	}
	if err != nil {
		return "", fmt.Errorf("githubtest: commit on %s: %w", branch, err)
	}
	return h.String(), nil
}

// Head returns the SHA branch points at.
func (r *Repository) Head(branch string) (string, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	g, err := git.PlainOpen(r.path)
	if err != nil {
		return "", fmt.Errorf("githubtest: head of %s: %w", branch, err)
	}
	h, ok, err := branchHead(g, branch)
	if err != nil {
		return "", fmt.Errorf("githubtest: head of %s: %w", branch, err)
	}
	if !ok {
		return "", fmt.Errorf("githubtest: no branch %s in %s", branch, r.fullName)
	}
	return h.String(), nil
}

// Files returns every file of commit sha (path → content).
func (r *Repository) Files(sha string) (map[string]string, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	g, err := git.PlainOpen(r.path)
	if err != nil {
		return nil, fmt.Errorf("githubtest: files of %s: %w", sha, err)
	}
	fs, err := contents(g, plumbing.NewHash(sha))
	if err != nil {
		return nil, fmt.Errorf("githubtest: files of %s: %w", sha, err)
	}
	return fs, nil
}

// Parents returns the parents of commit sha.
func (r *Repository) Parents(sha string) ([]string, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	g, err := git.PlainOpen(r.path)
	if err != nil {
		return nil, fmt.Errorf("githubtest: parents of %s: %w", sha, err)
	}
	c, err := g.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return nil, fmt.Errorf("githubtest: parents of %s: %w", sha, err)
	}
	out := make([]string, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		out[i] = p.String()
	}
	return out, nil
}

// AddIssue opens an issue and returns its number.
func (r *Repository) AddIssue(title, body string) int {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	n := r.next
	r.next++
	r.issues[n] = &issue{number: n, title: title, body: body}
	return n
}

// SetCI makes ci give the check runs of every new head of an open pull
// request (when the pull request opens, and on the first request after a
// push or an update moved it), once per SHA, like a CI that runs on pull
// requests. ci runs under the server's lock: it must not call the server.
func (r *Repository) SetCI(ci func(Commit) []CheckRun) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.ci = ci
}

// SetProtection sets the protection of base branch branch.
func (r *Repository) SetProtection(branch string, p Protection) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.protection[branch] = p
}

// Approve records an approving review of pull request n.
func (r *Repository) Approve(n int) error {
	return r.withPull(n, func(p *pull) { p.approved = true })
}

// SetConflicting marks pull request n as conflicting with its base (dirty)
// or not, whatever its files say.
func (r *Repository) SetConflicting(n int, conflicting bool) error {
	return r.withPull(n, func(p *pull) { p.conflicting = conflicting })
}

// SetMergeableState makes pull request n report state ("has_hooks" or
// "unstable") where it would report clean or unstable; "" computes it again.
func (r *Repository) SetMergeableState(n int, state string) error {
	switch state {
	case "", "has_hooks", "unstable":
	default:
		return fmt.Errorf("githubtest: mergeable state %q: want has_hooks, unstable or empty", state)
	}
	return r.withPull(n, func(p *pull) { p.stateOverride = state })
}

// ClosePullRequest closes pull request n without a merge, as a person would.
func (r *Repository) ClosePullRequest(n int) error {
	return r.withPull(n, func(p *pull) {
		if p.state == "open" {
			p.state, p.closed = "closed", time.Now()
		}
	})
}

func (r *Repository) withPull(n int, f func(*pull)) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	p := r.pull(n)
	if p == nil {
		return fmt.Errorf("%w: %d in %s", errUnknownPull, n, r.fullName)
	}
	f(p)
	return nil
}

// PullRequests returns every pull request, by number.
func (r *Repository) PullRequests() []PullRequest {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	out := make([]PullRequest, 0, len(r.pulls))
	for _, p := range r.pulls {
		out = append(out, PullRequest{
			Number: p.number, Title: p.title, Body: p.body, Head: p.head, Base: p.base,
			HeadSHA: p.headSHA, State: p.state, Merged: p.merged, MergeSHA: p.mergeSHA,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

func (r *Repository) pull(n int) *pull {
	for _, p := range r.pulls {
		if p.number == n {
			return p
		}
	}
	return nil
}

// sync reads the head of every open pull request from the bare repository:
// a pull request whose branch is gone is closed, one whose head moved gets
// CI on its new head. s.mu is held.
func (r *Repository) sync(g *git.Repository) error {
	for _, p := range r.pulls {
		if p.state != "open" {
			continue
		}
		h, ok, err := branchHead(g, p.head)
		if err != nil {
			return err
		}
		if !ok {
			p.state, p.closed = "closed", time.Now()
			continue
		}
		if h.String() != p.headSHA {
			p.headSHA = h.String()
			if err := r.runCI(g, p.head, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// runCI registers SetCI's check runs for head h, once per SHA. s.mu is held.
func (r *Repository) runCI(g *git.Repository, branch string, h plumbing.Hash) error {
	if r.ci == nil || r.ciDone[h.String()] {
		return nil
	}
	fs, err := contents(g, h)
	if err != nil {
		return err
	}
	r.ciDone[h.String()] = true
	for _, c := range r.ci(Commit{SHA: h.String(), Branch: branch, Files: fs}) {
		if err := r.addCheckRun(h.String(), c); err != nil {
			return fmt.Errorf("githubtest: SetCI's check run for %s: %w", h, err)
		}
	}
	return nil
}
