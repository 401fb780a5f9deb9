package githubtest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

func getIssue(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	n, ok := number(w, req)
	if !ok {
		return
	}
	if is := r.issues[n]; is != nil {
		reply(w, http.StatusOK, map[string]any{
			"number": n, "title": is.title, "body": is.body, "state": "open",
			"html_url": r.htmlURL("issues", n), "url": r.apiURL("issues", n),
		})
		return
	}
	if p := r.pull(n); p != nil {
		// GitHub serves every pull request as an issue too.
		reply(w, http.StatusOK, map[string]any{
			"number": n, "title": p.title, "body": p.body, "state": p.state,
			"html_url": r.htmlURL("pull", n), "url": r.apiURL("issues", n),
			"pull_request": map[string]any{"url": r.apiURL("pulls", n), "html_url": r.htmlURL("pull", n)},
		})
		return
	}
	replyError(w, http.StatusNotFound, "Not Found")
}

func (r *Repository) htmlURL(kind string, n int) string {
	return fmt.Sprintf("%s%s/%s/%d", r.s.URL, r.fullName, kind, n)
}

func (r *Repository) apiURL(kind string, n int) string {
	return fmt.Sprintf("%srepos/%s/%s/%d", r.s.URL, r.fullName, kind, n)
}

// pullJSON renders p as GitHub does; full adds what only a single pull
// request carries (merged, mergeable, mergeable_state).
func (r *Repository) pullJSON(g *git.Repository, p *pull, full bool) (map[string]any, error) {
	var mergedAt, closedAt any
	if !p.closed.IsZero() {
		closedAt = p.closed.UTC().Format(time.RFC3339)
		if p.merged {
			mergedAt = closedAt
		}
	}
	ref := func(branch, sha string) map[string]any {
		return map[string]any{
			"label": r.owner + ":" + branch, "ref": branch, "sha": sha,
			"repo": map[string]any{"full_name": r.fullName},
		}
	}
	baseSHA := ""
	if h, ok, err := branchHead(g, p.base); err != nil {
		return nil, err
	} else if ok {
		baseSHA = h.String()
	}
	out := map[string]any{
		"url": r.apiURL("pulls", p.number), "id": p.number, "number": p.number,
		"html_url": r.htmlURL("pull", p.number), "state": p.state, "draft": false,
		"title": p.title, "body": p.body,
		"created_at": p.created.UTC().Format(time.RFC3339),
		"closed_at":  closedAt, "merged_at": mergedAt,
		"merge_commit_sha": nilIfEmpty(p.mergeSHA),
		"head":             ref(p.head, p.headSHA), "base": ref(p.base, baseSHA),
	}
	if full {
		state, err := r.mergeableState(g, p)
		if err != nil {
			return nil, err
		}
		out["merged"] = p.merged
		out["mergeable_state"] = state
		switch state {
		case "dirty":
			out["mergeable"] = false
		case "unknown":
			out["mergeable"] = nil
		default:
			out["mergeable"] = true
		}
	}
	return out, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// mergeableState computes GitHub's mergeable_state of p: dirty, blocked,
// behind, then the override, unstable (checks not green), clean; "unknown"
// once closed.
func (r *Repository) mergeableState(g *git.Repository, p *pull) (string, error) {
	if p.state != "open" {
		return "unknown", nil
	}
	baseTip, ok, err := branchHead(g, p.base)
	if err != nil {
		return "", err
	}
	if !ok {
		return "dirty", nil
	}
	head := plumbing.NewHash(p.headSHA)
	if p.conflicting {
		return "dirty", nil
	}
	if _, conflicts, err := merge3(g, head, baseTip); err != nil {
		return "", err
	} else if len(conflicts) > 0 {
		return "dirty", nil
	}
	prot := r.protection[p.base]
	passed, pending, failed := r.summary(p.headSHA)
	green := passed > 0 && pending == 0 && failed == 0
	if (prot.RequireReview && !p.approved) || (prot.Strict && !green) {
		return "blocked", nil
	}
	upToDate, err := isAncestor(g, baseTip, head)
	if err != nil {
		return "", err
	}
	switch {
	case !upToDate:
		return "behind", nil
	case p.stateOverride != "":
		return p.stateOverride, nil
	case pending > 0 || failed > 0:
		return "unstable", nil
	}
	return "clean", nil
}

func getPull(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	n, ok := number(w, req)
	if !ok {
		return
	}
	p := r.pull(n)
	if p == nil {
		replyError(w, http.StatusNotFound, "Not Found")
		return
	}
	out, err := r.pullJSON(g, p, true)
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	reply(w, http.StatusOK, out)
}

func listPulls(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	q := req.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		replyError(w, http.StatusUnprocessableEntity, "Validation Failed",
			validationError{Resource: "PullRequest", Field: "state", Code: "invalid"})
		return
	}
	// GitHub filters by head only in the form owner:branch.
	headOwner, headBranch, byHead := strings.Cut(q.Get("head"), ":")
	var match []*pull
	for _, p := range r.pulls {
		switch {
		case state != "all" && p.state != state:
		case byHead && (!strings.EqualFold(headOwner, r.owner) || p.head != headBranch):
		case q.Get("base") != "" && p.base != q.Get("base"):
		default:
			match = append(match, p)
		}
	}
	sort.Slice(match, func(i, j int) bool { return match[i].number > match[j].number })
	lo, hi := paginate(w, req, len(match))
	out := []map[string]any{}
	for _, p := range match[lo:hi] {
		j, err := r.pullJSON(g, p, false)
		if err != nil {
			replyError(w, http.StatusInternalServerError, err.Error())
			return
		}
		out = append(out, j)
	}
	reply(w, http.StatusOK, out)
}

func createPull(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
	}
	if !decode(w, req, &in) {
		return
	}
	invalid := func(field, code string) {
		replyError(w, http.StatusUnprocessableEntity, "Validation Failed",
			validationError{Resource: "PullRequest", Field: field, Code: code})
	}
	custom := func(message string) {
		replyError(w, http.StatusUnprocessableEntity, "Validation Failed",
			validationError{Resource: "PullRequest", Code: "custom", Message: message})
	}
	head := in.Head
	if owner, branch, ok := strings.Cut(in.Head, ":"); ok {
		if !strings.EqualFold(owner, r.owner) {
			invalid("head", "invalid")
			return
		}
		head = branch
	}
	if strings.TrimSpace(in.Title) == "" {
		invalid("title", "missing_field")
		return
	}
	headTip, ok, err := branchHead(g, head)
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !ok {
		invalid("head", "invalid")
		return
	}
	baseTip, ok, err := branchHead(g, in.Base)
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !ok {
		invalid("base", "invalid")
		return
	}
	for _, p := range r.pulls {
		if p.state == "open" && p.head == head && p.base == in.Base {
			custom(fmt.Sprintf("A pull request already exists for %s:%s.", r.owner, head))
			return
		}
	}
	if merged, err := isAncestor(g, headTip, baseTip); err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	} else if merged {
		custom(fmt.Sprintf("No commits between %s and %s", in.Base, head))
		return
	}
	p := &pull{
		number: r.next, title: in.Title, body: in.Body, head: head, base: in.Base,
		headSHA: headTip.String(), state: "open", created: time.Now(),
	}
	r.next++
	r.pulls = append(r.pulls, p)
	if err := r.runCI(g, head, headTip); err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	r.s.calls.PullRequestsOpened++
	out, err := r.pullJSON(g, p, true)
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	reply(w, http.StatusCreated, out)
}

func updateBranch(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	n, ok := number(w, req)
	if !ok {
		return
	}
	p := r.pull(n)
	if p == nil {
		replyError(w, http.StatusNotFound, "Not Found")
		return
	}
	var in struct {
		ExpectedHeadSHA string `json:"expected_head_sha"`
	}
	if !decode(w, req, &in) {
		return
	}
	if p.state != "open" {
		replyError(w, http.StatusUnprocessableEntity, "Pull request is closed.")
		return
	}
	if in.ExpectedHeadSHA != "" && in.ExpectedHeadSHA != p.headSHA {
		replyError(w, http.StatusUnprocessableEntity, "expected head sha didn't match current head ref.")
		return
	}
	head := plumbing.NewHash(p.headSHA)
	baseTip, ok, err := branchHead(g, p.base)
	if err == nil && !ok {
		err = fmt.Errorf("no base branch %s", p.base)
	}
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if upToDate, err := isAncestor(g, baseTip, head); err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	} else if upToDate {
		replyError(w, http.StatusUnprocessableEntity, "There are no new commits on the base branch.")
		return
	}
	fs, conflicts, err := merge3(g, head, baseTip)
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if len(conflicts) > 0 || p.conflicting {
		replyError(w, http.StatusUnprocessableEntity, "merge conflict between base and head")
		return
	}
	msg := fmt.Sprintf("Merge branch '%s' into %s\n", p.base, p.head)
	h, err := writeCommit(g, fs, msg, head, baseTip)
	if err == nil {
		err = moveBranch(g, p.head, head, h)
	}
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	p.headSHA = h.String()
	if err := r.runCI(g, p.head, h); err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	r.s.calls.BranchUpdates++
	reply(w, http.StatusAccepted, map[string]any{"message": "Updating pull request branch.", "url": r.apiURL("pulls", n)})
}

func mergePull(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	n, ok := number(w, req)
	if !ok {
		return
	}
	p := r.pull(n)
	if p == nil {
		replyError(w, http.StatusNotFound, "Not Found")
		return
	}
	var in struct {
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
	}
	if !decode(w, req, &in) {
		return
	}
	r.s.calls.MergeAttempts++
	if p.state != "open" {
		replyError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	}
	if in.SHA != "" && in.SHA != p.headSHA {
		replyError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.")
		return
	}
	if in.MergeMethod == "" {
		in.MergeMethod = "merge"
	}
	if in.MergeMethod != "squash" && in.MergeMethod != "merge" {
		replyError(w, http.StatusMethodNotAllowed, fmt.Sprintf("Merge method %s is not allowed on this repository", in.MergeMethod))
		return
	}
	state, err := r.mergeableState(g, p)
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	prot := r.protection[p.base]
	switch {
	case state == "dirty":
		replyError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	case state == "blocked" && prot.RequireReview && !p.approved:
		replyError(w, http.StatusMethodNotAllowed, "At least 1 approving review is required by reviewers with write access.")
		return
	case state == "blocked":
		replyError(w, http.StatusMethodNotAllowed, "Required status checks have not succeeded.")
		return
	case state == "behind" && prot.Strict:
		replyError(w, http.StatusMethodNotAllowed, "Head branch is out of date. Review and try the merge again.")
		return
	}
	head := plumbing.NewHash(p.headSHA)
	baseTip, ok, err := branchHead(g, p.base)
	if err == nil && !ok {
		err = fmt.Errorf("no base branch %s", p.base)
	}
	var fs map[string]entry
	if err == nil {
		fs, _, err = merge3(g, baseTip, head) // mergeableState found no conflict
	}
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	title, parents := in.CommitTitle, []plumbing.Hash{baseTip}
	if in.MergeMethod == "squash" {
		if title == "" {
			title = fmt.Sprintf("%s (#%d)", p.title, n)
		}
	} else {
		if title == "" {
			title = fmt.Sprintf("Merge pull request #%d from %s/%s", n, r.owner, p.head)
		}
		parents = append(parents, head)
	}
	msg := title + "\n"
	if in.CommitMessage != "" {
		msg += "\n" + in.CommitMessage + "\n"
	}
	h, err := writeCommit(g, fs, msg, parents...)
	if err == nil {
		err = moveBranch(g, p.base, baseTip, h)
	}
	if err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	p.state, p.merged, p.mergeSHA, p.closed = "closed", true, h.String(), time.Now()
	r.s.calls.Merges++
	reply(w, http.StatusOK, map[string]any{"sha": h.String(), "merged": true, "message": "Pull Request successfully merged"})
}

func deleteBranch(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	branch := req.PathValue("branch")
	name := plumbing.NewBranchReferenceName(branch)
	if name.Validate() != nil {
		replyError(w, http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	if _, ok, err := branchHead(g, branch); err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	} else if !ok {
		replyError(w, http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	if err := g.Storer.RemoveReference(name); err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	r.s.calls.RefsDeleted++
	// A pull request whose head branch is gone closes, as on GitHub.
	if err := r.sync(g); err != nil {
		replyError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
