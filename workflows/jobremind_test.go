package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/jobs"
)

// countNotes counts the notes that hold text.
func countNotes(notes []string, text string) int {
	n := 0
	for _, s := range notes {
		if strings.Contains(s, text) {
			n++
		}
	}
	return n
}

// TestRemindedFromSavedState: a ceremony state saved before reminders
// were counted (reminded: true) reads as one reminder given.
func TestRemindedFromSavedState(t *testing.T) {
	for doc, want := range map[string]int{`{}`: 0, `{"reminded": true}`: 1, `{"reminders": 2}`: 2} {
		var c CeremonyState
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatal(err)
		}
		if got := c.reminded(); got != want {
			t.Errorf("%s: %d reminders, want %d", doc, got, want)
		}
	}
}

// TestJobRemindedThenFailed: a job's model that ends its turn four times
// with reproduce open is reminded three times (the seed's "at most three
// times"), then the step is completed as failed in MADE with the reason,
// the instance is cancelled, and the job ends failed with that reason in
// its record and in the registry's.
func TestJobRemindedThenFailed(t *testing.T) {
	model := []reply{{text: "I will look."}, {text: "Looking."}, {text: "Still looking."}, {text: "Done, I think."}, {text: "Sorry, I stopped."}}
	h := newPinnedHarness(t, jobs.Repair, model)
	rec := h.run(t, jobSettings(false))
	const reason = "ceremony_stalled: the model ended its turn 4 times with step reproduce open"
	if rec.Status != jobs.Failed || rec.Reason != reason || rec.State != "CANCELLED" || rec.Pending != nil {
		t.Fatalf("record %+v\nwant failed with %q in CANCELLED", rec, reason)
	}
	notes := h.acts.notes
	if got := countNotes(notes, "still open"); got != 3 {
		t.Fatalf("%d reminders, want 3: %q", got, notes)
	}
	if !strings.Contains(notes[len(notes)-2], "(reminder 3 of 3; then AXLR stops the ceremony)") || !strings.Contains(notes[len(notes)-1], "you ended your turn 4 times with step reproduce open") {
		t.Fatalf("notes %q", notes)
	}
	if got := len(h.acts.requests); got != len(model) {
		t.Fatalf("%d model requests, want %d", got, len(model))
	}
	p := h.pinned
	last := p.completed[len(p.completed)-1]
	if len(p.completed) != 1 || last.Step != "reproduce" || last.Status != "failed" || last.Recorded["reason"] != StoppedStalled ||
		last.Recorded["detail"] != "the model ended its turn 4 times with step reproduce open" {
		t.Fatalf("completions %+v", p.completed)
	}
	if got := h.triggers(); got != "cancel" || p.state != "CANCELLED" {
		t.Fatalf("triggers %q, MADE in %s; want the instance cancelled", got, p.state)
	}
	if r := h.reports[len(h.reports)-1]; r.Status != jobs.Failed || r.Reason != reason {
		t.Fatalf("the registry's last record %+v", r)
	}
	if h.forge.proposes != 0 {
		t.Fatalf("a failed job proposed %d times", h.forge.proposes)
	}
}
