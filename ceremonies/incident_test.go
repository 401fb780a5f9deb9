package ceremonies

import (
	"encoding/json"

	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/made/definition"
)

// TestIncidentDefinition: axlr_incident 1.0 (valid and pinned, as
// TestPins checks) has the steps the driver knows, in order, and REVIEW
// repeats twice at most.
func TestIncidentDefinition(t *testing.T) {
	d, ok := ForMode("incident")
	if !ok || d.Name != "axlr_incident" || d.Version != "1.0" || !d.Cancel || d.BriefInput != "incident_brief" {
		t.Fatalf("incident mode starts %+v", d)
	}
	y, err := d.YAML()
	if err != nil {
		t.Fatal(err)
	}
	def, err := definition.Parse(y)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range def.Steps {
		ids = append(ids, st.ID)
	}
	if got := strings.Join(ids, " "); got != "triage timeline analysis revise review present publish" {
		t.Errorf("steps %s", got)
	}
	for _, st := range def.States {
		if st.ID == "REVIEW" && (st.Repeat == nil || st.Repeat.MaxIterations != 2) {
			t.Errorf("REVIEW repeats %+v", st.Repeat)
		}
	}
	if p, ok := StepOf(d.Name, d.Version, "present"); !ok || !p.Console || p.Lease != DecideLease {
		t.Errorf("present step %+v", p)
	}
}

func TestCheckTriage(t *testing.T) {
	if err := CheckTriage("sev2", "checkout-latency-2026-11"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ severity, slug, want string }{
		{"sev5", "a", `severity "sev5": use one of sev1, sev2, sev3, sev4`},
		{"SEV1", "a", `severity "SEV1": use one of`},
		{"sev1", "Checkout_Latency", `slug "Checkout_Latency": use kebab-case`},
		{"sev1", "a--b", `slug "a--b": use kebab-case`},
		{"sev1", "-a", `slug "-a": use kebab-case`},
		{"sev1", "", `slug "": use kebab-case`},
		{"sev1", strings.Repeat("a", 65), "is 65 characters: at most 64"},
	} {
		if err := CheckTriage(tt.severity, tt.slug); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckTriage(%q, %q) = %v, want %q", tt.severity, tt.slug, err, tt.want)
		}
	}
	if err := CheckSlug(strings.Repeat("a", 64)); err != nil {
		t.Errorf("a 64-character slug: %v", err)
	}
}

func TestCheckTimeline(t *testing.T) {
	files := map[string]bool{"logs/app.log": true, "docs/alerts.md": true}
	exists := func(p string) bool { return files[p] }
	good := `[
		{"at": "2026-11-30T14:05:00Z", "event": "p99 latency alert", "evidence": "docs/alerts.md"},
		{"at": "2026-11-30T15:05:00+01:00", "event": "same minute, another zone", "evidence": "logs/app.log:120-130 shows the retries"},
		{"at": "2026-11-30T14:20:00.5Z", "event": "rollback", "evidence": "commit 3f2a1b9 reverted the pool change"},
		{"at": "2026-11-30T14:30:00Z", "event": "recovered", "evidence": "https://status.example.com/incidents/7"}
	]`
	entries, err := DecodeTimeline(json.RawMessage(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckTimeline(entries, exists); err != nil {
		t.Fatal(err)
	}
	entry := func(at, event, evidence string) TimelineEntry {
		return TimelineEntry{At: at, Event: event, Evidence: evidence}
	}
	ok := entry("2026-11-30T14:05:00Z", "alert", "docs/alerts.md")
	for _, tt := range []struct {
		name    string
		entries []TimelineEntry
		want    string
	}{
		{"none", nil, "timeline has 0 entries: give 1 to 200"},
		{"no zone", []TimelineEntry{entry("2026-11-30T14:05:00", "alert", "x")}, `timeline[0].at "2026-11-30T14:05:00": want an RFC 3339 time with its zone`},
		{"a space", []TimelineEntry{entry("2026-11-30 14:05Z", "alert", "x")}, "want an RFC 3339 time"},
		{"out of order", []TimelineEntry{ok, entry("2026-11-30T13:00:00Z", "earlier", "x")},
			"timeline[1] at 2026-11-30T13:00:00Z is before timeline[0] at 2026-11-30T14:05:00Z: put the entries in time order"},
		{"out of order across zones", []TimelineEntry{ok, entry("2026-11-30T15:00:00+01:00", "earlier", "x")}, "put the entries in time order"},
		{"no event", []TimelineEntry{entry("2026-11-30T14:05:00Z", " ", "x")}, "timeline[0].event is empty"},
		{"no evidence", []TimelineEntry{entry("2026-11-30T14:05:00Z", "alert", "")}, "timeline[0].evidence is empty: each entry needs the evidence that shows it"},
		{"missing file", []TimelineEntry{ok, entry("2026-11-30T14:06:00Z", "page", "logs/pager.log:3")},
			"timeline[1].evidence names logs/pager.log, which is not in the workspace"},
		{"absolute path", []TimelineEntry{entry("2026-11-30T14:05:00Z", "alert", "/var/log/syslog")}, "/var/log/syslog is an absolute path"},
		{"climbs out", []TimelineEntry{entry("2026-11-30T14:05:00Z", "alert", "../other/notes.md")}, "../other/notes.md is outside the workspace"},
	} {
		if err := CheckTimeline(tt.entries, exists); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	for _, raw := range []string{`{"at": "x"}`, `[{"at": "2026-11-30T14:05:00Z", "event": "e", "evidence": "x", "who": "bob"}]`, ``} {
		if _, err := DecodeTimeline(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), "timeline: want a list of {at, event, evidence}") {
			t.Errorf("DecodeTimeline(%s) = %v", raw, err)
		}
	}
}

func TestEvidencePath(t *testing.T) {
	for _, tt := range []struct {
		evidence, path string
		ok             bool
	}{
		{"logs/app.log", "logs/app.log", true},
		{"logs/app.log:120 the retry storm", "logs/app.log", true},
		{"cmd/main.go#L12", "cmd/main.go", true},
		{"./notes.md, second paragraph", "notes.md", true},
		{"deploy/", "deploy", true},
		{"the on-call's page at 14:06", "", false},
		{"commit 3f2a1b9", "", false},
		{"https://status.example.com/x.html", "", false},
		{"v1.2 release notes", "", false},
		{"", "", false},
	} {
		p, ok, err := EvidencePath(tt.evidence)
		if err != nil || p != tt.path || ok != tt.ok {
			t.Errorf("EvidencePath(%q) = %q %v %v, want %q %v", tt.evidence, p, ok, err, tt.path, tt.ok)
		}
	}
}

func TestCheckActions(t *testing.T) {
	now := time.Date(2026, 12, 2, 23, 30, 0, 0, time.FixedZone("X", -5*3600)) // 2026-12-03 in UTC
	good := `[{"title": "cap the pool", "kind": "corrective", "owner": "payments", "due": "2026-12-04", "verification": "the load test holds p99 under 300 ms"},
		{"title": "alert on pool saturation", "kind": "preventive", "owner": "sre", "due": "2027-01-15", "verification": "a drill fires the alert"}]`
	actions, err := DecodeActions(json.RawMessage(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckActions(actions, now); err != nil {
		t.Fatal(err)
	}
	a := actions[0]
	with := func(f func(*Action)) []Action { c := a; f(&c); return []Action{c} }
	for _, tt := range []struct {
		name    string
		actions []Action
		want    string
	}{
		{"none", nil, "actions has 0 entries: give 1 to 30"},
		{"no title", with(func(c *Action) { c.Title = "" }), "actions[0].title is empty"},
		{"bad kind", with(func(c *Action) { c.Kind = "detective" }), `actions[0].kind "detective": use corrective or preventive`},
		{"no owner", with(func(c *Action) { c.Owner = " " }), "actions[0].owner is empty"},
		{"no verification", with(func(c *Action) { c.Verification = "" }), "actions[0].verification is empty"},
		{"bad date", with(func(c *Action) { c.Due = "next week" }), `actions[0].due "next week": want a date YYYY-MM-DD`},
		{"today", with(func(c *Action) { c.Due = "2026-12-03" }), "actions[0].due 2026-12-03 is not after today (2026-12-03): give a date to come"},
		{"past", with(func(c *Action) { c.Due = "2025-01-01" }), "is not after today"},
	} {
		if err := CheckActions(tt.actions, now); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := DecodeActions(json.RawMessage(`[{"title": "t", "priority": "p1"}]`)); err == nil || !strings.Contains(err.Error(), `unknown field "priority"`) {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestIncidentPaths(t *testing.T) {
	day := time.Date(2026, 12, 2, 23, 30, 0, 0, time.FixedZone("X", -5*3600))
	if got := PublishedPath(day, "checkout-latency"); got != "docs/incidents/2026-12-03-checkout-latency.md" {
		t.Errorf("PublishedPath = %s", got)
	}
	if err := CheckDraft("checkout-latency", "./docs/incidents/checkout-latency.draft.md", 100); err != nil {
		t.Error(err)
	}
	for _, tt := range []struct {
		path string
		size int64
		want string
	}{
		{"docs/incidents/other.draft.md", 10, `draft_path "docs/incidents/other.draft.md": the draft is docs/incidents/checkout-latency.draft.md`},
		{"docs/incidents/checkout-latency.draft.md", MaxDraftBytes + 1, "is 65537 bytes: at most 65536 (64 KiB)"},
		{"docs/incidents/checkout-latency.draft.md", 0, "is empty"},
	} {
		if err := CheckDraft("checkout-latency", tt.path, tt.size); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckDraft(%s, %d) = %v, want %q", tt.path, tt.size, err, tt.want)
		}
	}
}

func TestParseReview(t *testing.T) {
	for _, tt := range []struct {
		answer string
		want   Review
	}{
		{`{"accepted": true, "findings": []}`, Review{Accepted: true, Findings: []string{}}},
		{"```json\n{\"accepted\": false, \"findings\": [\"The timeline omits the rollback.\", \" \"]}\n```", Review{Findings: []string{"The timeline omits the rollback."}}},
		{"```\n{\"accepted\": true, \"findings\": [\"Tighten the summary.\"]}\n```", Review{Accepted: true, Findings: []string{"Tighten the summary."}}},
	} {
		got, err := ParseReview(tt.answer)
		if err != nil || got.Accepted != tt.want.Accepted || strings.Join(got.Findings, "|") != strings.Join(tt.want.Findings, "|") {
			t.Errorf("ParseReview(%q) = %+v %v, want %+v", tt.answer, got, err, tt.want)
		}
	}
	many := `{"accepted": false, "findings": [` + strings.Repeat(`"x", `, 12) + `"x"]}`
	for _, tt := range []struct{ answer, want string }{
		{"Looks good to me!", "the review is not one JSON object {accepted, findings}"},
		{`{"accepted": "yes", "findings": []}`, "the review is not one JSON object"},
		{`{"findings": ["x"]}`, "the review gives no accepted"},
		{`{"accepted": true, "findings": [], "score": 9}`, `unknown field "score"`},
		{`{"accepted": false, "findings": []}`, "the review refuses the draft with no finding"},
		{`{"accepted": true} {"accepted": false}`, "text follows"},
		{many, "the review has 13 findings: at most 12"},
	} {
		if _, err := ParseReview(tt.answer); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseReview(%q) = %v, want %q", tt.answer, err, tt.want)
		}
	}
}

// TestReviewPrompt: the reviewer reads the draft and the three steps'
// fields, and nothing else.
func TestReviewPrompt(t *testing.T) {
	p := ReviewPrompt("docs/incidents/x.draft.md", []byte("# Checkout latency\n"), json.RawMessage(`{"severity":"sev2"}`),
		json.RawMessage(`[{"at":"2026-11-30T14:05:00Z"}]`), json.RawMessage(`{"root_cause":"pool"}`))
	for _, want := range []string{"## Triage\n\n{\"severity\":\"sev2\"}", "## Timeline\n\n[{\"at\"", "## Analysis\n\n{\"root_cause\"", "## The draft, docs/incidents/x.draft.md\n\n# Checkout latency\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
}
