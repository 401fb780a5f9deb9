package madetest_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/database/dbtest"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/made/madetest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// openPostgres opens an engine on a schema of its own on the test server.
func openPostgres(t *testing.T, schema string, clock *madetest.Clock) *embedded.Engine {
	t.Helper()
	e, err := embedded.OpenDB(t.Context(), dbtest.Open(t, schema), embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// TestPostgresConformance runs the conformance suite on the engine over
// PostgreSQL, the store the hosts of a cluster share.
func TestPostgresConformance(t *testing.T) {
	madetest.Run(t, func(t *testing.T) (made.Engine, *madetest.Clock) {
		clock := madetest.NewClock(time.Date(2026, 6, 6, 12, 0, 0, 0, time.UTC))
		return classified{t: t, e: openPostgres(t, dbtest.Schema("made"), clock)}, clock
	})
}

// TestPostgresHostsRace has engines on one schema, as hosts on one
// database, claim the same step at once: one claim wins, every other
// finds the lease active, and the instance records one attempt. Then each
// completes a step of its own instance concurrently with the others' and
// all of them hold.
func TestPostgresHostsRace(t *testing.T) {
	schema := dbtest.Schema("made_race")
	clock := madetest.NewClock(time.Date(2026, 6, 6, 12, 0, 0, 0, time.UTC))
	const hosts = 4
	engines := make([]*embedded.Engine, hosts)
	for i := range engines {
		engines[i] = openPostgres(t, schema, clock)
	}
	ctx := t.Context()
	if _, err := engines[0].Publish(ctx, []byte(madetest.ChangeReviewYAML)); err != nil {
		t.Fatal(err)
	}
	// A second host publishing the same definition finds it published.
	if p, err := engines[1].Publish(ctx, []byte(madetest.ChangeReviewYAML)); err != nil || p.Outcome != "already_published" {
		t.Fatalf("second host's publish: %+v, %v", p, err)
	}
	start := made.StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: "cr-race", ActorID: "o", ActorKind: made.ActorService}
	if _, err := engines[2].StartPublished(ctx, start); err != nil {
		t.Fatal(err)
	}
	if _, err := engines[3].StartPublished(ctx, start); !errors.Is(err, made.ErrExists) {
		t.Fatalf("the same instance started on another host: %v, want exists", err)
	}

	for round := range 10 {
		id := fmt.Sprintf("cr-race-%d", round)
		start.CeremonyID = id
		if _, err := engines[0].StartPublished(ctx, start); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, active := 0, 0
		for i, e := range engines {
			wg.Go(func() {
				_, err := e.Claim(ctx, made.ClaimRequest{CeremonyID: id, StepID: "draft", ActorKind: made.ActorAgent,
					LeaseOwnerID: fmt.Sprintf("host-%d", i), IdempotencyKey: fmt.Sprintf("%s/host-%d", id, i), LeaseTTL: time.Hour})
				mu.Lock()
				defer mu.Unlock()
				var me *made.Error
				switch {
				case err == nil:
					won++
				case errors.As(err, &me) && me.Kind == made.KindLeaseActive:
					active++
				default:
					t.Errorf("claim on host %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if won != 1 || active != hosts-1 {
			t.Fatalf("round %d: %d claims won and %d found the lease active, want 1 and %d", round, won, active, hosts-1)
		}
		in, err := engines[1].Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := in.Step("draft"); s.Status != made.StepInProgress || s.Attempt != 1 {
			t.Fatalf("round %d: draft is %s at attempt %d, want in progress at 1", round, s.Status, s.Attempt)
		}
	}

	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() {
			for n := range 5 {
				id := fmt.Sprintf("cr-own-%d-%d", i, n)
				req := start
				req.CeremonyID = id
				if _, err := e.StartPublished(ctx, req); err != nil {
					t.Error(err)
					return
				}
				if _, err := e.Claim(ctx, made.ClaimRequest{CeremonyID: id, StepID: "draft", ActorKind: made.ActorAgent}); err != nil {
					t.Error(err)
					return
				}
				if _, err := engines[(i+1)%hosts].Complete(ctx, made.CompleteRequest{CeremonyID: id, StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	list, err := engines[0].List(ctx)
	if err != nil || len(list) != 1+10+hosts*5 {
		t.Fatalf("list: %d instances, %v", len(list), err)
	}
}
