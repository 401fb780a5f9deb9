package madetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/made/madetest"
	"github.com/underpass-ai/axlr/made/mcp"
)

// openEmbedded opens an embedded engine in a fresh directory, on a test clock.
func openEmbedded(t *testing.T) (made.Engine, *madetest.Clock) {
	clock := madetest.NewClock(time.Date(2026, 6, 6, 12, 0, 0, 0, time.UTC))
	e, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e, clock
}

func TestEmbeddedConformance(t *testing.T) {
	madetest.Run(t, func(t *testing.T) (made.Engine, *madetest.Clock) {
		e, clock := openEmbedded(t)
		return classified{t: t, e: e}, clock
	})
}

// classified passes calls to the engine and fails the test when a
// failure's kind is not the one its message reads as: an MCP client has
// only the message.
type classified struct {
	t *testing.T
	e made.Engine
}

func check[T any](t *testing.T) func(T, error) (T, error) {
	return func(v T, err error) (T, error) {
		var e *made.Error
		if errors.As(err, &e) {
			if got := mcp.ClassifyMessage(e.Message); got != e.Kind {
				t.Errorf("%q is a %s failure but reads as %s", e.Message, e.Kind, got)
			}
		}
		return v, err
	}
}

func (c classified) Publish(ctx context.Context, yaml []byte) (made.Published, error) {
	return check[made.Published](c.t)(c.e.Publish(ctx, yaml))
}

func (c classified) StartPublished(ctx context.Context, req made.StartRequest) (made.Instance, error) {
	return check[made.Instance](c.t)(c.e.StartPublished(ctx, req))
}

func (c classified) Get(ctx context.Context, id string) (made.Instance, error) {
	return check[made.Instance](c.t)(c.e.Get(ctx, id))
}

func (c classified) List(ctx context.Context) ([]made.ListEntry, error) {
	return check[[]made.ListEntry](c.t)(c.e.List(ctx))
}

func (c classified) Claim(ctx context.Context, req made.ClaimRequest) (made.Instance, error) {
	return check[made.Instance](c.t)(c.e.Claim(ctx, req))
}

func (c classified) Complete(ctx context.Context, req made.CompleteRequest) (made.Instance, error) {
	return check[made.Instance](c.t)(c.e.Complete(ctx, req))
}

func (c classified) ApplyTransition(ctx context.Context, req made.TransitionRequest) (made.Instance, error) {
	return check[made.Instance](c.t)(c.e.ApplyTransition(ctx, req))
}

func (c classified) ApproveGuard(ctx context.Context, req made.ApproveRequest) (made.Instance, error) {
	return check[made.Instance](c.t)(c.e.ApproveGuard(ctx, req))
}

func (c classified) DeferGuard(ctx context.Context, req made.DeferRequest) (made.Instance, error) {
	return check[made.Instance](c.t)(c.e.DeferGuard(ctx, req))
}
