package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
)

// queueWorld is a repository under strict branch protection as a merge
// queue sees it: pull requests on one base, which moves when one merges
// (or when someone pushes to it), so the others fall behind; and the jobs
// that wait for their merge decision, each merging its pull request, under
// the head it was approved at, a few reads after it took the approval.
// Read and UpdateBranch are the forge's activities, JobNow and Approve the
// queue's.
type queueWorld struct {
	mu   sync.Mutex
	base int
	prs  map[int]*queuePR
	jobs map[string]*queueJob
	// approvals are the approvals the jobs took, in order; inFlight the
	// jobs merging now, and maxInFlight the most at once.
	approvals         []QueueApproveInput
	inFlight, maxFlit int
	updates           []UpdateBranchInput
	merged            []int
}

// queuePR is one pull request. Each head shows pending checks on its
// first pendingReads reads, then its verdict (green unless red is set).
// An update lands a new head that contains the base, shown one read
// later.
type queuePR struct {
	number        int
	head, oldHead string
	baseAt        int
	lagging       bool
	reads         int
	headReads     int
	pendingReads  int
	updates       int
	red           []string
	// mergeable overrides the mergeable state (behind or clean, from
	// baseAt, otherwise); state and merged the pull request's.
	mergeable string
	state     string
	merged    bool
	// unreadable fails every read; refuseUpdate every update.
	unreadable   string
	refuseUpdate string
	// basePushes moves the base right after each update, as if someone
	// pushed to it.
	basePushes bool
	// pushOnRead moves the base at these reads of the pull request.
	pushOnRead map[int]bool
}

// queueJob is a job waiting for its merge decision. Once approved, it
// ends after settleReads reads: completed when its pull request merges
// under the approved head, blocked otherwise (or with endReason, when
// set).
type queueJob struct {
	rec         jobs.Record
	refuse      string
	settleReads int
	endReason   string
	approvedAt  string
	approved    map[string]QueueApproveResult
	readsSince  int
}

func newQueueWorld() *queueWorld {
	return &queueWorld{prs: map[int]*queuePR{}, jobs: map[string]*queueJob{}}
}

// job adds a job waiting for the merge of pull request n, opened on the
// base as it is now.
func (w *queueWorld) job(id string, n int) (*queueJob, *queuePR) {
	p := &queuePR{number: n, head: fmt.Sprintf("pr%d-h0", n), baseAt: w.base}
	j := &queueJob{settleReads: 1, approved: map[string]QueueApproveResult{}, rec: jobs.Record{
		ID: id, Kind: jobs.Repair, Repository: "o/r", Base: "main", Status: jobs.AwaitingMerge, PullRequest: n, HeadSHA: p.head,
		Pending: &jobs.Pending{Kind: jobs.PendingMerge, PullRequest: n, HeadSHA: p.head}}}
	w.prs[n], w.jobs[id] = p, j
	return j, p
}

func (w *queueWorld) Read(_ context.Context, in ReadInput) (ReadResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.prs[in.Number]
	p.reads++
	if p.pushOnRead[p.reads] {
		w.base++
	}
	if p.unreadable != "" {
		return ReadResult{Error: p.unreadable}, nil
	}
	pr := pull.Request{Number: p.number, State: "open", HeadSHA: p.head, BaseRef: "main", Merged: p.merged}
	if p.merged || p.state == "closed" {
		pr.State = "closed"
	}
	switch {
	case p.mergeable != "":
		pr.MergeableState = p.mergeable
	case p.baseAt < w.base:
		pr.MergeableState = "behind"
	default:
		pr.MergeableState = "clean"
	}
	if p.lagging {
		// The forge still shows the head before the update, green.
		p.lagging = false
		pr.HeadSHA, pr.MergeableState = p.oldHead, "behind"
		return ReadResult{PullRequest: pr, Checks: pull.Checks{SHA: p.oldHead, Passed: []string{"test"}}}, nil
	}
	p.headReads++
	c := pull.Checks{SHA: p.head, Passed: []string{"test"}}
	switch {
	case p.headReads <= p.pendingReads:
		c.Passed, c.Pending = nil, []string{"test"}
	case len(p.red) > 0:
		c.Passed, c.Failed = nil, p.red
	}
	return ReadResult{PullRequest: pr, Checks: c}, nil
}

func (w *queueWorld) UpdateBranch(_ context.Context, in UpdateBranchInput) (UpdateBranchResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.prs[in.Number]
	w.updates = append(w.updates, in)
	if p.refuseUpdate != "" {
		return UpdateBranchResult{}, temporal.NewNonRetryableApplicationError(p.refuseUpdate, ErrTypeForgeRefused, nil)
	}
	if in.ExpectedHeadSHA != p.head {
		return UpdateBranchResult{Stale: true}, nil
	}
	p.updates++
	p.oldHead, p.head = p.head, fmt.Sprintf("pr%d-u%d", p.number, p.updates)
	p.baseAt, p.lagging, p.headReads = w.base, true, 0
	if p.basePushes {
		w.base++
	}
	return UpdateBranchResult{}, nil
}

func (w *queueWorld) JobNow(_ context.Context, in QueueJobInput) (QueueJobResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[in.Job]
	if j == nil {
		return QueueJobResult{Missing: "job " + in.Job + " has no workflow"}, nil
	}
	if j.approvedAt != "" && j.rec.Status == jobs.Running {
		j.readsSince++
		if j.readsSince >= j.settleReads {
			w.end(j)
		}
	}
	return QueueJobResult{Record: j.rec}, nil
}

// end merges the job's pull request under the approved head, as the
// job's merge step does with the sha guard, and ends the job.
func (w *queueWorld) end(j *queueJob) {
	w.inFlight--
	p := w.prs[j.rec.PullRequest]
	switch {
	case j.endReason != "":
		j.rec.Status, j.rec.Reason = jobs.Blocked, j.endReason
	case p.head != j.approvedAt || p.baseAt < w.base:
		j.rec.Status, j.rec.Reason = jobs.Blocked, "the merge was refused: head "+j.approvedAt+" is not mergeable"
	default:
		p.merged = true
		w.base++
		w.merged = append(w.merged, p.number)
		j.rec.Status, j.rec.MergeSHA = jobs.Completed, "merge-"+p.head
	}
}

func (w *queueWorld) Approve(_ context.Context, in QueueApproveInput) (QueueApproveResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.jobs[in.Job]
	if res, ok := j.approved[in.RequestID]; ok {
		return res, nil
	}
	var res QueueApproveResult
	switch {
	case j.refuse != "":
		res.Refused = j.refuse
	case j.rec.Status != jobs.AwaitingMerge:
		res.Refused = fmt.Sprintf("decide: job %s waits for no decision (it is %s)", j.rec.ID, j.rec.Status)
	default:
		w.approvals = append(w.approvals, in)
		w.inFlight++
		w.maxFlit = max(w.maxFlit, w.inFlight)
		j.approvedAt, j.readsSince = in.HeadSHA, 0
		j.rec.Status, j.rec.Pending = jobs.Running, nil
		res.Record = j.rec
	}
	j.approved[in.RequestID] = res
	return res, nil
}

var _ QueueActivities = (*queueWorld)(nil)

// placeSent is one QueuePlaceSignal the queue sent the registry.
type placeSent struct {
	job   string
	place *jobs.QueuePlace
}

type queueHarness struct {
	testsuite.WorkflowTestSuite
	t     *testing.T
	env   *testsuite.TestWorkflowEnvironment
	world *queueWorld
	mu    sync.Mutex
	sent  []placeSent
	// views are the queue's views read by query.
	views []QueueView
}

var testQueue = QueueInput{Repository: "o/r", Base: "main", Poll: 30 * time.Second, Watch: 45 * time.Minute}

func newQueueHarness(t *testing.T, w *queueWorld) *queueHarness {
	return newQueueHarnessSignals(t, w, nil)
}

// newQueueHarnessSignals is newQueueHarness with a registry whose signals
// fail with signalErr (nil: it takes them).
func newQueueHarnessSignals(t *testing.T, w *queueWorld, signalErr error) *queueHarness {
	h := &queueHarness{t: t, world: w}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(MergeQueue, workflow.RegisterOptions{Name: QueueWorkflow})
	h.env.RegisterActivityWithOptions(w.Read, activity.RegisterOptions{Name: ActivityForgeRead})
	h.env.RegisterActivityWithOptions(w.UpdateBranch, activity.RegisterOptions{Name: ActivityForgeUpdate})
	h.env.RegisterActivityWithOptions(w.JobNow, activity.RegisterOptions{Name: ActivityQueueJob})
	h.env.RegisterActivityWithOptions(w.Approve, activity.RegisterOptions{Name: ActivityQueueApprove})
	h.env.OnSignalExternalWorkflow(mock.Anything, RegistryWorkflowID, "", SignalQueuePlace, mock.Anything).Run(func(args mock.Arguments) {
		s := args.Get(4).(QueuePlaceSignal)
		var p *jobs.QueuePlace
		if s.Place != nil {
			c := *s.Place
			p = &c
		}
		h.mu.Lock()
		h.sent = append(h.sent, placeSent{s.Job, p})
		h.mu.Unlock()
	}).Return(signalErr)
	return h
}

// at runs f after d of workflow time.
func (h *queueHarness) at(d time.Duration, f func()) { h.env.RegisterDelayedCallback(f, d) }

func (h *queueHarness) update(name, id string, arg any, out *outcome) {
	h.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
		OnReject:   func(err error) { out.rejected = err },
		OnAccept:   func() {},
		OnComplete: func(_ any, err error) { out.err, out.completed = err, true },
	}, arg)
}

func (h *queueHarness) queue(id string, job string, n int, out *outcome) {
	h.update(UpdateQueueAdd, id, QueueAddRequest{RequestID: id, Job: job, PullRequest: n, HeadSHA: fmt.Sprintf("pr%d-h0", n)}, out)
}

// view reads the queue's view now.
func (h *queueHarness) view() QueueView {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(QueryQueue)
	if err != nil {
		h.t.Fatal(err)
	}
	var qv QueueView
	if err := v.Get(&qv); err != nil {
		h.t.Fatal(err)
	}
	return qv
}

// run runs the queue from in, reads its view and cancels it at end.
func (h *queueHarness) run(in QueueInput, end time.Duration) QueueView {
	h.t.Helper()
	var v QueueView
	h.at(end, func() {
		v = h.view()
		h.env.CancelWorkflow()
	})
	h.env.ExecuteWorkflow(QueueWorkflow, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("the queue did not stop")
	}
	if err := h.env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		h.t.Fatalf("the queue ended with %v, want cancelled", err)
	}
	return v
}

// places are the places signalled for job, in order; "nil" is a cleared
// place.
func (h *queueHarness) places(job string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.sent {
		if s.job != job {
			continue
		}
		if s.place == nil {
			out = append(out, "nil")
			continue
		}
		out = append(out, fmt.Sprintf("%d %s %s", s.place.Position, s.place.State, s.place.Note))
	}
	return out
}

// TestQueueLandsInOrder: three jobs queued on a base under strict
// protection. The first is up to date and green: the queue hands it the
// approval and waits for it to merge, which moves the base. The second is
// behind: the queue updates its branch with the head it read, waits for
// the forge to show the new head and for its checks on that head, then
// hands the approval for the new head. Someone pushes to the base while
// the third's checks run: it is updated twice. All three merge in queue
// order, one approval each and never two in flight; every place change
// reaches the registry once, and each job's place is cleared as it
// merges.
func TestQueueLandsInOrder(t *testing.T) {
	w := newQueueWorld()
	w.job("job-a", 11)
	_, b := w.job("job-b", 12)
	_, c := w.job("job-c", 13)
	b.pendingReads = 1
	c.pendingReads, c.pushOnRead = 2, map[int]bool{4: true}
	h := newQueueHarness(t, w)
	var qa, qb, qc outcome
	h.at(time.Second, func() { h.queue("q-a", "job-a", 11, &qa) })
	h.at(2*time.Second, func() { h.queue("q-b", "job-b", 12, &qb) })
	h.at(3*time.Second, func() { h.queue("q-c", "job-c", 13, &qc) })
	v := h.run(testQueue, 2*time.Hour)
	qa.mustAccept(t, "queue a")
	qb.mustAccept(t, "queue b")
	qc.mustAccept(t, "queue c")
	if !slices.Equal(w.merged, []int{11, 12, 13}) {
		t.Fatalf("merged %v, want 11 12 13 in order", w.merged)
	}
	var approved []string
	for _, a := range w.approvals {
		approved = append(approved, a.Job+"@"+a.HeadSHA)
	}
	if want := []string{"job-a@pr11-h0", "job-b@pr12-u1", "job-c@pr13-u2"}; !slices.Equal(approved, want) {
		t.Fatalf("approvals %v, want %v", approved, want)
	}
	if w.maxFlit != 1 {
		t.Fatalf("%d approvals in flight at once", w.maxFlit)
	}
	var updates []string
	for _, u := range w.updates {
		updates = append(updates, fmt.Sprintf("#%d@%s", u.Number, u.ExpectedHeadSHA))
	}
	if want := []string{"#12@pr12-h0", "#13@pr13-h0", "#13@pr13-u1"}; !slices.Equal(updates, want) {
		t.Fatalf("updates %v, want %v", updates, want)
	}
	if len(v.Entries) != 0 || len(v.Ejected) != 0 {
		t.Fatalf("view after the merges %+v", v)
	}
	wantB := []string{
		"2 queued queued",
		"1 queued queued",
		"1 checking reading the pull request",
		"1 updating updating the branch with main (update 1 of 3)",
		"1 updating waiting for the forge to show the updated branch",
		"1 checking waiting for checks: 1 pending, 0 passed (clean)",
		"1 merging checks green (1 passed); merging",
		"nil",
	}
	if got := h.places("job-b"); !slices.Equal(got, wantB) {
		t.Fatalf("job-b's places\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantB, "\n"))
	}
	if got := h.places("job-c"); !slices.Contains(got, "1 updating updating the branch with main (update 2 of 3)") || got[0] != "3 queued queued" || got[1] != "2 queued queued" {
		t.Fatalf("job-c's places %q", got)
	}
	for _, s := range h.sent {
		if s.place != nil && s.place.State == jobs.QueueEjected {
			t.Fatalf("an ejection was signalled: %+v", s)
		}
	}
}

// TestQueueEjections: each way a head leaves the queue without merging,
// with its code and reason in the view and in the place signalled to the
// registry, and the approval handed only where the checks were green.
func TestQueueEjections(t *testing.T) {
	cases := []struct {
		name      string
		set       func(*queueJob, *queuePR)
		code      string
		reason    string
		approvals int
		// after is the least workflow time from the queueing to the
		// ejection, for the bounded waits.
		after time.Duration
	}{
		{"unreadable", func(_ *queueJob, p *queuePR) { p.unreadable = "GET /pulls/11: 502 Bad Gateway" },
			EjectUnreadable, "the pull request could not be read: GET /pulls/11: 502 Bad Gateway", 0, 0},
		{"merged outside", func(_ *queueJob, p *queuePR) { p.merged = true },
			EjectMergedOutside, "the pull request was merged outside axlr", 0, 0},
		{"closed outside", func(_ *queueJob, p *queuePR) { p.state = "closed" },
			EjectClosedOutside, "the pull request was closed outside axlr", 0, 0},
		{"failed checks", func(_ *queueJob, p *queuePR) { p.red = []string{"test: failure https://ci/1", "lint: cancelled"} },
			EjectFailedChecks, "checks failed: test: failure https://ci/1; lint: cancelled", 0, 0},
		{"failed checks wait for pending ones", func(_ *queueJob, p *queuePR) { p.pendingReads, p.red = 2, []string{"test: failure https://ci/1"} },
			EjectFailedChecks, "checks failed: test: failure https://ci/1", 0, time.Minute},
		{"conflict", func(_ *queueJob, p *queuePR) { p.mergeable = "dirty" },
			EjectConflict, "the pull request conflicts with its base", 0, 0},
		{"updates exhausted", func(_ *queueJob, p *queuePR) { p.baseAt, p.basePushes = -1, true },
			EjectUpdatesExhausted, "the base kept moving after 3 branch updates", 0, 3 * time.Minute},
		{"update refused", func(_ *queueJob, p *queuePR) { p.baseAt, p.refuseUpdate = -1, "update branch #11: 422 merge conflict" },
			EjectUpdateFailed, "the branch could not be updated: update branch #11: 422 merge conflict", 0, 0},
		{"forge blocks", func(_ *queueJob, p *queuePR) { p.mergeable = "blocked" },
			EjectForgeBlocks, "checks passed but the forge blocks the merge (review or protection rule)", 0, time.Minute},
		{"unstable is not green", func(_ *queueJob, p *queuePR) { p.mergeable = "unstable" },
			EjectChecksStalled, "checks did not settle within 45m0s", 0, 45 * time.Minute},
		{"checks stalled", func(_ *queueJob, p *queuePR) { p.pendingReads = 1 << 20 },
			EjectChecksStalled, "checks did not settle within 45m0s", 0, 45 * time.Minute},
		{"approval refused", func(j *queueJob, _ *queuePR) { j.refuse = "decide: job job-a already has a decision to apply" },
			EjectNotMerged, "the approval was not taken: decide: job job-a already has a decision to apply", 0, 0},
		{"approval did not merge", func(j *queueJob, _ *queuePR) { j.endReason = "the merge was refused: 405 Base branch was modified" },
			EjectNotMerged, "the approval did not merge: the merge was refused: 405 Base branch was modified", 1, 0},
		{"merge did not end", func(j *queueJob, _ *queuePR) { j.settleReads = 1 << 20 },
			EjectNotMerged, "the merge did not end within 10m0s", 1, 10 * time.Minute},
		{"job left its decision", func(j *queueJob, _ *queuePR) { j.rec.Status, j.rec.Pending = jobs.Blocked, nil },
			EjectJobLeft, "job job-a no longer waits for its merge decision (it is blocked)", 0, 0},
		{"job of another queue", func(j *queueJob, _ *queuePR) { j.rec.Base = "release" },
			EjectJobLeft, "job job-a's pull request goes to o/r release, not to this queue's o/r main", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newQueueWorld()
			j, p := w.job("job-a", 11)
			tc.set(j, p)
			h := newQueueHarness(t, w)
			var q outcome
			h.at(time.Second, func() { h.queue("q-a", "job-a", 11, &q) })
			queued := h.env.Now().Add(time.Second)
			v := h.run(testQueue, 3*time.Hour)
			q.mustAccept(t, "queue")
			if len(v.Entries) != 0 || len(v.Ejected) != 1 {
				t.Fatalf("view %+v", v)
			}
			e := v.Ejected[0]
			if e.Job != "job-a" || e.PullRequest != 11 || e.Code != tc.code || e.Reason != tc.reason {
				t.Fatalf("ejection %+v, want %s %q", e, tc.code, tc.reason)
			}
			if took := e.At.Sub(queued); took < tc.after || took > tc.after+2*time.Minute {
				t.Fatalf("ejected %s after the queueing, want about %s", took, tc.after)
			}
			places := h.places("job-a")
			if want := "0 ejected " + tc.reason; places[len(places)-1] != want {
				t.Fatalf("last place %q, want %q", places[len(places)-1], want)
			}
			if len(w.approvals) != tc.approvals {
				t.Fatalf("%d approvals, want %d", len(w.approvals), tc.approvals)
			}
			if len(w.merged) != 0 {
				t.Fatalf("merged %v", w.merged)
			}
		})
	}
}

// TestQueueJobGone: a job whose workflow is gone, or that completed by
// the person's own decision, leaves the queue as job_left; a completed
// one's place is cleared rather than shown ejected.
func TestQueueJobGone(t *testing.T) {
	w := newQueueWorld()
	j, _ := w.job("job-a", 11)
	j.rec.Status, j.rec.Pending = jobs.Completed, nil
	h := newQueueHarness(t, w)
	var qa, qb outcome
	h.at(time.Second, func() { h.queue("q-a", "job-a", 11, &qa) })
	h.at(2*time.Second, func() { h.queue("q-b", "job-gone", 12, &qb) })
	v := h.run(testQueue, time.Hour)
	qa.mustAccept(t, "queue a")
	qb.mustAccept(t, "queue the gone job")
	if len(v.Ejected) != 2 || v.Ejected[0].Job != "job-gone" || v.Ejected[0].Code != EjectJobLeft || v.Ejected[0].Reason != "job job-gone has no workflow" ||
		v.Ejected[1].Reason != "job job-a no longer waits for its merge decision (it is completed)" {
		t.Fatalf("ejections %+v", v.Ejected)
	}
	// In the order the queue changed them: one signal at a time.
	if got := h.places("job-a"); !slices.Equal(got, []string{"1 queued queued", "1 checking reading the pull request", "nil"}) {
		t.Fatalf("job-a's places %q", got)
	}
	if got := h.places("job-gone"); got[len(got)-1] != "0 ejected job job-gone has no workflow" {
		t.Fatalf("job-gone's places %q", got)
	}
}

// TestQueueRequests: what the add and remove Updates refuse, and a
// retried request applied once.
func TestQueueRequests(t *testing.T) {
	w := newQueueWorld()
	w.job("job-a", 11)
	w.job("job-b", 12)
	w.prs[11].pendingReads = 1 << 20
	h := newQueueHarness(t, w)
	cases := []struct {
		name   string
		update string
		id     string
		arg    any
		reject string
	}{
		{"queue a", UpdateQueueAdd, "q-a", QueueAddRequest{RequestID: "q-a", Job: "job-a", PullRequest: 11}, ""},
		{"queue a retried", UpdateQueueAdd, "q-a", QueueAddRequest{RequestID: "q-a", Job: "job-a", PullRequest: 11}, ""},
		{"queue a again", UpdateQueueAdd, "q-a2", QueueAddRequest{RequestID: "q-a2", Job: "job-a", PullRequest: 11}, "queue: job job-a is already queued (position 1 of 1)"},
		{"no request id", UpdateQueueAdd, "q-x1", QueueAddRequest{Job: "job-b", PullRequest: 12}, "queue: request_id is empty"},
		{"no job", UpdateQueueAdd, "q-x2", QueueAddRequest{RequestID: "q-x2", PullRequest: 12}, "queue: job is empty"},
		{"no pull request", UpdateQueueAdd, "q-x3", QueueAddRequest{RequestID: "q-x3", Job: "job-b"}, "queue: job job-b has no pull request to merge (pull_request 0; it must be at least 1)"},
		{"queue b", UpdateQueueAdd, "q-b", QueueAddRequest{RequestID: "q-b", Job: "job-b", PullRequest: 12}, ""},
		{"unqueue one not queued", UpdateQueueRemove, "u-x1", QueueRemoveRequest{RequestID: "u-x1", Job: "job-z"}, "unqueue: job job-z is not queued on o/r main"},
		{"unqueue without request id", UpdateQueueRemove, "u-x2", QueueRemoveRequest{Job: "job-b"}, "unqueue: request_id is empty"},
		{"unqueue b", UpdateQueueRemove, "u-b", QueueRemoveRequest{RequestID: "u-b", Job: "job-b", Reason: "not today"}, ""},
		{"unqueue b retried", UpdateQueueRemove, "u-b", QueueRemoveRequest{RequestID: "u-b", Job: "job-b", Reason: "not today"}, ""},
		{"unqueue the head while it waits for checks", UpdateQueueRemove, "u-a", QueueRemoveRequest{RequestID: "u-a", Job: "job-a"}, ""},
	}
	got := make([]outcome, len(cases))
	for i, tc := range cases {
		h.at(time.Duration(i+1)*time.Minute, func() { h.update(tc.update, tc.id, tc.arg, &got[i]) })
	}
	var afterB QueueView
	h.at(time.Duration(len(cases))*time.Minute-time.Second, func() { afterB = h.view() })
	v := h.run(testQueue, time.Hour)
	for i, tc := range cases {
		if tc.reject != "" {
			got[i].mustReject(t, tc.name, tc.reject)
			continue
		}
		got[i].mustAccept(t, tc.name)
	}
	if len(afterB.Entries) != 1 || afterB.Entries[0].Job != "job-a" || afterB.Entries[0].State != jobs.QueueChecks {
		t.Fatalf("entries after b was taken back %+v", afterB.Entries)
	}
	if len(v.Entries) != 0 || len(v.Ejected) != 2 {
		t.Fatalf("view %+v", v)
	}
	// Newest first.
	if e := v.Ejected[1]; e.Job != "job-b" || e.Code != EjectUnqueued || e.Reason != "not today" {
		t.Fatalf("b's ejection %+v", e)
	}
	if e := v.Ejected[0]; e.Job != "job-a" || e.Code != EjectUnqueued || e.Reason != "taken off the queue by the person" {
		t.Fatalf("a's ejection %+v", e)
	}
	if len(w.approvals) != 0 || len(w.updates) != 0 || w.prs[12].reads != 0 {
		t.Fatalf("the queue touched what it should not: approvals %v, #12 read %d times", w.approvals, w.prs[12].reads)
	}
	if got := h.places("job-b"); !slices.Equal(got, []string{"2 queued queued", "0 ejected not today"}) {
		t.Fatalf("job-b's places %q", got)
	}
}

// TestQueueUnqueueMerging: once the queue has handed the approval, the
// job cannot be taken back; it merges, and the next one goes.
func TestQueueUnqueueMerging(t *testing.T) {
	w := newQueueWorld()
	a, _ := w.job("job-a", 11)
	a.settleReads = 4
	w.job("job-b", 12)
	h := newQueueHarness(t, w)
	var qa, qb, un outcome
	h.at(time.Second, func() { h.queue("q-a", "job-a", 11, &qa) })
	h.at(2*time.Second, func() { h.queue("q-b", "job-b", 12, &qb) })
	h.at(10*time.Second, func() {
		h.update(UpdateQueueRemove, "u-a", QueueRemoveRequest{RequestID: "u-a", Job: "job-a"}, &un)
	})
	v := h.run(testQueue, time.Hour)
	un.mustReject(t, "unqueue a merging job", "unqueue: the queue already handed the approval to job job-a; it merges or comes back")
	if !slices.Equal(w.merged, []int{11, 12}) || len(v.Entries) != 0 || len(v.Ejected) != 0 || w.maxFlit != 1 {
		t.Fatalf("merged %v, view %+v, in flight %d", w.merged, v, w.maxFlit)
	}
}

// TestQueueContinueAsNew: when Temporal suggests it, the queue continues
// as new with its entries in order and the approval it handed; the next
// run waits for the merging head without approving it again, then lands
// the others in order.
func TestQueueContinueAsNew(t *testing.T) {
	w := newQueueWorld()
	a, _ := w.job("job-a", 11)
	a.settleReads = 6
	w.job("job-b", 12)
	w.job("job-c", 13)
	h := newQueueHarness(t, w)
	var qa, qb, qc outcome
	h.at(time.Second, func() { h.queue("q-a", "job-a", 11, &qa) })
	h.at(2*time.Second, func() { h.queue("q-b", "job-b", 12, &qb) })
	h.at(3*time.Second, func() { h.queue("q-c", "job-c", 13, &qc) })
	h.at(20*time.Second, func() { h.env.SetContinueAsNewSuggested(true) })
	h.env.ExecuteWorkflow(QueueWorkflow, testQueue)
	var can *workflow.ContinueAsNewError
	if !errors.As(h.env.GetWorkflowError(), &can) {
		t.Fatalf("the queue ended with %v, want continue-as-new", h.env.GetWorkflowError())
	}
	var next QueueInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	st := next.State
	if st == nil || len(st.Entries) != 3 || st.Entries[0].Job != "job-a" || st.Entries[1].Job != "job-b" || st.Entries[2].Job != "job-c" {
		t.Fatalf("carried %+v", st)
	}
	if head := st.Entries[0]; head.State != jobs.QueueMerging || head.Approval != "queue:default-test-workflow-id:job-a:1" || head.Handed.IsZero() {
		t.Fatalf("carried head %+v", head)
	}
	if next.Repository != "o/r" || next.Base != "main" || next.Poll != testQueue.Poll || next.Watch != testQueue.Watch || st.Seq != 3 || len(st.Applied) != 3 {
		t.Fatalf("carried input %+v", next)
	}
	if len(w.approvals) != 1 || len(w.merged) != 0 {
		t.Fatalf("before the new run: approvals %v, merged %v", w.approvals, w.merged)
	}

	h2 := newQueueHarness(t, w)
	var retried outcome
	h2.at(time.Second, func() {
		h2.update(UpdateQueueAdd, "q-c", QueueAddRequest{RequestID: "q-c", Job: "job-c", PullRequest: 13}, &retried)
	})
	v := h2.run(next, time.Hour)
	retried.mustAccept(t, "a queueing retried across continue-as-new")
	if !slices.Equal(w.merged, []int{11, 12, 13}) || len(w.approvals) != 3 || w.maxFlit != 1 || len(v.Entries) != 0 {
		t.Fatalf("merged %v, approvals %v, in flight %d, view %+v", w.merged, w.approvals, w.maxFlit, v)
	}
	if got := h2.places("job-b"); got[0] != "2 queued queued" {
		t.Fatalf("the new run's first place for job-b %q", got)
	}
}

// TestQueueRegistryDown: a registry that does not take the places does
// not stop the queue.
func TestQueueRegistryDown(t *testing.T) {
	w := newQueueWorld()
	w.job("job-a", 11)
	h := newQueueHarnessSignals(t, w, errors.New("unknown external workflow execution"))
	var q outcome
	h.at(time.Second, func() { h.queue("q-a", "job-a", 11, &q) })
	h.run(testQueue, time.Hour)
	q.mustAccept(t, "queue")
	if !slices.Equal(w.merged, []int{11}) || len(h.places("job-a")) == 0 {
		t.Fatalf("merged %v, places tried %q", w.merged, h.places("job-a"))
	}
}

// TestJudgeQueue pins the first-match order of a read's cases where the
// scenarios above do not reach: an update the forge does not show yet
// waits even when the old head looks green, checks of another head wait,
// and a pending check holds a failure back.
func TestJudgeQueue(t *testing.T) {
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := since.Add(time.Minute)
	cases := []struct {
		name   string
		entry  QueueEntry
		read   ReadResult
		action queueAction
		text   string
	}{
		{"update not shown", QueueEntry{HeadSHA: "h1", UpdatedFrom: "h0", Since: since},
			ReadResult{PullRequest: pull.Request{State: "open", HeadSHA: "h0", MergeableState: "clean"}, Checks: pull.Checks{SHA: "h0", Passed: []string{"t"}}},
			queueWait, "waiting for the forge to show the updated branch"},
		{"checks of another head", QueueEntry{HeadSHA: "h0", Since: since},
			ReadResult{PullRequest: pull.Request{State: "open", HeadSHA: "h1", MergeableState: "clean"}, Checks: pull.Checks{SHA: "h0", Passed: []string{"t"}}},
			queueWait, "waiting for the checks of h1"},
		{"a pending check holds a failure back", QueueEntry{HeadSHA: "h0", Since: since},
			ReadResult{PullRequest: pull.Request{State: "open", HeadSHA: "h0", MergeableState: "unstable"}, Checks: pull.Checks{SHA: "h0", Failed: []string{"a: failure"}, Pending: []string{"b"}}},
			queueWait, "waiting for checks: 1 pending, 0 passed (unstable)"},
		{"no checks is not green", QueueEntry{HeadSHA: "h0", Since: since},
			ReadResult{PullRequest: pull.Request{State: "open", HeadSHA: "h0", MergeableState: "clean"}, Checks: pull.Checks{SHA: "h0"}},
			queueWait, "waiting for checks: 0 pending, 0 passed (clean)"},
		{"has_hooks is green", QueueEntry{HeadSHA: "h0", Since: since},
			ReadResult{PullRequest: pull.Request{State: "open", HeadSHA: "h0", MergeableState: "has_hooks"}, Checks: pull.Checks{SHA: "h0", Passed: []string{"a", "b"}}},
			queueMerge, "checks green (2 passed); merging"},
		{"behind with checks pending is updated", QueueEntry{HeadSHA: "h0", Since: since, Updates: 2},
			ReadResult{PullRequest: pull.Request{State: "open", HeadSHA: "h0", MergeableState: "behind"}, Checks: pull.Checks{SHA: "h0", Pending: []string{"a"}}},
			queueUpdate, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := judgeQueue(tc.entry, tc.read, now, 45*time.Minute)
			if v.action != tc.action || v.text != tc.text {
				t.Fatalf("verdict %+v, want %d %q", v, tc.action, tc.text)
			}
		})
	}
}

// TestQueueAddTwiceAtOnce: two requests that queue the same job at the
// same moment queue it once; the other is refused. (The test environment
// runs the first handler before the second validator; a server may run
// both validators first, which the handler's own check covers.)
func TestQueueAddTwiceAtOnce(t *testing.T) {
	w := newQueueWorld()
	w.job("job-a", 11)
	w.prs[11].pendingReads = 1 << 20
	h := newQueueHarness(t, w)
	var first, second outcome
	h.at(time.Second, func() {
		h.queue("q-1", "job-a", 11, &first)
		h.queue("q-2", "job-a", 11, &second)
	})
	var v QueueView
	h.at(time.Minute, func() { v = h.view() })
	h.run(testQueue, time.Hour)
	first.mustAccept(t, "the first request")
	refusal := second.rejected
	if refusal == nil {
		refusal = second.err
	}
	if refusal == nil || !strings.Contains(refusal.Error(), "queue: job job-a is already queued (position 1 of 1)") {
		t.Fatalf("the second request: rejected %v, failed %v", second.rejected, second.err)
	}
	if len(v.Entries) != 1 {
		t.Fatalf("entries %+v", v.Entries)
	}
}
