package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestJobAutonomous: under repair.autonomous a job's session runs as
// --approve all: a write of an MCP plugin's tool runs without a card (by
// default, --approve local, it waits for the person, while the local
// write runs either way), and in both the destructive list (rm -rf) and
// the first check command still wait for the person.
func TestJobAutonomous(t *testing.T) {
	write := scriptCall{tool: "local_write", args: map[string]any{"path": "parser/parse_test.go", "content": "package parser\n", "mode": "create"}}
	note := scriptCall{tool: "notes_write", args: map[string]any{"text": "reproducing TestParse"}}
	rm := scriptCall{tool: "local_exec", args: map[string]any{"program": "rm", "args": []string{"-rf", "build"}}}
	tests := []struct {
		name       string
		autonomous bool
		asked      []string
	}{
		{name: "default", asked: []string{`notes_write {"text":"reproducing TestParse"}`, `local_exec {"args":["-rf","build"],"program":"rm"}`, "go test ./..."}},
		{name: "repair.autonomous", autonomous: true, asked: []string{`local_exec {"args":["-rf","build"],"program":"rm"}`, "go test ./..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := replies([]reply{calls(write, note), calls(rm)}, repairModel)
			h := newPinnedHarness(t, jobs.Repair, model, greenChecks)
			h.acts.alwaysAsk = []string{"rm -rf"}
			h.acts.hostTools = []HostTool{{Name: "notes_write", Canonical: "notes/write"}}
			decisions := make([]outcome, len(tt.asked))
			for i := range decisions {
				h.decideAt(time.Duration(i+1)*time.Minute, JobDecision{RequestID: fmt.Sprintf("d-%d", i), Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &decisions[i])
			}
			settings := jobSettings(true)
			settings.Autonomous = tt.autonomous
			rec := h.run(t, settings)
			for i := range decisions {
				decisions[i].mustAccept(t, "approve "+tt.asked[i])
			}
			var asked []string
			for _, r := range h.reports {
				if r.Status == jobs.AwaitingApproval && !slices.Contains(asked, r.Pending.Command) {
					asked = append(asked, r.Pending.Command)
				}
			}
			if !slices.Equal(asked, tt.asked) {
				t.Fatalf("asked the person for\n%q\nwant\n%q", asked, tt.asked)
			}
			var ran []string
			for _, c := range h.acts.ran {
				ran = append(ran, c.Tool+" "+string(c.Decision))
			}
			noteDecision := "approve"
			if tt.autonomous {
				noteDecision = "auto_approve"
			}
			if want := []string{"local_write auto_approve", "notes_write " + noteDecision, "local_exec approve"}; !slices.Equal(ran, want) {
				t.Fatalf("ran %q, want %q", ran, want)
			}
			if rec.Status != jobs.Completed {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}
