package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cli/go-gh/v2/pkg/api"
	"github.com/cli/go-gh/v2/pkg/auth"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/underpass-ai/axlr/forge/pull"
)

// DefaultAPIURL is the REST base of github.com.
const DefaultAPIURL = "https://api.github.com/"

// maxResponseBytes bounds one response body; a larger one is refused as
// unreadable rather than decoded in part.
const maxResponseBytes = 8 << 20

// Pagination of the lists the client reads (check runs, statuses, workflow
// runs): pages of perPage, at most maxPages of them.
const (
	perPage  = 100
	maxPages = 10
)

// Options configure a GitHub client.
type Options struct {
	// APIURL is the REST base: https://api.github.com/ (the default),
	// https://<host>/api/v3/ for GitHub Enterprise Server, or a server on
	// loopback. Plain http is accepted only for a loopback host
	// (localhost, 127.0.0.0/8, ::1).
	APIURL string
	// Token is sent as "Authorization: token <Token>", to APIURL's host
	// only. Required: Token(host, getenv) finds one.
	Token string
	// Transport carries the requests. Default: http.DefaultTransport.
	Transport http.RoundTripper
}

// GitHub is a client of one GitHub REST API. It is safe for concurrent use.
type GitHub struct {
	rest  *api.RESTClient
	base  string // APIURL, ending in "/"
	token string // kept only to keep it out of error texts
}

// NewGitHub returns a client of o.APIURL; it makes no request.
func NewGitHub(o Options) (*GitHub, error) {
	base, err := parseAPIURL(o.APIURL)
	if err != nil {
		return nil, err
	}
	if o.Token == "" {
		return nil, errors.New("github client: no token (set GH_TOKEN, GITHUB_TOKEN or GH_ENTERPRISE_TOKEN, or log in with gh)")
	}
	if strings.ContainsFunc(o.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, errors.New("github client: the token contains a space or a control character")
	}
	tr := o.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	rest, err := api.NewRESTClient(api.ClientOptions{
		Host:         base.Hostname(),
		AuthToken:    o.Token,
		Transport:    tr,
		LogIgnoreEnv: true,
		Headers: map[string]string{
			"Accept":               "application/vnd.github+json",
			"X-GitHub-Api-Version": "2022-11-28",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("github client for %s: %w", base, err)
	}
	return &GitHub{rest: rest, base: base.String(), token: o.Token}, nil
}

// APIHost returns the host name of a REST base (empty: DefaultAPIURL), the
// host to pass to Token. It refuses what NewGitHub refuses.
func APIHost(apiURL string) (string, error) {
	u, err := parseAPIURL(apiURL)
	if err != nil {
		return "", err
	}
	return u.Hostname(), nil
}

func parseAPIURL(s string) (*url.URL, error) {
	if s == "" {
		s = DefaultAPIURL
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("forge api url %q: %w", s, err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("forge api url %q: want an https:// URL (or http:// on loopback)", s)
	case u.Hostname() == "":
		return nil, fmt.Errorf("forge api url %q: no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("forge api url %q: want scheme, host and path only (no user, query or fragment)", s)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return nil, fmt.Errorf("forge api url %q: plain http is allowed only on loopback (localhost, 127.0.0.1, ::1); use https", s)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath = ""
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Token finds the token for the forge at host (a host name; api.github.com
// and github.com are the same forge). For github.com it reads GH_TOKEN,
// then GITHUB_TOKEN; for any other host GH_ENTERPRISE_TOKEN first, then
// those two. Without them it asks gh's own configuration for that host
// (go-gh's auth.TokenForHost: gh's hosts file, GITHUB_ENTERPRISE_TOKEN,
// "gh auth token"). getenv nil means os.Getenv.
func Token(host string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	host = auth.NormalizeHostname(strings.TrimSpace(host))
	if host == "" {
		return "", errors.New("github token: no host")
	}
	names := []string{"GH_TOKEN", "GITHUB_TOKEN"}
	if host != "github.com" {
		names = append([]string{"GH_ENTERPRISE_TOKEN"}, names...)
	}
	for _, n := range names {
		if t := strings.TrimSpace(getenv(n)); t != "" {
			return t, nil
		}
	}
	if t, _ := auth.TokenForHost(host); t != "" {
		return t, nil
	}
	return "", fmt.Errorf("no GitHub token for %s: set %s, or log in with \"gh auth login --hostname %s\"",
		host, strings.Join(names, " or "), host)
}

// GitHubError is the error of every GitHub method. Kind is one of ErrNotFound,
// ErrStaleHead, ErrNotMergeable, ErrRejected and ErrUnreadable, and
// errors.Is sees both Kind and Err. Its text never holds the token.
type GitHubError struct {
	Op         string // what was asked, e.g. "merge pull request 7 of o/r"
	Kind       error
	StatusCode int    // the HTTP status; 0 when no response was read
	Message    string // GitHub's message, when it gave one
	Err        error  // the cause
	detail     string // Err's text with the token removed
}

func (e *GitHubError) Error() string { return e.Op + ": " + e.Kind.Error() + ": " + e.detail }

// Unwrap returns Kind and Err.
func (e *GitHubError) Unwrap() []error { return []error{e.Kind, e.Err} }

// fail wraps err (from call) as a GitHubError, classified by its status.
func (g *GitHub) fail(op string, err error) *GitHubError {
	e := &GitHubError{Op: op, Kind: pull.ErrUnreadable, Err: err, detail: err.Error()}
	if g.token != "" {
		e.detail = strings.ReplaceAll(e.detail, g.token, "[token]")
	}
	var he *api.HTTPError
	if errors.As(err, &he) {
		e.StatusCode, e.Message = he.StatusCode, he.Message
		switch s := he.StatusCode; {
		case s == http.StatusNotFound || s == http.StatusGone:
			e.Kind = pull.ErrNotFound
		case s == http.StatusTooManyRequests || s >= 500:
			e.Kind = pull.ErrUnreadable
		case s == http.StatusForbidden && (he.Headers.Get("X-RateLimit-Remaining") == "0" || he.Headers.Get("Retry-After") != ""):
			e.Kind = pull.ErrUnreadable
		default:
			e.Kind = pull.ErrRejected
		}
	}
	return e
}

// refuse is a GitHubError for an input the client does not send.
func refuse(op string, err error) *GitHubError {
	return &GitHubError{Op: op, Kind: pull.ErrRejected, Err: err, detail: err.Error()}
}

// readPages reads the list at path page by page, perPage items a page, each
// decoded into a new W, and returns them; count gives a page's items and
// the total the forge reported. It reads on while the forge's Link header
// names a next page; a forge that sends no Link header is read on while
// its pages are full, or while the total it reported is not reached and
// the last page was not empty, so that a forge that caps its page size
// below perPage is read to the end as well. At most maxPages pages (what
// names the items in the error past that: a forge that caps its pages
// gives fewer than maxPages*perPage). A page's error is returned
// with the pages read before it.
func readPages[W any](ctx context.Context, g *GitHub, path string, q url.Values, what string, count func(*W) (n, total int)) ([]*W, error) {
	var out []*W
	read := 0
	for page := 1; ; page++ {
		if page > maxPages {
			return out, fmt.Errorf("more than %d pages of %s (%d read)", maxPages, what, read)
		}
		pq := url.Values{"per_page": {strconv.Itoa(perPage)}, "page": {strconv.Itoa(page)}}
		for k, v := range q {
			pq[k] = v
		}
		w := new(W)
		h, err := g.do(ctx, http.MethodGet, path, pq, nil, w)
		if err != nil {
			return out, err
		}
		out = append(out, w)
		n, total := count(w)
		read += n
		if link := h.Get("Link"); link != "" {
			if !nextLink(link) {
				return out, nil
			}
			continue
		}
		if n == 0 || (n < perPage && read >= total) {
			return out, nil
		}
	}
}

// nextLink tells whether a Link header (RFC 8288) names a rel="next".
func nextLink(header string) bool {
	for _, part := range strings.Split(header, ",") {
		for _, param := range strings.Split(part, ";")[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(param), "=")
			if strings.EqualFold(k, "rel") && slices.Contains(strings.Fields(strings.Trim(v, `"`)), "next") {
				return true
			}
		}
	}
	return false
}

// unusable is a GitHubError for an answer that parsed but is not what was
// asked for: a forge that answers so cannot be read.
func unusable(op, detail string) *GitHubError {
	return &GitHubError{Op: op, Kind: pull.ErrUnreadable, Err: errors.New(detail), detail: detail}
}

// call sends one request to base+path and decodes a JSON answer into out
// (nil: the body is dropped).
func (g *GitHub) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	_, err := g.do(ctx, method, path, query, in, out)
	return err
}

// do is call, and answers the response's header.
func (g *GitHub) do(ctx context.Context, method, path string, query url.Values, in, out any) (http.Header, error) {
	u := g.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	resp, err := g.rest.RequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the response of %s %s: %w", method, u, err)
	}
	if len(b) > maxResponseBytes {
		return nil, fmt.Errorf("the response of %s %s exceeds %d bytes", method, u, maxResponseBytes)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.Header, nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("malformed response of %s %s: %w", method, u, err)
	}
	return resp.Header, nil
}

var (
	repoPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$`)
	shaPattern  = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)
)

// repoPath checks "owner/name" and returns "repos/owner/name".
func repoPath(repo string) (string, error) {
	if !repoPattern.MatchString(repo) || strings.HasSuffix(repo, "/.") || strings.HasSuffix(repo, "/..") {
		return "", fmt.Errorf("repository %q: want owner/name (owner: letters, digits and '-', at most 39; name: letters, digits, '.', '_' and '-', at most 100)", repo)
	}
	return "repos/" + repo, nil
}

func checkSHA(sha string) error {
	if !shaPattern.MatchString(sha) {
		return fmt.Errorf("commit sha %q: want 40 (or 64) lower-case hex digits", sha)
	}
	return nil
}

func checkNumber(n int) error {
	if n < 1 {
		return fmt.Errorf("number %d: want 1 or more", n)
	}
	return nil
}

// branchPath checks a branch name (git's ref rules) and escapes it for a
// URL path, keeping its slashes.
func branchPath(branch string) (string, error) {
	if err := plumbing.NewBranchReferenceName(branch).Validate(); err != nil || len(branch) > 255 {
		return "", fmt.Errorf("branch %q: not a valid git branch name (at most 255 bytes, no space, '..', '~', '^', ':', '?', '*', '[', '\\')", branch)
	}
	parts := strings.Split(branch, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/"), nil
}

// Issue reads issue n of repo ("owner/name").
func (g *GitHub) Issue(ctx context.Context, repo string, n int) (pull.Issue, error) {
	op := fmt.Sprintf("read issue %d of %s", n, repo)
	rp, err := repoPath(repo)
	if err == nil {
		err = checkNumber(n)
	}
	if err != nil {
		return pull.Issue{}, refuse(op, err)
	}
	var w struct {
		Number  int    `json:"number"`
		Title   string `json:"title"`
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
	}
	if err := g.call(ctx, http.MethodGet, rp+"/issues/"+strconv.Itoa(n), nil, nil, &w); err != nil {
		return pull.Issue{}, g.fail(op, err)
	}
	if w.Number != n {
		return pull.Issue{}, unusable(op, fmt.Sprintf("the answer is not issue %d (number %d)", n, w.Number))
	}
	return pull.Issue{Number: w.Number, Title: w.Title, Body: w.Body, URL: w.HTMLURL}, nil
}

type pullWire struct {
	Number         int     `json:"number"`
	HTMLURL        string  `json:"html_url"`
	State          string  `json:"state"`
	Merged         bool    `json:"merged"`
	MergedAt       *string `json:"merged_at"`
	MergeCommitSHA string  `json:"merge_commit_sha"`
	MergeableState string  `json:"mergeable_state"`
	// Mergeable is read where a forge gives no mergeable_state (Gitea and
	// other GitHub-compatible servers): true reads as clean, false as
	// dirty.
	Mergeable *bool `json:"mergeable"`
	Head      struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

// check refuses an answer that is not a pull request a watch can read:
// want is the number asked for (0: any).
func (w pullWire) check(op string, want int) error {
	switch {
	case want > 0 && w.Number != want:
		return unusable(op, fmt.Sprintf("the answer is not pull request %d (number %d)", want, w.Number))
	case w.Number <= 0:
		return unusable(op, "the answer has no pull request number")
	case w.State != "open" && w.State != "closed":
		return unusable(op, fmt.Sprintf("pull request %d has state %q (open or closed)", w.Number, w.State))
	case !shaPattern.MatchString(w.Head.SHA):
		return unusable(op, fmt.Sprintf("pull request %d has no head SHA (%q)", w.Number, w.Head.SHA))
	case w.Head.Ref == "" || w.Base.Ref == "":
		return unusable(op, fmt.Sprintf("pull request %d names no head or base branch", w.Number))
	}
	return nil
}

func (w pullWire) pullRequest() pull.Request {
	p := pull.Request{
		Number:         w.Number,
		URL:            w.HTMLURL,
		State:          w.State,
		Merged:         w.Merged || w.MergedAt != nil,
		MergeableState: w.MergeableState,
		HeadRef:        w.Head.Ref,
		HeadSHA:        w.Head.SHA,
		BaseRef:        w.Base.Ref,
	}
	if p.MergeableState == "" && w.Mergeable != nil && p.State == "open" {
		p.MergeableState = "dirty"
		if *w.Mergeable {
			p.MergeableState = "clean"
		}
	}
	if p.Merged {
		// Before the merge, merge_commit_sha is GitHub's test merge.
		p.MergeSHA = w.MergeCommitSHA
	}
	return p
}

// PullRequest reads pull request n of repo.
func (g *GitHub) PullRequest(ctx context.Context, repo string, n int) (pull.Request, error) {
	op := fmt.Sprintf("read pull request %d of %s", n, repo)
	rp, err := repoPath(repo)
	if err == nil {
		err = checkNumber(n)
	}
	if err != nil {
		return pull.Request{}, refuse(op, err)
	}
	var w pullWire
	if err := g.call(ctx, http.MethodGet, rp+"/pulls/"+strconv.Itoa(n), nil, nil, &w); err != nil {
		return pull.Request{}, g.fail(op, err)
	}
	if err := w.check(op, n); err != nil {
		return pull.Request{}, err
	}
	return w.pullRequest(), nil
}

// FindPullRequest returns the open pull request from headBranch (a branch
// of repo itself, or "owner:branch" for a fork) into base, nil when there
// is none. Call it before OpenPullRequest so that a repeated open finds
// the first one.
func (g *GitHub) FindPullRequest(ctx context.Context, repo, headBranch, base string) (*pull.Request, error) {
	op := fmt.Sprintf("find the open pull request of %s into %s in %s", headBranch, base, repo)
	rp, err := repoPath(repo)
	if err != nil {
		return nil, refuse(op, err)
	}
	owner, branch, ok := strings.Cut(headBranch, ":")
	if !ok {
		owner, branch = repo[:strings.IndexByte(repo, '/')], headBranch
	}
	if _, err := branchPath(branch); err != nil {
		return nil, refuse(op, err)
	}
	if _, err := branchPath(base); err != nil {
		return nil, refuse(op, err)
	}
	q := url.Values{"state": {"open"}, "head": {owner + ":" + branch}, "base": {base}}
	pages, err := readPages(ctx, g, rp+"/pulls", q, "open pull requests", func(p *[]pullWire) (int, int) { return len(*p), 0 })
	if err != nil {
		return nil, g.fail(op, err)
	}
	var list []pullWire
	for _, p := range pages {
		list = append(list, *p...)
	}
	for _, w := range list {
		// The filter is GitHub's; check it, as a forge that ignores a
		// filter would hand back someone else's pull request.
		if w.State == "open" && w.Head.Ref == branch && w.Base.Ref == base {
			if err := w.check(op, 0); err != nil {
				return nil, err
			}
			p := w.pullRequest()
			return &p, nil
		}
	}
	return nil, nil
}

// NewPullRequest is what OpenPullRequest sends.
type NewPullRequest struct {
	Title string // required, at most 256 characters
	Body  string // at most 65536 characters
	Head  string // the branch to merge (or "owner:branch" for a fork)
	Base  string // the branch to merge into
}

// OpenPullRequest opens p in repo. When GitHub answers that a pull request
// already exists for p's head, it returns that one (FindPullRequest), so a
// repeated open never makes a second pull request.
func (g *GitHub) OpenPullRequest(ctx context.Context, repo string, p NewPullRequest) (pull.Request, error) {
	op := fmt.Sprintf("open a pull request of %s into %s in %s", p.Head, p.Base, repo)
	rp, err := repoPath(repo)
	if err != nil {
		return pull.Request{}, refuse(op, err)
	}
	switch n := len([]rune(p.Title)); {
	case strings.TrimSpace(p.Title) == "":
		return pull.Request{}, refuse(op, errors.New("empty title"))
	case n > 256:
		return pull.Request{}, refuse(op, fmt.Errorf("title of %d characters (at most 256)", n))
	}
	if n := len([]rune(p.Body)); n > 65536 {
		return pull.Request{}, refuse(op, fmt.Errorf("body of %d characters (at most 65536)", n))
	}
	_, headBranch, fork := strings.Cut(p.Head, ":")
	if !fork {
		headBranch = p.Head
	}
	for _, b := range []string{headBranch, p.Base} {
		if _, err := branchPath(b); err != nil {
			return pull.Request{}, refuse(op, err)
		}
	}
	in := map[string]string{"title": p.Title, "body": p.Body, "head": p.Head, "base": p.Base}
	var w pullWire
	err = g.call(ctx, http.MethodPost, rp+"/pulls", nil, in, &w)
	if err == nil {
		if err := w.check(op, 0); err != nil {
			return pull.Request{}, err
		}
		return w.pullRequest(), nil
	}
	e := g.fail(op, err)
	if e.StatusCode == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(e.Message), "already exists") {
		found, ferr := g.FindPullRequest(ctx, repo, p.Head, p.Base)
		if ferr != nil {
			return pull.Request{}, errors.Join(e, ferr)
		}
		if found != nil {
			return *found, nil
		}
	}
	return pull.Request{}, e
}

// UpdateBranch merges the base into the head of pull request n, provided
// the head is still expectedHeadSHA; otherwise ErrStaleHead. GitHub does
// the update after answering: the new head shows in a later read.
func (g *GitHub) UpdateBranch(ctx context.Context, repo string, n int, expectedHeadSHA string) error {
	op := fmt.Sprintf("update the branch of pull request %d of %s from %s", n, repo, expectedHeadSHA)
	rp, err := repoPath(repo)
	if err == nil {
		err = checkNumber(n)
	}
	if err == nil {
		err = checkSHA(expectedHeadSHA)
	}
	if err != nil {
		return refuse(op, err)
	}
	in := map[string]string{"expected_head_sha": expectedHeadSHA}
	err = g.call(ctx, http.MethodPut, rp+"/pulls/"+strconv.Itoa(n)+"/update-branch", nil, in, nil)
	if err == nil {
		return nil
	}
	e := g.fail(op, err)
	if e.StatusCode == http.StatusUnprocessableEntity {
		// 422 is both "the head moved" and other refusals: the head
		// tells which.
		if pr, rerr := g.PullRequest(ctx, repo, n); rerr == nil && pr.HeadSHA != expectedHeadSHA {
			e.Kind = pull.ErrStaleHead
		}
	}
	return e
}

// Merge squash-merges pull request n provided its head is sha, with title
// and message as the squash commit's subject and body (empty: GitHub's
// defaults), and returns the merge commit's SHA. A pull request already
// merged at head sha is reported merged, so a repeated merge is safe.
// GitHub's 405 is ErrNotMergeable and 409 (the head moved) ErrStaleHead:
// re-evaluate, do not retry blindly.
func (g *GitHub) Merge(ctx context.Context, repo string, n int, sha, title, message string) (string, error) {
	op := fmt.Sprintf("merge pull request %d of %s at %s", n, repo, sha)
	rp, err := repoPath(repo)
	if err == nil {
		err = checkNumber(n)
	}
	if err == nil {
		err = checkSHA(sha)
	}
	if err != nil {
		return "", refuse(op, err)
	}
	in := map[string]string{"sha": sha, "merge_method": "squash"}
	if title != "" {
		in["commit_title"] = title
	}
	if message != "" {
		in["commit_message"] = message
	}
	var out struct {
		SHA    string `json:"sha"`
		Merged bool   `json:"merged"`
	}
	err = g.call(ctx, http.MethodPut, rp+"/pulls/"+strconv.Itoa(n)+"/merge", nil, in, &out)
	if err == nil {
		if !out.Merged || out.SHA == "" {
			return "", &GitHubError{Op: op, Kind: pull.ErrNotMergeable, StatusCode: http.StatusOK,
				Err: errors.New("the forge answered without a merge"), detail: "the forge answered without a merge"}
		}
		return out.SHA, nil
	}
	e := g.fail(op, err)
	switch e.StatusCode {
	case http.StatusMethodNotAllowed, http.StatusConflict:
		pr, rerr := g.PullRequest(ctx, repo, n)
		if rerr == nil && pr.Merged && pr.HeadSHA == sha && pr.MergeSHA != "" {
			return pr.MergeSHA, nil
		}
		e.Kind = pull.ErrNotMergeable
		if e.StatusCode == http.StatusConflict || (rerr == nil && pr.HeadSHA != sha) {
			e.Kind = pull.ErrStaleHead
		}
	}
	return "", e
}

// DeleteBranch deletes branch of repo; a branch already gone is success.
func (g *GitHub) DeleteBranch(ctx context.Context, repo, branch string) error {
	op := fmt.Sprintf("delete branch %s of %s", branch, repo)
	rp, err := repoPath(repo)
	if err != nil {
		return refuse(op, err)
	}
	bp, err := branchPath(branch)
	if err != nil {
		return refuse(op, err)
	}
	err = g.call(ctx, http.MethodDelete, rp+"/git/refs/heads/"+bp, nil, nil, nil)
	if err == nil {
		return nil
	}
	e := g.fail(op, err)
	if e.StatusCode == http.StatusNotFound || e.StatusCode == http.StatusUnprocessableEntity {
		return nil
	}
	return e
}

// RerunFailedJobs asks for the failed jobs of every completed workflow run
// of headSHA whose conclusion is failure to run again, and returns how many
// runs it asked for. A run already rerunning has no conclusion yet and is
// left alone, so a repeated call does not stack reruns.
func (g *GitHub) RerunFailedJobs(ctx context.Context, repo, headSHA string) (int, error) {
	op := fmt.Sprintf("rerun the failed jobs of %s in %s", headSHA, repo)
	rp, err := repoPath(repo)
	if err == nil {
		err = checkSHA(headSHA)
	}
	if err != nil {
		return 0, refuse(op, err)
	}
	type run struct {
		ID         int64  `json:"id"`
		HeadSHA    string `json:"head_sha"`
		Status     string `json:"status"`
		Conclusion string `json:"conclusion"`
	}
	type page struct {
		TotalCount   int   `json:"total_count"`
		WorkflowRuns []run `json:"workflow_runs"`
	}
	pages, err := readPages(ctx, g, rp+"/actions/runs", url.Values{"head_sha": {headSHA}}, "workflow runs",
		func(p *page) (int, int) { return len(p.WorkflowRuns), p.TotalCount })
	if err != nil {
		return 0, g.fail(op, err)
	}
	var runs []run
	for _, p := range pages {
		runs = append(runs, p.WorkflowRuns...)
	}
	n := 0
	for _, r := range runs {
		if r.HeadSHA != headSHA || r.Status != "completed" || r.Conclusion != "failure" {
			continue
		}
		path := rp + "/actions/runs/" + strconv.FormatInt(r.ID, 10) + "/rerun-failed-jobs"
		if err := g.call(ctx, http.MethodPost, path, nil, map[string]any{}, nil); err != nil {
			e := g.fail(fmt.Sprintf("%s: run %d (after %d asked)", op, r.ID, n), err)
			return n, e
		}
		n++
	}
	return n, nil
}
