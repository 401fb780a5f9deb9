package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/underpass-ai/axlr/contract"
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
// every PollInterval and hands each event to w. An execution runs in
// axlrd, not in the caller, so Watch outlives an axlrd restart: while
// axlrd does not answer it tells w once and asks again every
// RetryInterval. It ends with the result, with an error when the workflow
// refuses the query (the execution is not one of the session's), or with
// ctx's error.
func (c *Client) Watch(ctx context.Context, ex Execution, w Watcher) (*contract.Result, error) {
	after := 0
	link := &link{w: w}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		p, err := c.progress(ctx, ex, after)
		var refused *serviceerror.QueryFailed
		if errors.As(err, &refused) {
			return nil, fmt.Errorf("watch execution %s: %s", ex.ExecutionID, refused.Message)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			link.lost(err)
			timer.Reset(c.retry)
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
		timer.Reset(c.poll)
	}
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
