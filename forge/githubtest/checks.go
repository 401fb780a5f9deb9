package githubtest

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	git "github.com/go-git/go-git/v5"
)

// CheckRun is a check run a test registers on a commit. It becomes visible
// after AfterReads reads of the commit's check runs, stays not completed
// for PendingReads more reads, then completes with Conclusion.
type CheckRun struct {
	Name string
	// Workflow is the workflow run it belongs to (the unit that
	// rerun-failed-jobs reruns). Default: "CI".
	Workflow string
	// Conclusion once completed: success, failure, neutral, cancelled,
	// skipped, timed_out, action_required, stale or startup_failure.
	// Empty: it never completes.
	Conclusion string
	// Status while not completed: queued, in_progress (the default),
	// waiting, requested or pending.
	Status string
	// URL is its html_url and details_url. Default: a page of the server.
	URL string
	// AfterReads hides it from the first AfterReads reads (a check that
	// registers late).
	AfterReads int
	// PendingReads keeps it not completed for that many reads once visible.
	PendingReads int
	// RerunConclusion is the conclusion of its rerun by
	// rerun-failed-jobs (a flaky check passes on a rerun). Default:
	// Conclusion again.
	RerunConclusion string
}

// Status is a commit status a test sets; the latest of each Context counts.
type Status struct {
	Context string
	State   string // pending, success, failure or error
	URL     string // target_url
	// AfterReads hides it from the first AfterReads reads of the
	// commit's combined status.
	AfterReads int
}

// commitChecks is what a commit carries: check runs and statuses in the
// order registered, and how many times each list was read.
type commitChecks struct {
	runs        []*checkRun
	statuses    []*status
	runReads    int
	statusReads int
}

type checkRun struct {
	id   int64
	spec CheckRun
	from int // runReads when registered
	run  *workflowRun
}

func (c *checkRun) visible(read int) bool { return read >= c.from+c.spec.AfterReads }

func (c *checkRun) completed(read int) bool {
	return c.spec.Conclusion != "" && read >= c.from+c.spec.AfterReads+c.spec.PendingReads
}

type status struct {
	id   int64
	spec Status
	from int // statusReads when set
	at   time.Time
}

type workflowRun struct {
	id      int64
	sha     string
	name    string
	attempt int
}

var (
	conclusions = map[string]bool{"success": true, "failure": true, "neutral": true, "cancelled": true, "skipped": true,
		"timed_out": true, "action_required": true, "stale": true, "startup_failure": true}
	pendingStatuses = map[string]bool{"queued": true, "in_progress": true, "waiting": true, "requested": true, "pending": true}
	statusStates    = map[string]bool{"pending": true, "success": true, "failure": true, "error": true}
	fullSHA         = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// AddCheckRun registers c on commit sha. A later run of the same name
// supersedes it in the latest view, as a rerun does on GitHub.
func (r *Repository) AddCheckRun(sha string, c CheckRun) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if err := r.addCheckRun(sha, c); err != nil {
		return fmt.Errorf("githubtest: check run on %s: %w", sha, err)
	}
	return nil
}

// addCheckRun registers c on sha; s.mu is held.
func (r *Repository) addCheckRun(sha string, c CheckRun) error {
	switch {
	case !fullSHA.MatchString(sha):
		return fmt.Errorf("commit %q: want 40 lower-case hex digits", sha)
	case c.Name == "":
		return fmt.Errorf("no name")
	case c.Conclusion != "" && !conclusions[c.Conclusion]:
		return fmt.Errorf("%s: conclusion %q is not one of GitHub's", c.Name, c.Conclusion)
	case c.RerunConclusion != "" && !conclusions[c.RerunConclusion]:
		return fmt.Errorf("%s: rerun conclusion %q is not one of GitHub's", c.Name, c.RerunConclusion)
	case c.Status != "" && !pendingStatuses[c.Status]:
		return fmt.Errorf("%s: status %q: want queued, in_progress, waiting, requested or pending", c.Name, c.Status)
	case c.AfterReads < 0 || c.PendingReads < 0:
		return fmt.Errorf("%s: negative reads", c.Name)
	}
	if c.Workflow == "" {
		c.Workflow = "CI"
	}
	cc := r.checks(sha)
	var run *workflowRun
	for _, wr := range r.runs {
		if wr.sha == sha && wr.name == c.Workflow {
			run = wr
		}
	}
	if run == nil {
		run = &workflowRun{id: r.s.id(), sha: sha, name: c.Workflow, attempt: 1}
		r.runs = append(r.runs, run)
	}
	cr := &checkRun{id: r.s.id(), spec: c, from: cc.runReads, run: run}
	if cr.spec.URL == "" {
		cr.spec.URL = fmt.Sprintf("%s%s/runs/%d", r.s.URL, r.fullName, cr.id)
	}
	cc.runs = append(cc.runs, cr)
	return nil
}

// SetStatus sets a commit status on sha.
func (r *Repository) SetStatus(sha string, st Status) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	switch {
	case !fullSHA.MatchString(sha):
		return fmt.Errorf("githubtest: status on %q: want 40 lower-case hex digits", sha)
	case st.Context == "":
		return fmt.Errorf("githubtest: status on %s: no context", sha)
	case !statusStates[st.State]:
		return fmt.Errorf("githubtest: status %s on %s: state %q: want pending, success, failure or error", st.Context, sha, st.State)
	case st.AfterReads < 0:
		return fmt.Errorf("githubtest: status %s on %s: negative reads", st.Context, sha)
	}
	cc := r.checks(sha)
	cc.statuses = append(cc.statuses, &status{id: r.s.id(), spec: st, from: cc.statusReads, at: time.Now()})
	return nil
}

func (r *Repository) checks(sha string) *commitChecks {
	cc := r.commits[sha]
	if cc == nil {
		cc = &commitChecks{}
		r.commits[sha] = cc
	}
	return cc
}

// latestRuns returns, for read number read, the latest visible run of each
// name, in the order they were registered.
func (cc *commitChecks) latestRuns(read int) []*checkRun {
	last := map[string]*checkRun{}
	for _, c := range cc.runs {
		if c.visible(read) {
			last[c.spec.Name] = c
		}
	}
	var out []*checkRun
	for _, c := range cc.runs {
		if last[c.spec.Name] == c {
			out = append(out, c)
		}
	}
	return out
}

// latestStatuses returns the latest visible status of each context.
func (cc *commitChecks) latestStatuses(read int) []*status {
	last := map[string]*status{}
	for _, s := range cc.statuses {
		if read >= s.from+s.spec.AfterReads {
			last[s.spec.Context] = s
		}
	}
	var out []*status
	for _, s := range cc.statuses {
		if last[s.spec.Context] == s {
			out = append(out, s)
		}
	}
	return out
}

func passing(conclusion string) bool {
	return conclusion == "success" || conclusion == "neutral" || conclusion == "skipped"
}

// summary classifies what the next read of sha would show. s.mu is held.
func (r *Repository) summary(sha string) (passed, pending, failed int) {
	cc := r.commits[sha]
	if cc == nil {
		return 0, 0, 0
	}
	for _, c := range cc.latestRuns(cc.runReads) {
		switch {
		case !c.completed(cc.runReads):
			pending++
		case passing(c.spec.Conclusion):
			passed++
		default:
			failed++
		}
	}
	for _, s := range cc.latestStatuses(cc.statusReads) {
		switch s.spec.State {
		case "success":
			passed++
		case "pending":
			pending++
		default:
			failed++
		}
	}
	return passed, pending, failed
}

// resolve turns a {ref} (a full SHA or a branch) into a SHA; on failure it
// answers 422 as GitHub does.
func resolve(w http.ResponseWriter, req *http.Request, g *git.Repository) (string, bool) {
	ref := req.PathValue("ref")
	if fullSHA.MatchString(ref) {
		return ref, true
	}
	h, ok, err := branchHead(g, ref)
	if err != nil || !ok {
		replyError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+ref)
		return "", false
	}
	return h.String(), true
}

// readIndex counts a read of a list (its first page) and returns the read
// number the page belongs to.
func readIndex(req *http.Request, count *int) int {
	if p, _ := strconv.Atoi(req.URL.Query().Get("page")); p > 1 {
		return max(*count-1, 0)
	}
	*count++
	return *count - 1
}

func listCheckRuns(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	sha, ok := resolve(w, req, g)
	if !ok {
		return
	}
	cc := r.checks(sha)
	read := readIndex(req, &cc.runReads)
	var list []*checkRun
	switch req.URL.Query().Get("filter") {
	case "", "latest":
		list = cc.latestRuns(read)
	case "all":
		for _, c := range cc.runs {
			if c.visible(read) {
				list = append(list, c)
			}
		}
	default:
		replyError(w, http.StatusUnprocessableEntity, "Validation Failed",
			validationError{Resource: "CheckRun", Field: "filter", Code: "invalid"})
		return
	}
	lo, hi := paginate(w, req, len(list))
	runs := []map[string]any{}
	for _, c := range list[lo:hi] {
		st, conclusion, completedAt := c.spec.Status, any(nil), any(nil)
		if st == "" {
			st = "in_progress"
		}
		if c.completed(read) {
			st, conclusion, completedAt = "completed", c.spec.Conclusion, time.Now().UTC().Format(time.RFC3339)
		}
		runs = append(runs, map[string]any{
			"id": c.id, "name": c.spec.Name, "head_sha": sha, "status": st, "conclusion": conclusion,
			"html_url": c.spec.URL, "details_url": c.spec.URL, "completed_at": completedAt,
			"check_suite": map[string]any{"id": c.run.id}, "app": map[string]any{"slug": "github-actions"},
		})
	}
	reply(w, http.StatusOK, map[string]any{"total_count": len(list), "check_runs": runs})
}

func combinedStatus(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	sha, ok := resolve(w, req, g)
	if !ok {
		return
	}
	cc := r.checks(sha)
	list := cc.latestStatuses(readIndex(req, &cc.statusReads))
	state := "success"
	if len(list) == 0 {
		state = "pending"
	}
	for _, s := range list {
		switch s.spec.State {
		case "failure", "error":
			state = "failure"
		case "pending":
			if state != "failure" {
				state = "pending"
			}
		}
	}
	lo, hi := paginate(w, req, len(list))
	statuses := []map[string]any{}
	for _, s := range list[lo:hi] {
		statuses = append(statuses, map[string]any{
			"id": s.id, "context": s.spec.Context, "state": s.spec.State,
			"target_url": nilIfEmpty(s.spec.URL), "created_at": s.at.UTC().Format(time.RFC3339),
		})
	}
	reply(w, http.StatusOK, map[string]any{
		"state": state, "sha": sha, "total_count": len(list), "statuses": statuses,
		"repository": map[string]any{"full_name": r.fullName},
	})
}

// runState is a workflow run's status and conclusion from its latest
// visible check runs; ok is false when none is visible yet.
func (r *Repository) runState(wr *workflowRun) (st, conclusion string, failed []*checkRun, ok bool) {
	cc := r.commits[wr.sha]
	st, conclusion = "completed", "success"
	for _, c := range cc.latestRuns(cc.runReads) {
		if c.run != wr {
			continue
		}
		ok = true
		switch {
		case !c.completed(cc.runReads):
			st, conclusion = "in_progress", ""
		case !passing(c.spec.Conclusion):
			failed = append(failed, c)
		}
	}
	if st == "completed" && len(failed) > 0 {
		conclusion = "failure"
	}
	return st, conclusion, failed, ok
}

func listWorkflowRuns(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	headSHA := req.URL.Query().Get("head_sha")
	var list []map[string]any
	for i := len(r.runs) - 1; i >= 0; i-- {
		wr := r.runs[i]
		if headSHA != "" && wr.sha != headSHA {
			continue
		}
		st, conclusion, _, ok := r.runState(wr)
		if !ok {
			continue
		}
		list = append(list, map[string]any{
			"id": wr.id, "name": wr.name, "head_sha": wr.sha, "status": st,
			"conclusion": nilIfEmpty(conclusion), "run_attempt": wr.attempt,
			"html_url": fmt.Sprintf("%s%s/actions/runs/%d", r.s.URL, r.fullName, wr.id),
		})
	}
	lo, hi := paginate(w, req, len(list))
	page := list[lo:hi]
	if page == nil {
		page = []map[string]any{}
	}
	reply(w, http.StatusOK, map[string]any{"total_count": len(list), "workflow_runs": page})
}

func rerunFailedJobs(w http.ResponseWriter, req *http.Request, r *Repository, g *git.Repository) {
	id, err := strconv.ParseInt(req.PathValue("id"), 10, 64)
	var wr *workflowRun
	for _, x := range r.runs {
		if err == nil && x.id == id {
			wr = x
		}
	}
	if wr == nil {
		replyError(w, http.StatusNotFound, "Not Found")
		return
	}
	st, _, failed, ok := r.runState(wr)
	switch {
	case !ok || st != "completed":
		replyError(w, http.StatusForbidden, "This workflow run is not completed.")
		return
	case len(failed) == 0:
		replyError(w, http.StatusForbidden, "This workflow run has no failed jobs to re-run.")
		return
	}
	cc := r.commits[wr.sha]
	for _, c := range failed {
		spec := c.spec
		spec.AfterReads = 0
		if spec.RerunConclusion != "" {
			spec.Conclusion = spec.RerunConclusion
		}
		cc.runs = append(cc.runs, &checkRun{id: r.s.id(), spec: spec, from: cc.runReads, run: wr})
	}
	wr.attempt++
	r.s.calls.Reruns++
	reply(w, http.StatusCreated, map[string]any{})
}
