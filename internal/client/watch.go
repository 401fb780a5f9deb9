package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/workflows"
)

// Watcher receives what Watch sees, in order, on Watch's goroutine.
type Watcher interface {
	// Event is the execution's next event.
	Event(contract.Event)
	// Unreachable: axlrd stopped answering (err is why); Watch asks again
	// every RetryInterval.
	Unreachable(err error)
	// Back: axlrd answers again after Unreachable.
	Back()
}

// Watch follows an execution until its result: it queries its progress
// as the session's history grows (see pace) and hands each event to w. An execution runs in
// axlrd, not in the caller, so Watch outlives an axlrd restart: while
// axlrd does not answer it tells w once and asks again every
// RetryInterval, as it does after a query its worker failed to answer.
// It ends with the result, with an error when the workflow refuses the
// query (the execution is not one of the session's) or its worker failed
// to answer maxUnanswered times in a row, or with ctx's error.
func (c *Client) Watch(ctx context.Context, ex Execution, w Watcher) (*contract.Result, error) {
	return follow(ctx, c, ex, w, "watch execution "+ex.ExecutionID, func(ctx context.Context, wt *watch) (*contract.Result, bool, error) {
		p, err := wt.progress(ctx)
		return p.Result, p.Result != nil, err
	})
}

// follow is the loop of Watch, WatchJob and WatchPlan. Each turn it waits
// for the pace, then runs turn, which asks axlrd through wt what the
// watch follows and says whether the watch ends there: with its value
// (true, nil error), or with its error as it is (true and an error). An
// error with false is a query's: follow ends on a refusal or on a worker
// that failed to answer maxUnanswered times in a row (unanswered.final),
// naming the watch by what ("watch job 7"), and otherwise tells w once
// that axlrd is lost and runs the turn again after RetryInterval. After a
// turn that answered it tells w that axlrd is back, then hands it the
// events the turn held (watch.progress).
func follow[T any](ctx context.Context, c *Client, ex Execution, w Watcher, what string, turn func(context.Context, *watch) (T, bool, error)) (T, error) {
	var none T
	wt := &watch{c: c, ex: ex, link: link{w: w}}
	var unanswered unanswered
	pc := c.pace(ctx, ex.WorkflowID)
	defer pc.stop()
	for {
		if err := pc.wait(ctx); err != nil {
			return none, err
		}
		v, end, err := turn(ctx, wt)
		if err != nil && end {
			return none, err
		}
		if msg, final := unanswered.final(err); final {
			return none, fmt.Errorf("%s: %s", what, msg)
		}
		if err != nil {
			if ctx.Err() != nil {
				return none, ctx.Err()
			}
			wt.lost(err)
			pc.failed()
			continue
		}
		wt.back()
		wt.hand()
		if end {
			return v, nil
		}
		pc.answered()
	}
}

// watch is what follow keeps across a watch's turns: the execution, the
// cursor of its events, the events asked for and not yet handed to w,
// and whether w was told axlrd is lost.
type watch struct {
	link
	c     *Client
	ex    Execution
	after int
	held  []contract.Event
}

// progress asks the execution's progress after the last event asked for
// and holds its events: follow hands them to w after the turn answered.
func (wt *watch) progress(ctx context.Context) (workflows.Progress, error) {
	p, err := wt.c.progress(ctx, wt.ex, wt.after)
	if err != nil {
		return workflows.Progress{}, err
	}
	wt.held = append(wt.held, p.Events...)
	wt.after = p.Next
	return p, nil
}

// record is the queries of a turn of a job's or a plan's watch: the
// execution's progress, whose events it hands to w at once, before the
// record is read and whatever that answers; then the record read gives
// for the execution's id. done is the execution's result once its
// workflow has finished.
func record[R any](ctx context.Context, wt *watch, read func(context.Context, string) (R, error)) (rec R, done *contract.Result, err error) {
	p, err := wt.progress(ctx)
	wt.hand()
	if err != nil {
		return rec, nil, err
	}
	rec, err = read(ctx, wt.ex.ExecutionID)
	return rec, p.Result, err
}

// hand hands w the events held.
func (wt *watch) hand() {
	for _, ev := range wt.held {
		wt.w.Event(ev)
	}
	wt.held = nil
}

// answerFailed reports whether err is a query axlrd's worker failed to
// answer (a replay that panicked, a history that raced its task), not
// one the workflow refused (workflows.ErrTypeQueryRefused). Asking again
// answers it.
func answerFailed(err error) bool {
	var failed *serviceerror.QueryFailed
	return errors.As(err, &failed) && failed.Failure.GetApplicationFailureInfo().GetType() != workflows.ErrTypeQueryRefused
}

// maxUnanswered bounds the queries in a row a watch asks again after
// axlrd's worker failed to answer them, so a fault that stays ends the
// watch with the worker's words instead of holding it for ever.
const maxUnanswered = 10

// unanswered counts a watch's queries in a row that axlrd's worker failed
// to answer (answerFailed).
type unanswered int

// final tells whether a watch ends on its query's err, and with what: the
// workflow refused the query, or its worker failed to answer
// maxUnanswered times in a row. A watch asks again after any other err;
// nil starts the count again.
func (u *unanswered) final(err error) (string, bool) {
	var failed *serviceerror.QueryFailed
	if !errors.As(err, &failed) {
		if err == nil {
			*u = 0
		}
		return "", false
	}
	if !answerFailed(err) {
		// The failure's message is the refusal alone; the query's
		// message adds the error's type.
		return failed.Failure.GetMessage(), true
	}
	if *u++; *u >= maxUnanswered {
		return fmt.Sprintf("axlrd failed to answer %d times in a row: %s", int(*u), failed.Message), true
	}
	return "", false
}

// link tells a Watcher once when axlrd stops answering, and once when it
// answers again.
type link struct {
	w    Watcher
	down bool
}

func (l *link) lost(err error) {
	if !l.down {
		l.w.Unreachable(err)
		l.down = true
	}
}

func (l *link) back() {
	if l.down {
		l.w.Back()
		l.down = false
	}
}

// pace spaces the queries of a watch (Watch, WatchJob, WatchPlan). After a
// query that answered it waits PollInterval, then until the workflow's
// history grows or IdleQuery passes: it long-polls the history in the
// background, so a watch of an execution that does nothing sends a query
// every IdleQuery, not every PollInterval. Every change a query can see
// is recorded in the history first (a workflow task, an activity's
// result, an update accepted), so the wake-up comes with it. After a query
// that failed it waits RetryInterval.
type pace struct {
	poll, retry, idle time.Duration
	changed           chan struct{}
	stop              context.CancelFunc
	started           bool
	// waitChange: the last query answered.
	waitChange bool
}

// pace starts the long poll of workflowID's history; stop ends it.
func (c *Client) pace(ctx context.Context, workflowID string) *pace {
	ctx, stop := context.WithCancel(ctx)
	p := &pace{poll: c.poll, retry: c.retry, idle: c.idle, changed: make(chan struct{}, 1), stop: stop}
	go p.longPoll(ctx, c.tc, workflowID)
	return p
}

// Changes marks the channel it returns each time workflowID's history
// grows, until ctx ends: the long poll a watch waits on, for a reader of
// its own (the service API's event feeds).
func (c *Client) Changes(ctx context.Context, workflowID string) <-chan struct{} {
	return c.pace(ctx, workflowID).changed
}

// longPoll reads workflowID's history as it grows, marking each new event,
// until ctx ends. The iterator ends with the run (continued as new, or
// closed) or when axlrd does not answer; it starts again on the latest
// run after RetryInterval, reading that run from its first event.
func (p *pace) longPoll(ctx context.Context, tc HistoryReader, workflowID string) {
	for ctx.Err() == nil {
		it := tc.GetWorkflowHistory(ctx, workflowID, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			if _, err := it.Next(); err != nil {
				break
			}
			select {
			case p.changed <- struct{}{}:
			default:
			}
		}
		if !sleep(ctx, p.retry) {
			return
		}
	}
}

// answered: the next wait is for a change; failed: for RetryInterval.
func (p *pace) answered() { p.waitChange = true }
func (p *pace) failed()   { p.waitChange = false }

// wait returns when the next query is due, or ctx's error. The first
// query is due at once.
func (p *pace) wait(ctx context.Context) error {
	if !p.started {
		p.started = true
		return ctx.Err()
	}
	if !p.waitChange {
		if !sleep(ctx, p.retry) {
			return ctx.Err()
		}
		return nil
	}
	if !sleep(ctx, p.poll) {
		return ctx.Err()
	}
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.changed:
	case <-idle.C:
	}
	return nil
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
