package workflows

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
)

// TestWorkModes: review offers no write tool and refuses a write outside
// the model; a command asks even under --approve all; writer writes a
// document and refuses code. The model is told the mode when it changes,
// once.
func TestWorkModes(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_write", args: map[string]any{"path": "README.md", "content": "x"}}}},
		reply{calls: []scriptCall{{tool: "local_exec", args: map[string]any{"program": "go", "args": []string{"test"}}}}},
		reply{text: "Reviewed."},
		reply{calls: []scriptCall{
			{tool: "local_write", args: map[string]any{"path": "docs/notes.md", "content": "x"}},
			{tool: "local_write", args: map[string]any{"path": "docs/../main.go", "content": "x"}},
		}},
		reply{text: "Written."},
	)
	h := newHarness(t, acts)
	review := execReq("exec-1", "review the parser", policy.ApproveAll, nil)
	review.Mode = "review"
	writer := execReq("exec-2", "document it", policy.ApproveAll, nil)
	writer.Mode = "writer"
	var ex1, ex2 outcome
	var p1, p2 Progress
	h.update(UpdateExecute, "exec-1", review, &ex1)
	h.progress(&p1)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-6-0", Decision: contract.Deny}, &outcome{})
	h.update(UpdateExecute, "exec-2", writer, &ex2)
	h.progress(&p2)
	h.run()
	ex1.mustAccept(t, "review")
	ex2.mustAccept(t, "writer")
	if tools := acts.requests[0].Tools; slices.Contains(tools, "local_write") || slices.Contains(tools, "local_edit") || !slices.Contains(tools, "local_exec") {
		t.Fatalf("review offers %v", tools)
	}
	if tools := acts.requests[3].Tools; !slices.Contains(tools, "local_write") {
		t.Fatalf("writer offers %v", tools)
	}
	if r := acts.recorded[0]; r.Status != contract.CallForbidden || r.Message != "refused by the work mode: review mode does not change files" {
		t.Fatalf("review write recorded %+v", r)
	}
	if r := p1.Result; r == nil || r.Status != contract.NeedsDecision || r.Pending.Tool != "local_exec" {
		t.Fatalf("review command: %+v", r)
	}
	if !slices.ContainsFunc(p1.Events, func(e contract.Event) bool {
		return e.Type == contract.EventDecisionRequired && e.Reason == "review mode asks before every command"
	}) {
		t.Fatalf("events %+v", p1.Events)
	}
	last := acts.recorded[len(acts.recorded)-1]
	if last.Status != contract.CallForbidden || !strings.HasPrefix(last.Message, "refused by the work mode: writer mode writes only documents") {
		t.Fatalf("writer code write recorded %+v", last)
	}
	if len(acts.ran) == 0 || acts.ran[len(acts.ran)-1].Tool != "local_write" {
		t.Fatalf("writer document write did not run: %+v", acts.ran)
	}
	notes := strings.Join(acts.notes, "\n")
	if strings.Count(notes, "Work mode review") != 1 || strings.Count(notes, "Work mode writer") != 1 {
		t.Fatalf("notes %q", acts.notes)
	}
}

// TestStreamLines: streamed text is cut into its lines, each with its
// newline, none over MaxStreamLine bytes and never inside a character;
// joined, the lines are the text.
func TestStreamLines(t *testing.T) {
	long := strings.Repeat("é", MaxStreamLine) // 2 bytes each
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"one", 1}, {"one\n", 1}, {"one\ntwo", 2}, {"a\n\nb\n", 3}, {long + "\n", 3},
	} {
		got := streamLines(tt.in)
		if len(got) != tt.want || strings.Join(got, "") != tt.in {
			t.Errorf("streamLines(%.20q) = %d lines, want %d, joined equal %v", tt.in, len(got), tt.want, strings.Join(got, "") == tt.in)
		}
		for _, l := range got {
			if len(l) > MaxStreamLine || !utf8.ValidString(l) {
				t.Errorf("line of %d bytes, valid %v", len(l), utf8.ValidString(l))
			}
		}
	}
}
