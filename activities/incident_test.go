package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/workflows"
)

// TestIncidentCheck runs the incident's checks on hand-backs read from a
// real transcript and a real workspace: each rule's refusal names the
// entry and the rule, a revision records the draft's digest and keeps its
// bytes, and the publication writes the kept bytes once.
func TestIncidentCheck(t *testing.T) {
	triage := `{"summary": "s", "impact": "i", "detection": "d", "service": "checkout", `
	timeline := func(entries string) string { return `{"timeline": [` + entries + `]}` }
	analysis := func(action string) string {
		return `{"root_cause": "r", "contributing_factors": ["c"], "went_well": ["w"], "went_badly": ["b"], "actions": [` + action + `]}`
	}
	action := func(kind, owner, due, verification string) string {
		return `{"title": "t", "kind": "` + kind + `", "owner": "` + owner + `", "due": "` + due + `", "verification": "` + verification + `"}`
	}
	tests := []struct {
		name, step, args, want string
	}{
		{"severity", "triage", triage + `"severity": "sev5", "slug": "pool"}`, `severity "sev5": use one of sev1, sev2, sev3, sev4`},
		{"slug", "triage", triage + `"severity": "sev2", "slug": "Pool_Full"}`, `slug "Pool_Full": use kebab-case`},
		{"long slug", "triage", triage + `"severity": "sev2", "slug": "` + strings.Repeat("a", 65) + `"}`, "at most 64"},
		{"zone", "timeline", timeline(`{"at": "2026-11-30T14:05:00", "event": "e", "evidence": "logs/app.log"}`), "timeline[0].at \"2026-11-30T14:05:00\": want an RFC 3339 time with its zone"},
		{"order", "timeline", timeline(`{"at": "2026-11-30T14:05:00Z", "event": "e", "evidence": "x"}, {"at": "2026-11-30T14:00:00Z", "event": "e", "evidence": "x"}`), "is before timeline[0]"},
		{"no evidence", "timeline", timeline(`{"at": "2026-11-30T14:05:00Z", "event": "e", "evidence": ""}`), "timeline[0].evidence is empty"},
		{"missing path", "timeline", timeline(`{"at": "2026-11-30T14:05:00Z", "event": "e", "evidence": "logs/gone.log:3"}`), "names logs/gone.log, which is not in the workspace"},
		{"owner", "analysis", analysis(action("corrective", "", "2099-01-01", "v")), "actions[0].owner is empty"},
		{"kind", "analysis", analysis(action("fix", "team", "2099-01-01", "v")), `actions[0].kind "fix": use corrective or preventive`},
		{"due format", "analysis", analysis(action("corrective", "team", "31/01/2099", "v")), "want a date YYYY-MM-DD"},
		{"due past", "analysis", analysis(action("corrective", "team", "2026-12-01", "v")), "is not after today (2026-12-02)"},
		{"verification", "analysis", analysis(action("corrective", "team", "2099-01-01", "")), "actions[0].verification is empty"},
		{"draft path", "revise", `{"draft_path": "docs/incidents/other.draft.md"}`, "the draft is docs/incidents/pool.draft.md"},
		{"draft size", "revise", `{"draft_path": "docs/incidents/big.draft.md"}`, "at most 65536"},
		{"accepted", "timeline", timeline(`{"at": "2026-11-30T14:05:00Z", "event": "e", "evidence": "logs/app.log:1"}`), ""},
		{"draft", "revise", `{"draft_path": "docs/incidents/pool.draft.md"}`, ""},
	}
	var replies []agenttest.Reply
	for i, tt := range tests {
		replies = append(replies, agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "c" + string(rune('a'+i)), Name: workflows.StepDoneTool, Arguments: tt.args}}})
	}
	f := newFixture(t, agenttest.Queue(replies...))
	for name, content := range map[string]string{"logs/app.log": "14:05 pool full\n", "docs/incidents/pool.draft.md": "# Pool\n", "docs/incidents/big.draft.md": strings.Repeat("x", 64<<10+1)} {
		p := filepath.Join(f.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rev := f.begin("the pool filled").Revision
	a := &Ceremony{Store: f.acts.Store, Workspaces: &Workspaces{}, Drafts: t.TempDir()}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		res, err := f.request(rev)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Calls[0]
		rec, err := call[workflows.RecordToolResultInput, workflows.RecordToolResultResult](f, func(s *Session) any { return s.RecordToolResult },
			workflows.RecordToolResultInput{SessionID: f.id, Key: c.Key, CallID: c.CallID, Tool: workflows.StepDoneTool, Status: "completed", Message: "{}"})
		if err != nil {
			t.Fatal(err)
		}
		rev = rec.Revision
		slug := "pool"
		if tt.name == "draft size" {
			slug = "big"
		}
		got, err := a.IncidentCheck(context.Background(), workflows.IncidentCheckInput{SessionID: f.id, CallKey: c.Key, Root: f.root, Step: tt.step, Now: now, Slug: slug})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		switch {
		case tt.want == "" && got.Refused != "":
			t.Errorf("%s: refused: %s", tt.name, got.Refused)
		case tt.want != "" && !strings.Contains(got.Refused, tt.want):
			t.Errorf("%s: refusal %q, want %q", tt.name, got.Refused, tt.want)
		}
		if tt.name != "draft" {
			continue
		}
		digest, _ := got.Recorded["draft_digest"].(string)
		if digest != sha256Hex([]byte("# Pool\n")) || got.Recorded["draft_bytes"] != 7 {
			t.Fatalf("revision recorded %+v", got.Recorded)
		}
		kept, err := KeptDraft(a.Drafts, digest)
		if err != nil || string(kept) != "# Pool\n" {
			t.Fatalf("kept draft %q, %v", kept, err)
		}
		// The workspace's draft changes after the review; the kept bytes
		// are what is published, twice without a second file.
		if err := os.WriteFile(filepath.Join(f.root, "docs/incidents/pool.draft.md"), []byte("# changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ws, _ := a.Workspaces.Get(f.root)
		for range 2 {
			pub, err := a.publish(context.Background(), ws, workflows.IncidentCheckInput{Slug: "pool", Approved: digest, Day: "2026-12-02"})
			if err != nil || pub["path"] != "docs/incidents/2026-12-02-pool.md" {
				t.Fatalf("publish: %+v, %v", pub, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(f.root, "docs/incidents/2026-12-02-pool.md")); string(b) != "# Pool\n" {
			t.Fatalf("published %q", b)
		}
	}
}
