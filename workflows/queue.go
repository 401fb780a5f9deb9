package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
)

// The merge queue takes the jobs the person queued, in queue order and
// one at a time, and lands each pull request on a base that must be up to
// date before a merge. For the head it reads the job (which may have left
// its merge decision) and the pull request every poll: a branch behind its
// base is updated with expected_head_sha, at most MaxQueueUpdates times,
// and the queue waits for the forge to show the new head and its checks;
// when every check on the head passed and the merge state is clean or
// has_hooks (never unstable), it hands the approval to the job's workflow
// (the job-decide Update, as `jobs approve` sends it) and waits for the
// job to end before it takes the next. Anything else that stops a merge
// takes the job off the queue with a typed reason, and the job keeps
// waiting for its merge decision. Every wait is bounded: checks by
// QueueInput.Watch from when the head was taken or last updated, the
// merge by QueueMergeWait. Each change of an entry's place is signalled
// to the registry. The queue continues as new when Temporal suggests it,
// its entries, their progress and the approval it handed kept.

// queueReasonBytes bounds the reasons the queue keeps (a person's reason
// for unqueueing, a forge's failed checks).
const queueReasonBytes = 4 << 10

type queueRun struct {
	in QueueInput
	st QueueState
	// id is the queue's workflow id, in the approvals' request ids.
	id string
	// sent is the place last told to the registry for each queued job;
	// outbox the places that send has yet to signal, in order.
	sent   map[string]jobs.QueuePlace
	outbox []QueuePlaceSignal
}

// MergeQueue is the merge queue of one repository and base branch
// (QueueWorkflowID). It runs until cancelled, continuing as new when
// Temporal suggests it.
func MergeQueue(ctx workflow.Context, in QueueInput) error {
	if strings.TrimSpace(in.Repository) == "" || strings.TrimSpace(in.Base) == "" {
		return fmt.Errorf("merge queue: repository %q and base %q must both be set", in.Repository, in.Base)
	}
	if in.Poll <= 0 {
		in.Poll = DefaultQueuePoll
	}
	if in.Watch <= 0 {
		in.Watch = DefaultQueueWatch
	}
	q := &queueRun{in: in, id: workflow.GetInfo(ctx).WorkflowExecution.ID, sent: map[string]jobs.QueuePlace{}}
	if in.State != nil {
		q.st = *in.State
		q.in.State = nil
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateQueueAdd, q.add,
		workflow.UpdateHandlerOptions{Validator: q.validateAdd}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateQueueAdd, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateQueueRemove, q.remove,
		workflow.UpdateHandlerOptions{Validator: q.validateRemove}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateQueueRemove, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryQueue, func() (QueueView, error) { return q.view(), nil }); err != nil {
		return fmt.Errorf("register %s: %w", QueryQueue, err)
	}
	suggested := func() bool { return workflow.GetInfo(ctx).GetContinueAsNewSuggested() }
	workflow.Go(ctx, q.send)
	// A new run tells the registry every entry's place once.
	q.sync()
	for {
		if err := workflow.Await(ctx, func() bool { return len(q.st.Entries) > 0 || suggested() }); err != nil {
			return err
		}
		// A queue an older axlr started on a host's queue moves to the
		// cluster queue, where every host serves it.
		if moving := onHostQueue(ctx); moving || suggested() {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) && len(q.outbox) == 0 }); err != nil {
				return err
			}
			st := q.carried()
			next := q.in
			next.State = &st
			if moving {
				ctx = workflow.WithWorkflowTaskQueue(ctx, ClusterTaskQueue)
			}
			return workflow.NewContinueAsNewError(ctx, QueueWorkflow, next)
		}
		seq := q.st.Entries[0].Seq
		wait, err := q.step(ctx)
		if err != nil {
			return err
		}
		if wait <= 0 || !q.isHead(seq) {
			continue
		}
		if _, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return !q.isHead(seq) || suggested() }); err != nil {
			return err
		}
	}
}

// step does one round with the head: a read of its job and pull request
// and what they call for, or, once the approval is handed, a read of the
// job. It returns how long to wait before the next round with the same
// head (0: go on at once). It fails only when the workflow is cancelled.
func (q *queueRun) step(ctx workflow.Context) (time.Duration, error) {
	head := q.st.Entries[0]
	seq := head.Seq
	if head.Approval != "" {
		return q.settle(ctx, seq)
	}
	if head.State == jobs.QueueWaiting {
		q.edit(seq, func(e *QueueEntry) {
			e.State, e.Since, e.Note = jobs.QueueChecks, workflow.Now(ctx).UTC(), "reading the pull request"
		})
		q.sync()
	}

	var job QueueJobResult
	if err := executeActivity(ctx, QueueOptions, ActivityQueueJob, QueueJobInput{Job: head.Job}, &job); err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		job.Missing = fmt.Sprintf("job %s could not be read: %s", head.Job, failureMessage(err))
	}
	if !q.isHead(seq) {
		return 0, nil
	}
	if why := q.left(head, job); why != "" {
		q.eject(ctx, seq, EjectJobLeft, why, job.Record.Status == jobs.Completed)
		return 0, nil
	}

	var read ReadResult
	if err := executeActivity(ctx, ForgeOptions, ActivityForgeRead, ReadInput{Repository: q.in.Repository, Number: head.PullRequest}, &read); err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		read.Error = failureMessage(err)
	}
	if !q.isHead(seq) {
		return 0, nil
	}
	e := *q.entry(seq)
	v, next := judgeQueue(e, read, workflow.Now(ctx), q.in.Watch)
	switch v.action {
	case queueEject:
		q.eject(ctx, seq, v.code, v.text, false)
		return 0, nil
	case queueUpdate:
		q.edit(seq, func(e *QueueEntry) { *e = next })
		return q.update(ctx, seq)
	case queueMerge:
		q.edit(seq, func(e *QueueEntry) { *e = next })
		return q.handOver(ctx, seq, v.text)
	}
	q.edit(seq, func(e *QueueEntry) { *e = next; e.Note = v.text })
	q.sync()
	return q.in.Poll, nil
}

// left says why a job read no longer belongs at the head of the queue,
// or "".
func (q *queueRun) left(e QueueEntry, job QueueJobResult) string {
	r := job.Record
	switch {
	case job.Missing != "":
		return job.Missing
	case r.Status != jobs.AwaitingMerge || r.Pending == nil || r.Pending.Kind != jobs.PendingMerge:
		return fmt.Sprintf("job %s no longer waits for its merge decision (it is %s)", e.Job, r.Status)
	case r.PullRequest != e.PullRequest:
		return fmt.Sprintf("job %s's pull request is #%d, not the #%d queued", e.Job, r.PullRequest, e.PullRequest)
	case !strings.EqualFold(r.Repository, q.in.Repository) || (r.Base != "" && r.Base != q.in.Base):
		return fmt.Sprintf("job %s's pull request goes to %s %s, not to this queue's %s %s", e.Job, r.Repository, r.Base, q.in.Repository, q.in.Base)
	}
	return ""
}

// update updates the head's branch with its base, guarded by the head the
// queue read; the watch's deadline starts again.
func (q *queueRun) update(ctx workflow.Context, seq int) (time.Duration, error) {
	e := *q.entry(seq)
	var up UpdateBranchResult
	err := executeActivity(ctx, ForgeOptions, ActivityForgeUpdate,
		UpdateBranchInput{Repository: q.in.Repository, Number: e.PullRequest, ExpectedHeadSHA: e.HeadSHA}, &up)
	if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		q.eject(ctx, seq, EjectUpdateFailed, "the branch could not be updated: "+failureMessage(err), false)
		return 0, nil
	}
	if !q.isHead(seq) {
		return 0, nil
	}
	if up.Stale {
		q.edit(seq, func(e *QueueEntry) {
			e.State, e.Note = jobs.QueueChecks, "the head moved before the branch update; reading it again"
		})
		q.sync()
		return q.in.Poll, nil
	}
	q.edit(seq, func(e *QueueEntry) {
		e.Updates++
		e.UpdatedFrom, e.Since, e.BlockedReads = e.HeadSHA, workflow.Now(ctx).UTC(), 0
		e.State = jobs.QueueUpdating
		e.Note = fmt.Sprintf("updating the branch with %s (update %d of %d)", q.in.Base, e.Updates, MaxQueueUpdates)
	})
	workflow.GetLogger(ctx).Info("queue updated a branch", "job", e.Job, "pr", e.PullRequest, "sha", e.HeadSHA, "updates", e.Updates+1)
	q.sync()
	return q.in.Poll, nil
}

// handOver hands the merge approval to the head's job under a request id
// of its own, once: from here the queue only waits for the job to end.
func (q *queueRun) handOver(ctx workflow.Context, seq int, note string) (time.Duration, error) {
	now := workflow.Now(ctx).UTC()
	var e QueueEntry
	q.edit(seq, func(en *QueueEntry) {
		en.State, en.Note = jobs.QueueMerging, note
		en.Approval, en.Handed = fmt.Sprintf("queue:%s:%s:%d", q.id, en.Job, en.Seq), now
		e = *en
	})
	q.sync()
	workflow.GetLogger(ctx).Info("queue hands the approval", "job", e.Job, "pr", e.PullRequest, "sha", e.HeadSHA, "request", e.Approval)
	var res QueueApproveResult
	err := executeActivity(ctx, QueueOptions, ActivityQueueApprove,
		QueueApproveInput{RequestID: e.Approval, Job: e.Job, HeadSHA: e.HeadSHA, Reason: "merge queue"}, &res)
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, err
	case err != nil:
		// The Update may have landed all the same: the job's own state
		// says, at the next read.
		workflow.GetLogger(ctx).Warn("queue approval not confirmed", "job", e.Job, "error", err)
		q.edit(seq, func(en *QueueEntry) {
			en.Note = "the approval was not confirmed (" + failureMessage(err) + "); reading the job"
		})
		q.sync()
	case res.Refused != "":
		q.eject(ctx, seq, EjectNotMerged, "the approval was not taken: "+res.Refused, false)
		return 0, nil
	}
	return q.settlePoll(), nil
}

// settle reads the job the queue handed the approval to: completed, it
// leaves the queue; back at its merge decision or ended otherwise, it is
// off the queue with the job's reason; still merging past QueueMergeWait,
// off the queue too.
func (q *queueRun) settle(ctx workflow.Context, seq int) (time.Duration, error) {
	e := *q.entry(seq)
	var job QueueJobResult
	err := executeActivity(ctx, QueueOptions, ActivityQueueJob, QueueJobInput{Job: e.Job}, &job)
	if err != nil && ctx.Err() != nil {
		return 0, err
	}
	r := job.Record
	switch {
	case err != nil:
		workflow.GetLogger(ctx).Warn("queue could not read a merging job", "job", e.Job, "error", err)
	case job.Missing != "":
		q.eject(ctx, seq, EjectNotMerged, "the approval did not merge: "+job.Missing, false)
		return 0, nil
	case r.Status == jobs.Completed:
		q.done(ctx, seq, r)
		return 0, nil
	case r.Status == jobs.AwaitingMerge || r.Status.Terminal() || r.Status == jobs.Interrupted:
		q.eject(ctx, seq, EjectNotMerged, "the approval did not merge: "+cmp.Or(r.Reason, "no reason was recorded"), false)
		return 0, nil
	}
	if workflow.Now(ctx).Sub(e.Handed) >= QueueMergeWait {
		q.eject(ctx, seq, EjectNotMerged, fmt.Sprintf("the merge did not end within %s", QueueMergeWait), false)
		return 0, nil
	}
	return q.settlePoll(), nil
}

func (q *queueRun) settlePoll() time.Duration { return min(q.in.Poll, QueueSettlePoll) }

// queueAction is what a read of the head calls for.
type queueAction int

const (
	queueWait queueAction = iota
	queueEject
	queueUpdate
	queueMerge
)

// queueVerdict is judgeQueue's answer: the action, with the ejection's
// code and reason (text), or the entry's note.
type queueVerdict struct {
	action queueAction
	code   string
	text   string
}

// judgeQueue decides what one read of the head's pull request calls for,
// and returns the entry's memory after it (its head, the update it waits
// to see, the blocked reads, its state). It is pure. The first matching
// case wins: the read failed, merged or closed outside axlr, an update the
// forge does not show yet, checks of another head, failed checks with
// none pending, a conflict, a branch behind its base (updated, within
// MaxQueueUpdates), green on clean or has_hooks, green but blocked on
// QueueBlockedReads reads, otherwise waiting; a wait past watch since the
// head was taken or last updated is checks_stalled.
func judgeQueue(e QueueEntry, read ReadResult, now time.Time, watch time.Duration) (queueVerdict, QueueEntry) {
	eject := func(code, reason string) (queueVerdict, QueueEntry) {
		return queueVerdict{action: queueEject, code: code, text: reason}, e
	}
	wait := func(note string) (queueVerdict, QueueEntry) {
		if now.Sub(e.Since) >= watch {
			return eject(EjectChecksStalled, fmt.Sprintf("checks did not settle within %s", watch))
		}
		e.State = jobs.QueueChecks
		if e.UpdatedFrom != "" {
			e.State = jobs.QueueUpdating
		}
		return queueVerdict{action: queueWait, text: note}, e
	}
	if read.Error != "" {
		return eject(EjectUnreadable, "the pull request could not be read: "+read.Error)
	}
	pr, c := read.PullRequest, read.Checks
	switch {
	case pr.Merged:
		return eject(EjectMergedOutside, "the pull request was merged outside axlr")
	case pr.State == "closed":
		return eject(EjectClosedOutside, "the pull request was closed outside axlr")
	}
	if e.UpdatedFrom != "" {
		if pr.HeadSHA == e.UpdatedFrom {
			return wait("waiting for the forge to show the updated branch")
		}
		e.UpdatedFrom = ""
	}
	if pr.HeadSHA != e.HeadSHA {
		e.HeadSHA, e.BlockedReads = pr.HeadSHA, 0
	}
	if c.SHA != pr.HeadSHA {
		return wait("waiting for the checks of " + shortHead(pr.HeadSHA))
	}
	failed, pending, passed := len(c.Failed), len(c.Pending), len(c.Passed)
	state := strings.ToLower(pr.MergeableState)
	green := failed == 0 && pending == 0 && passed > 0
	switch {
	case failed > 0 && pending == 0:
		return eject(EjectFailedChecks, "checks failed: "+jobs.Bound(strings.Join(c.Failed, "; "), queueReasonBytes))
	case state == "dirty":
		return eject(EjectConflict, "the pull request conflicts with its base")
	case state == "behind":
		if e.Updates >= MaxQueueUpdates {
			return eject(EjectUpdatesExhausted, fmt.Sprintf("the base kept moving after %d branch updates", MaxQueueUpdates))
		}
		return queueVerdict{action: queueUpdate}, e
	case green && (state == "clean" || state == "has_hooks"):
		return queueVerdict{action: queueMerge, text: fmt.Sprintf("checks green (%d passed); merging", passed)}, e
	case green && state == "blocked":
		e.BlockedReads++
		if e.BlockedReads >= QueueBlockedReads {
			return eject(EjectForgeBlocks, "checks passed but the forge blocks the merge (review or protection rule)")
		}
	}
	if state == "" {
		state = "no mergeable state"
	}
	return wait(fmt.Sprintf("waiting for checks: %d pending, %d passed (%s)", pending, passed, state))
}

func (q *queueRun) applied(request string) bool { return slices.Contains(q.st.Applied, request) }

func (q *queueRun) apply(request string) {
	q.st.Applied = append(q.st.Applied, request)
	if over := len(q.st.Applied) - maxApplied; over > 0 {
		q.st.Applied = slices.Clone(q.st.Applied[over:])
	}
}

func (q *queueRun) index(job string) int {
	return slices.IndexFunc(q.st.Entries, func(e QueueEntry) bool { return e.Job == job })
}

func (q *queueRun) isHead(seq int) bool { return len(q.st.Entries) > 0 && q.st.Entries[0].Seq == seq }

// entry is the queued entry seq; the caller knows it is queued.
func (q *queueRun) entry(seq int) *QueueEntry {
	return &q.st.Entries[slices.IndexFunc(q.st.Entries, func(e QueueEntry) bool { return e.Seq == seq })]
}

func (q *queueRun) edit(seq int, f func(*QueueEntry)) { f(q.entry(seq)) }

func (q *queueRun) validateAdd(ctx workflow.Context, req QueueAddRequest) error {
	if q.applied(req.RequestID) {
		return nil
	}
	switch {
	case strings.TrimSpace(req.RequestID) == "":
		return errors.New("queue: request_id is empty")
	case strings.TrimSpace(req.Job) == "":
		return errors.New("queue: job is empty")
	case req.PullRequest <= 0:
		return fmt.Errorf("queue: job %s has no pull request to merge (pull_request %d; it must be at least 1)", req.Job, req.PullRequest)
	}
	if i := q.index(req.Job); i >= 0 {
		return fmt.Errorf("queue: job %s is already queued (position %d of %d)", req.Job, i+1, len(q.st.Entries))
	}
	return nil
}

// add queues the job's merge at the end of the queue.
func (q *queueRun) add(ctx workflow.Context, req QueueAddRequest) (QueueView, error) {
	if q.applied(req.RequestID) {
		return q.view(), nil
	}
	// Another request may have queued the job since this one was
	// validated.
	if err := q.validateAdd(ctx, req); err != nil {
		return q.view(), err
	}
	q.st.Seq++
	q.st.Entries = append(q.st.Entries, QueueEntry{Job: req.Job, PullRequest: req.PullRequest, HeadSHA: req.HeadSHA,
		Queued: workflow.Now(ctx).UTC(), State: jobs.QueueWaiting, Note: "queued", Seq: q.st.Seq})
	q.apply(req.RequestID)
	workflow.GetLogger(ctx).Info("job queued", "job", req.Job, "pr", req.PullRequest, "position", len(q.st.Entries))
	q.sync()
	return q.view(), nil
}

func (q *queueRun) validateRemove(ctx workflow.Context, req QueueRemoveRequest) error {
	if q.applied(req.RequestID) {
		return nil
	}
	switch {
	case strings.TrimSpace(req.RequestID) == "":
		return errors.New("unqueue: request_id is empty")
	case strings.TrimSpace(req.Job) == "":
		return errors.New("unqueue: job is empty")
	}
	i := q.index(req.Job)
	if i < 0 {
		return fmt.Errorf("unqueue: job %s is not queued on %s %s", req.Job, q.in.Repository, q.in.Base)
	}
	if q.st.Entries[i].Approval != "" {
		return fmt.Errorf("unqueue: the queue already handed the approval to job %s; it merges or comes back", req.Job)
	}
	return nil
}

// remove takes the job off the queue, with the person's reason.
func (q *queueRun) remove(ctx workflow.Context, req QueueRemoveRequest) (QueueView, error) {
	if q.applied(req.RequestID) {
		return q.view(), nil
	}
	// The queue may have handed the approval since this request was
	// validated.
	if err := q.validateRemove(ctx, req); err != nil {
		return q.view(), err
	}
	q.apply(req.RequestID)
	reason := jobs.Bound(cmp.Or(strings.TrimSpace(req.Reason), "taken off the queue by the person"), queueReasonBytes)
	q.eject(ctx, q.st.Entries[q.index(req.Job)].Seq, EjectUnqueued, reason, false)
	return q.view(), nil
}

// eject takes entry seq off the queue with code and reason, and tells the
// registry: its place shows the reason, or is cleared when cleared is set
// (a job that completed on its own).
func (q *queueRun) eject(ctx workflow.Context, seq int, code, reason string, cleared bool) {
	e := *q.entry(seq)
	q.drop(seq)
	q.st.Ejected = append(q.st.Ejected, QueueEjection{Job: e.Job, PullRequest: e.PullRequest, Code: code, Reason: reason,
		At: workflow.Now(ctx).UTC()})
	if over := len(q.st.Ejected) - MaxQueueEjections; over > 0 {
		q.st.Ejected = slices.Clone(q.st.Ejected[over:])
	}
	workflow.GetLogger(ctx).Info("job off the queue", "job", e.Job, "pr", e.PullRequest, "code", code, "reason", reason)
	place := &jobs.QueuePlace{State: jobs.QueueEjected, Note: reason}
	if cleared {
		place = nil
	}
	q.syncWith(e.Job, place)
}

// done takes a job that merged off the queue; its place is cleared, and
// its record shows it completed.
func (q *queueRun) done(ctx workflow.Context, seq int, r jobs.Record) {
	e := *q.entry(seq)
	q.drop(seq)
	workflow.GetLogger(ctx).Info("queue merged a job", "job", e.Job, "pr", e.PullRequest, "sha", r.MergeSHA)
	q.syncWith(e.Job, nil)
}

func (q *queueRun) drop(seq int) {
	q.st.Entries = slices.DeleteFunc(q.st.Entries, func(e QueueEntry) bool { return e.Seq == seq })
}

// sync tells the registry the place of every entry whose place changed.
func (q *queueRun) sync() { q.syncWith("", nil) }

// syncWith is sync after job (when set) left the queue with place.
func (q *queueRun) syncWith(job string, place *jobs.QueuePlace) {
	if job != "" {
		delete(q.sent, job)
		q.outbox = append(q.outbox, QueuePlaceSignal{Job: job, Place: place})
	}
	for i, e := range q.st.Entries {
		p := jobs.QueuePlace{Position: i + 1, State: e.State, Note: e.Note}
		if have, ok := q.sent[e.Job]; ok && have == p {
			continue
		}
		q.sent[e.Job] = p
		q.outbox = append(q.outbox, QueuePlaceSignal{Job: e.Job, Place: &p})
	}
}

// send signals the places in the outbox to the registry, one at a time
// and in order (signals in flight at once may reach it out of order), for
// as long as the run lasts. A registry that is not running is logged; the
// queue goes on.
func (q *queueRun) send(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return len(q.outbox) > 0 }); err != nil {
			return
		}
		s := q.outbox[0]
		err := workflow.SignalExternalWorkflow(ctx, RegistryWorkflowID, "", SignalQueuePlace, s).Get(ctx, nil)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			workflow.GetLogger(ctx).Warn("queue place not signalled to the registry", "job", s.Job, "error", err)
		}
		q.outbox = q.outbox[1:]
	}
}

// view answers QueryQueue: the entries in order, the ejections newest
// first.
func (q *queueRun) view() QueueView {
	v := QueueView{Repository: q.in.Repository, Base: q.in.Base,
		Entries: append([]QueueEntry{}, q.st.Entries...), Ejected: append([]QueueEjection{}, q.st.Ejected...)}
	slices.Reverse(v.Ejected)
	return v
}

// carried is the state the next run starts from.
func (q *queueRun) carried() QueueState {
	return QueueState{Entries: slices.Clone(q.st.Entries), Ejected: slices.Clone(q.st.Ejected),
		Applied: slices.Clone(q.st.Applied), Seq: q.st.Seq}
}
