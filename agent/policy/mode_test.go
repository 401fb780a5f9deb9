package policy

import "testing"

// TestModes: each work mode's refusals, asks and tool list, enforced
// outside the model whatever the approval level.
func TestModes(t *testing.T) {
	write := func(p string) Call { return Call{Tool: "local_write", Args: map[string]Value{"path": {Text: p}}} }
	exec := Call{Tool: "local_exec", Args: map[string]Value{"program": {Text: "go"}, "args": {Text: `["test"]`}}}
	read := Call{Tool: "local_read", Args: map[string]Value{"path": {Text: "main.go"}}}
	tests := []struct {
		mode    Mode
		call    Call
		verdict Verdict
		reason  string
	}{
		{Normal, write("main.go"), Approve, "--approve all"},
		{Normal, exec, Approve, "--approve all"},
		{"", exec, Approve, "--approve all"},
		{"debug", exec, Approve, "--approve all"},
		{Review, write("README.md"), Forbid, "review mode does not change files"},
		{Review, Call{Tool: "local_edit", Args: map[string]Value{"path": {Text: "a.go"}}}, Forbid, "review mode does not change files"},
		{Review, exec, Ask, "review mode asks before every command"},
		{Review, read, Approve, "reads are approved"},
		{Writer, write("README.md"), Approve, "--approve all"},
		{Writer, write("docs/api/index.html"), Approve, "--approve all"},
		{Writer, write("notes.RST"), Approve, "--approve all"},
		{Writer, write("main.go"), Forbid, "writer mode writes only documents (.md, .mdx, .txt, .rst, or a file under docs/)"},
		{Writer, write("docs/../main.go"), Forbid, "writer mode writes only documents"},
		{Writer, write("change.diff"), Forbid, "writer mode writes only documents"},
		{Writer, Call{Tool: "local_write", Args: map[string]Value{"path": {Text: "x.md", Truncated: true}}}, Forbid, "writer mode writes only documents"},
		{Writer, exec, Ask, "writer mode asks before every command"},
		{Research, write("findings.md"), Approve, "--approve all"},
		{Research, write("cmd/main.go"), Forbid, "research mode writes only documents"},
		{Research, exec, Ask, "research mode asks before every command"},
		{Research, Call{Tool: "web_fetch"}, Approve, "--approve all"},
	}
	for _, tt := range tests {
		for _, settings := range []Settings{{}, {Autonomous: true}} {
			d := Decide(Input{Approval: ApproveAll, Settings: settings, Mode: tt.mode, Call: tt.call})
			want := tt.reason
			if settings.Autonomous && want == "--approve all" {
				want = "approvals.autonomous"
			}
			if d.Verdict != tt.verdict || (d.Reason != want && !(tt.verdict == Forbid && len(d.Reason) >= len(want) && d.Reason[:len(want)] == want)) {
				t.Errorf("%s %s %+v (autonomous %v): %+v, want %s %q", tt.mode, tt.call.Tool, tt.call.Args, settings.Autonomous, d, tt.verdict, want)
			}
		}
	}
	for _, tool := range []string{"local_write", "local_edit"} {
		if OfferedInMode(Review, tool) || !OfferedInMode(Writer, tool) || !OfferedInMode(Normal, tool) {
			t.Errorf("%s offered: review %v, writer %v", tool, OfferedInMode(Review, tool), OfferedInMode(Writer, tool))
		}
	}
	if !OfferedInMode(Review, "local_exec") || !OfferedInMode(Review, "local_read") {
		t.Error("review mode hides a tool that is not a write")
	}
	if WorkMode("Review") != Normal || WorkMode("review") != Review {
		t.Error("mode names are exact and lower case")
	}
}

// TestPluginToolNames: a rule matches a plugin tool by its alias (the
// name the model calls) or by <plugin>/<tool>.
func TestPluginToolNames(t *testing.T) {
	call := Call{Tool: "notes__search", Names: []string{"notes/search"}, Args: map[string]Value{"query": {Text: "x"}}}
	for _, tt := range []struct {
		rule    string
		offered bool
	}{
		{"notes/search", false}, {"notes/*", false}, {"notes__search", false}, {"other/*", true},
	} {
		p := &Policy{Tools: Tools{Deny: []Rule{{Name: tt.rule}}}}
		if got := Offered(p, call.Tool, call.Names...); got != tt.offered {
			t.Errorf("deny %s: offered %v", tt.rule, got)
		}
		if forbidden, _ := Forbidden(p, call); forbidden == tt.offered {
			t.Errorf("deny %s: forbidden %v", tt.rule, forbidden)
		}
	}
	allow := &Policy{Tools: Tools{Allow: []Rule{{Name: "notes/*"}}}}
	if !Offered(allow, call.Tool, call.Names...) {
		t.Error("allow notes/* does not offer notes__search")
	}
	d := Decide(Input{Settings: Settings{Allowed: []string{"notes/search"}}, Approval: ApproveNone, Call: call})
	if d.Verdict != Approve || d.Reason != "approvals.allowed names notes/search" {
		t.Errorf("approvals.allowed by the canonical name: %+v", d)
	}
	if d := Decide(Input{Approval: ApproveLocal, Call: call}); d.Verdict != Ask {
		t.Errorf("--approve local on a plugin tool: %+v", d)
	}
}
