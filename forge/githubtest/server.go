// Package githubtest serves the part of GitHub's REST API that forge uses,
// from local bare git repositories, for tests.
//
// Each repository is a bare repository on disk (Repository.Path), the
// test's origin: a clone pushes to it with git or go-git, and the server
// reads branch heads from it on every request, so a push moves a pull
// request's head the way it does on GitHub. The server writes into it what
// GitHub writes: the merge commit of an update-branch and the squash commit
// of a merge.
//
// What GitHub decides by itself, the test decides through Repository's
// hooks: check runs and commit statuses per SHA (CheckRun.AfterReads makes
// one register late, SetCI registers some on every new head like CI does),
// branch protection (SetProtection), a conflict (SetConflicting, besides
// the real ones it detects file by file), a mergeable_state of has_hooks or
// unstable (SetMergeableState), and faults (Server.Fail). Server.Calls
// counts the mutating calls, for "exactly one pull request, at most one
// merge".
//
// Served: GET issues/{n}; GET, POST pulls; GET pulls/{n}; PUT
// pulls/{n}/update-branch; PUT pulls/{n}/merge; GET
// commits/{ref}/check-runs; GET commits/{ref}/status; GET actions/runs;
// POST actions/runs/{id}/rerun-failed-jobs; DELETE git/refs/heads/{branch}.
// Anything else answers 404 as GitHub does.
package githubtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Config configures Start.
type Config struct {
	// Dir holds the bare repositories, one per "owner/name" at
	// Dir/owner/name.git. Default: a temporary directory that Close removes.
	Dir string
	// Token, when set, is the only credential accepted ("Authorization:
	// token <Token>" or "Bearer <Token>"); other requests get 401.
	Token string
}

// Calls counts the requests that change something, those that succeeded
// unless the name says attempts.
type Calls struct {
	PullRequestsOpened int // POST pulls answered 201
	MergeAttempts      int // every PUT pulls/{n}/merge
	Merges             int // merges made
	BranchUpdates      int // update-branch merge commits made
	Reruns             int // rerun-failed-jobs accepted
	RefsDeleted        int // branches deleted
}

// Server is a GitHub REST server on 127.0.0.1.
type Server struct {
	// URL is the REST base, ending in "/": forge.Options.APIURL.
	URL string

	http    *httptest.Server
	dir     string
	ownDir  bool
	token   string
	mu      sync.Mutex
	repos   map[string]*Repository // by lower-case "owner/name"
	calls   Calls
	faults  []*fault
	nextID  int64
	closeMu sync.Once
}

type fault struct {
	match  string
	status int
	left   int
}

// Start starts a server on 127.0.0.1, port chosen by the system.
func Start(c Config) (*Server, error) {
	s := &Server{dir: c.Dir, token: c.Token, repos: map[string]*Repository{}}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "githubtest-")
		if err != nil {
			return nil, fmt.Errorf("githubtest: %w", err)
		}
		s.dir, s.ownDir = d, true
	}
	mux := http.NewServeMux()
	routes := []struct {
		pattern string
		h       handler
	}{
		{"GET /repos/{owner}/{repo}/issues/{number}", getIssue},
		{"GET /repos/{owner}/{repo}/pulls", listPulls},
		{"POST /repos/{owner}/{repo}/pulls", createPull},
		{"GET /repos/{owner}/{repo}/pulls/{number}", getPull},
		{"PUT /repos/{owner}/{repo}/pulls/{number}/update-branch", updateBranch},
		{"PUT /repos/{owner}/{repo}/pulls/{number}/merge", mergePull},
		{"GET /repos/{owner}/{repo}/commits/{ref}/check-runs", listCheckRuns},
		{"GET /repos/{owner}/{repo}/commits/{ref}/status", combinedStatus},
		{"GET /repos/{owner}/{repo}/actions/runs", listWorkflowRuns},
		{"POST /repos/{owner}/{repo}/actions/runs/{id}/rerun-failed-jobs", rerunFailedJobs},
		{"DELETE /repos/{owner}/{repo}/git/refs/heads/{branch...}", deleteBranch},
	}
	for _, rt := range routes {
		mux.Handle(rt.pattern, s.serve(rt.h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		if s.authorized(w, req) {
			replyError(w, http.StatusNotFound, "Not Found")
		}
	})
	s.http = httptest.NewServer(mux)
	s.URL = s.http.URL + "/"
	return s, nil
}

// Close stops the server and removes the repositories' directory when
// Start made it.
func (s *Server) Close() {
	s.closeMu.Do(func() {
		s.http.Close()
		if s.ownDir {
			os.RemoveAll(s.dir)
		}
	})
}

// Calls returns the counts so far.
func (s *Server) Calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Fail makes the next count requests whose "METHOD /path" contains match
// (empty: any) answer status with a GitHub-shaped error, without touching
// any state.
func (s *Server) Fail(match string, status, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{match: match, status: status, left: count})
}

// CreateRepository makes the bare repository fullName ("owner/name") with
// one commit on main holding files (path → content).
func (s *Server) CreateRepository(fullName string, files map[string]string) (*Repository, error) {
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") || strings.HasPrefix(owner, ".") {
		return nil, fmt.Errorf("githubtest: repository %q: want owner/name", fullName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(fullName)
	if s.repos[key] != nil {
		return nil, fmt.Errorf("githubtest: repository %s exists", fullName)
	}
	path := filepath.Join(s.dir, owner, name+".git")
	r := newRepository(s, fullName, path)
	g, err := git.PlainInitWithOptions(path, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(r.defaultBranch)},
	})
	if err != nil {
		return nil, fmt.Errorf("githubtest: create %s: %w", fullName, err)
	}
	fs := map[string]entry{}
	if err := putFiles(g, fs, files); err != nil {
		return nil, fmt.Errorf("githubtest: create %s: %w", fullName, err)
	}
	h, err := writeCommit(g, fs, "Initial commit\n")
	if err == nil {
		err = moveBranch(g, r.defaultBranch, plumbing.ZeroHash, h)
	}
	if err != nil {
		return nil, fmt.Errorf("githubtest: create %s: %w", fullName, err)
	}
	s.repos[key] = r
	return r, nil
}

// handler serves one route for a repository that exists, under the
// server's lock, with the repository opened.
type handler func(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository)

func (s *Server) serve(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !s.authorized(w, req) {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.injectFault(w, req) {
			return
		}
		r := s.repos[strings.ToLower(req.PathValue("owner")+"/"+req.PathValue("repo"))]
		if r == nil {
			replyError(w, http.StatusNotFound, "Not Found")
			return
		}
		g, err := git.PlainOpen(r.path)
		if err == nil {
			err = r.sync(g)
		}
		if err != nil {
			replyError(w, http.StatusInternalServerError, err.Error())
			return
		}
		h(w, req, r, g)
	})
}

func (s *Server) authorized(w http.ResponseWriter, req *http.Request) bool {
	if s.token == "" {
		return true
	}
	a := req.Header.Get("Authorization")
	if a == "token "+s.token || a == "Bearer "+s.token {
		return true
	}
	replyError(w, http.StatusUnauthorized, "Bad credentials")
	return false
}

// injectFault answers a request a Fail matches; s.mu is held.
func (s *Server) injectFault(w http.ResponseWriter, req *http.Request) bool {
	line := req.Method + " " + req.URL.Path
	for i, f := range s.faults {
		if strings.Contains(line, f.match) {
			f.left--
			if f.left <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			replyError(w, f.status, fmt.Sprintf("githubtest: injected %d", f.status))
			return true
		}
	}
	return false
}

// id returns a new id for a check run or workflow run; s.mu is held.
func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if body != nil {
		_ = json.NewEncoder(w).Encode(body)
	}
}

// validationError is an item of a 422's "errors".
type validationError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func replyError(w http.ResponseWriter, status int, message string, errs ...validationError) {
	body := map[string]any{"message": message, "documentation_url": "https://docs.github.com/rest"}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	reply(w, status, body)
}

// decode reads a JSON request body into v; on failure it answers 400.
func decode(w http.ResponseWriter, req *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<20)).Decode(v); err != nil {
		replyError(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

// number parses a {number} path value; on failure it answers 404.
func number(w http.ResponseWriter, req *http.Request) (int, bool) {
	n, err := strconv.Atoi(req.PathValue("number"))
	if err != nil || n < 1 {
		replyError(w, http.StatusNotFound, "Not Found")
		return 0, false
	}
	return n, true
}

// paginate answers the page of n items the query asks for (per_page:
// default 30, at most 100) and sets the Link header GitHub sets.
func paginate(w http.ResponseWriter, req *http.Request, n int) (lo, hi int) {
	per, err := strconv.Atoi(req.URL.Query().Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(req.URL.Query().Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)
	if hi < n {
		last := (n + per - 1) / per
		link := func(p int) string {
			u := *req.URL
			q := u.Query()
			q.Set("page", strconv.Itoa(p))
			q.Set("per_page", strconv.Itoa(per))
			u.RawQuery = q.Encode()
			return "<http://" + req.Host + u.RequestURI() + ">"
		}
		w.Header().Set("Link", link(page+1)+`; rel="next", `+link(last)+`; rel="last"`)
	}
	return lo, hi
}

// errUnknownPull is what the hooks return for a pull request number that
// does not exist.
var errUnknownPull = errors.New("githubtest: no such pull request")
