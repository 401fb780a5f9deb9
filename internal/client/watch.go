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
	after := 0
	link := &link{w: w}
	var unanswered unanswered
	pc := c.pace(ctx, ex.WorkflowID)
	defer pc.stop()
	for {
		if err := pc.wait(ctx); err != nil {
			return nil, err
		}
		p, err := c.progress(ctx, ex, after)
		if msg, end := unanswered.final(err); end {
			return nil, fmt.Errorf("watch execution %s: %s", ex.ExecutionID, msg)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			link.lost(err)
			pc.failed()
			continue
		}
		link.back()
		for _, ev := range p.Events {
			w.Event(ev)
		}
		after = p.Next
		if p.Result != nil {
			return p.Result, nil
		}
		pc.answered()
	}
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
	go p.follow(ctx, c.tc, workflowID)
	return p
}

// follow reads workflowID's history as it grows, marking each new event,
// until ctx ends. The iterator ends with the run (continued as new, or
// closed) or when axlrd does not answer; it starts again on the latest
// run after RetryInterval, reading that run from its first event.
func (p *pace) follow(ctx context.Context, tc HistoryReader, workflowID string) {
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
