package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/activities"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/session"
)

// A session's record left open past daemon.abandon_hours is ended as
// abandoned at start, its claimed turn completed as interrupted with the
// reason; before that it is left open.
func TestEndAbandoned(t *testing.T) {
	ctx := context.Background()
	e, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	def, _ := ceremonies.Lookup(ceremonies.SessionRecord, ceremonies.SessionRecordVersion)
	if _, err := activities.PublishPinned(ctx, e, def); err != nil {
		t.Fatal(err)
	}
	store, err := session.Open(t.TempDir(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ids := []string{"0b5e9c1e-2f7d-4a7b-9e58-1d2c3b4a5f60", "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"}
	for _, id := range ids {
		l, err := store.Create(id)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Append(session.Event{Type: "session.created", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		inst := "axlr-session-" + id
		if _, err := e.StartPublished(ctx, made.StartRequest{Ceremony: def.Name, Version: def.Version, CeremonyID: inst, ActorID: "axlr",
			ActorKind: made.ActorService, Context: map[string]any{"session": id, "workspace": "/w"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Claim(ctx, made.ClaimRequest{CeremonyID: inst, StepID: "turn", ActorKind: made.ActorService, LeaseOwnerID: "axlrd-e2e", LeaseTTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	// Now, neither is idle long: both stay open.
	endAbandoned(ctx, e, store, 8*24*time.Hour, time.Now(), zerolog.Nop())
	for _, id := range ids {
		if in, _ := e.Get(ctx, "axlr-session-"+id); in.CurrentState != "OPEN" {
			t.Fatalf("a recent record was ended: %s", in.CurrentState)
		}
	}
	// A week and a day later, both are.
	endAbandoned(ctx, e, store, 8*24*time.Hour, time.Now().Add(8*24*time.Hour+time.Minute), zerolog.Nop())
	for _, id := range ids {
		in, err := e.Get(ctx, "axlr-session-"+id)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := in.Step("turn")
		if in.CurrentState != "ABANDONED" || st.Output["interrupted"] != true || !strings.HasPrefix(st.Output["summary"].(string), "abandoned: session "+id) {
			t.Fatalf("the abandoned record is %s, turn %+v", in.CurrentState, st)
		}
	}
}
