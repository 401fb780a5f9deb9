package activities

import (
	"context"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	madeembedded "github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

func recordFixture(t *testing.T) (*Ceremony, string) {
	t.Helper()
	ctx := context.Background()
	store, err := session.Open(t.TempDir(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e, err := madeembedded.Open(t.TempDir(), madeembedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	def, _ := ceremonies.Lookup(ceremonies.SessionRecord, ceremonies.SessionRecordVersion)
	if _, err := PublishPinned(ctx, e, def); err != nil {
		t.Fatal(err)
	}
	sid := "0b5e9c1e-2f7d-4a7b-9e58-1d2c3b4a5f60"
	turnLog(t, store, sid, "exec-1", true)
	return &Ceremony{Made: e, Store: store, Owner: "test", Log: zerolog.Nop()}, sid
}

// A turn left claimed (its end never recorded) is completed as
// interrupted at the next claim, and counted; the next turn is claimed in
// the same instance.
func TestSessionTurnInterrupted(t *testing.T) {
	ctx := context.Background()
	cer, sid := recordFixture(t)
	first, _ := cer.SessionTurn(ctx, workflows.SessionTurnInput{SessionID: sid, Workspace: "/w"})
	if !first.Record.Claimed || first.Record.Instance != "axlr-session-"+sid || first.Record.Iteration != 1 || first.Record.Note != "" {
		t.Fatalf("first claim %+v", first.Record)
	}
	next, _ := cer.SessionTurn(ctx, workflows.SessionTurnInput{SessionID: sid, Workspace: "/w", Record: first.Record})
	if !next.Record.Claimed || next.Record.Iteration != 2 || next.Record.Turns != 1 {
		t.Fatalf("the claim after an interrupted turn %+v", next.Record)
	}
	in, err := cer.Made.Get(ctx, next.Record.Instance)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := in.Step(ceremonies.SessionTurnStep); st.Status != made.StepInProgress || st.Iteration != 2 {
		t.Fatalf("turn step %+v", st)
	}
	turns, err := cer.SessionTurns(ctx, workflows.SessionTurnsInput{SessionID: sid})
	if err != nil || len(turns) != 0 {
		t.Fatalf("an interrupted turn keeps no record copy: %+v, %v", turns, err)
	}
	end, _ := cer.SessionTurnEnd(ctx, workflows.SessionTurnEndInput{SessionID: sid, Sessions: []string{sid}, ExecutionID: "exec-1",
		Record: next.Record, Status: "completed", Closing: true, Summary: "2 turns"})
	if !end.Record.Closed || end.Record.Turns != 2 || end.Record.Note != "" {
		t.Fatalf("closing %+v", end.Record)
	}
	if in, _ := cer.Made.Get(ctx, end.Record.Instance); in.CurrentState != "CLOSED" {
		t.Fatalf("closed record in %s", in.CurrentState)
	}
	// A prompt after the close opens the next part, its predecessor named.
	again, _ := cer.SessionTurn(ctx, workflows.SessionTurnInput{SessionID: sid, Workspace: "/w", Record: end.Record})
	if !again.Record.Claimed || again.Record.Instance != "axlr-session-"+sid+"-2" || again.Record.Part != 2 {
		t.Fatalf("after the close %+v", again.Record)
	}
	in, _ = cer.Made.Get(ctx, again.Record.Instance)
	if in.Context["predecessor"] != "axlr-session-"+sid {
		t.Fatalf("the next part's inputs %v", in.Context)
	}
}

// Past MADE's 1,000 turns the record's next part opens with its
// predecessor as an input, and the turn is claimed there.
func TestSessionTurnNextPart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1,000 turns")
	}
	ctx := context.Background()
	cer, sid := recordFixture(t)
	var rec workflows.SessionRecord
	for i := range ceremonies.SessionTurns {
		res, _ := cer.SessionTurn(ctx, workflows.SessionTurnInput{SessionID: sid, Workspace: "/w", Record: rec})
		if !res.Record.Claimed || res.Record.Part != 1 {
			t.Fatalf("turn %d: %+v", i+1, res.Record)
		}
		inst := res.Record.Instance
		if _, err := cer.Made.Complete(ctx, made.CompleteRequest{CeremonyID: inst, StepID: ceremonies.SessionTurnStep, ActorKind: made.ActorService,
			Status: made.StepCompleted, Output: map[string]any{"turn": i + 1}}); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		rec = res.Record
		rec.Claimed, rec.Turns = false, i+1
	}
	res, _ := cer.SessionTurn(ctx, workflows.SessionTurnInput{SessionID: sid, Workspace: "/w", Record: rec})
	want := fmt.Sprintf("axlr-session-%s-2", sid)
	if !res.Record.Claimed || res.Record.Instance != want || res.Record.Iteration != 1 || res.Record.Note != "" {
		t.Fatalf("turn 1001: %+v, want it claimed in %s", res.Record, want)
	}
	in, _ := cer.Made.Get(ctx, want)
	if in.Context["predecessor"] != "axlr-session-"+sid {
		t.Fatalf("part 2's inputs %v", in.Context)
	}
}

// A retried claim (the workflow holds none, the earlier attempt took it)
// takes the turn it claimed rather than reading it as interrupted.
func TestSessionTurnRetried(t *testing.T) {
	ctx := context.Background()
	cer, sid := recordFixture(t)
	in := workflows.SessionTurnInput{SessionID: sid, Workspace: "/w"}
	first, _ := cer.SessionTurn(ctx, in)
	again, _ := cer.SessionTurn(ctx, in)
	if !again.Record.Claimed || again.Record.Iteration != first.Record.Iteration || again.Record.Turns != 0 || again.Record.Note != "" {
		t.Fatalf("a retried claim %+v, want %+v", again.Record, first.Record)
	}
	inst, _ := cer.Made.Get(ctx, again.Record.Instance)
	if st, _ := inst.Step(ceremonies.SessionTurnStep); st.Iteration != 1 || st.Status != made.StepInProgress {
		t.Fatalf("turn step %+v, want round 1 still claimed", st)
	}
}
