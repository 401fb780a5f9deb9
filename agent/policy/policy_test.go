package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func call(tool string, args map[string]any) Call {
	c := Call{Tool: tool, Args: map[string]Value{}}
	for k, v := range args {
		if s, ok := v.(string); ok {
			c.Args[k] = Value{Text: s}
			continue
		}
		b, _ := json.Marshal(v)
		c.Args[k] = Value{Text: string(b)}
	}
	return c
}

var defaultAsk = []string{"git push --force", "git reset --hard", "rm -rf"}

// TestDecideMatrix runs every level × approval level × call kind, with and
// without the destructive list, and checks each verdict against the
// contract's rules written out independently below.
func TestDecideMatrix(t *testing.T) {
	calls := map[string]Call{
		"read":        call("local_read", map[string]any{"path": "README.md"}),
		"write-doc":   call("local_write", map[string]any{"path": "docs/plan.md", "content": "x", "mode": "create"}),
		"write-code":  call("local_edit", map[string]any{"path": "main.go", "old_text": "a", "new_text": "b"}),
		"exec":        call("local_exec", map[string]any{"program": "go", "args": []string{"test", "./..."}}),
		"force-push":  call("local_exec", map[string]any{"program": "git", "args": []string{"push", "origin", "main", "--force"}}),
		"mcp":         call("observability/query_logs", map[string]any{"q": "error"}),
		"host-reader": call("axlr_history", nil),
	}
	levels := []Level{"", Observe, Propose, ActWithApproval, ActWithinPolicy}
	approvals := []Approval{ApproveNone, ApproveLocal, ApproveAll}
	for _, lists := range [][]string{nil, defaultAsk} {
		for _, level := range levels {
			for _, appr := range approvals {
				for name, c := range calls {
					var p *Policy
					if level != "" {
						p = &Policy{Level: level}
					}
					got := Decide(Input{Policy: p, Approval: appr, Settings: Settings{AlwaysAsk: lists}, Call: c})
					want := expected(level, appr, lists != nil, name)
					t.Run(fmt.Sprintf("%s/%s/%s/ask=%v", orNone(level), appr, name, lists != nil), func(t *testing.T) {
						if got.Verdict != want {
							t.Fatalf("verdict %s (%s), want %s", got.Verdict, got.Reason, want)
						}
						if got.Reason == "" {
							t.Fatal("a decision without a reason")
						}
					})
				}
			}
		}
	}
}

func orNone(l Level) string {
	if l == "" {
		return "no-policy"
	}
	return string(l)
}

// expected states the contract's rules directly.
func expected(level Level, appr Approval, destructive bool, name string) Verdict {
	isRead := name == "read" || name == "host-reader"
	isWrite := name == "write-doc" || name == "write-code"
	// 1. The policy's level forbids.
	switch level {
	case Observe:
		if !isRead {
			return Forbid
		}
	case Propose:
		if !isRead && name != "write-doc" {
			return Forbid
		}
	}
	// 2. The destructive list asks under every level.
	if destructive && name == "force-push" {
		return Ask
	}
	// 3. act-with-approval asks for everything that is not a read.
	if level == ActWithApproval && !isRead {
		return Ask
	}
	if isRead {
		return Approve
	}
	switch appr {
	case ApproveAll:
		return Approve
	case ApproveLocal:
		if isWrite || name == "exec" || name == "force-push" {
			return Approve
		}
	}
	return Ask
}

func TestDecideSettings(t *testing.T) {
	exec := call("local_exec", map[string]any{"program": "make"})
	tests := []struct {
		name     string
		settings Settings
		policy   *Policy
		want     Verdict
	}{
		{"autonomous approves under none", Settings{Autonomous: true}, nil, Approve},
		{"allowed names the tool", Settings{Allowed: []string{"local_exec"}}, nil, Approve},
		{"allowed names another tool", Settings{Allowed: []string{"local_write"}}, nil, Ask},
		{"destructive beats autonomous", Settings{Autonomous: true, AlwaysAsk: []string{"make"}}, nil, Approve},
		{"a tool name in the destructive list", Settings{Autonomous: true, AlwaysAsk: []string{"local_exec"}}, nil, Ask},
		{"act-with-approval beats autonomous", Settings{Autonomous: true}, &Policy{Level: ActWithApproval}, Ask},
		{"policy forbids beats allowed", Settings{Allowed: []string{"local_exec"}}, &Policy{Tools: Tools{Deny: []Rule{{Name: "local_exec"}}}}, Forbid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Input{Policy: tt.policy, Approval: ApproveNone, Settings: tt.settings, Call: exec})
			if got.Verdict != tt.want {
				t.Fatalf("verdict %s (%s), want %s", got.Verdict, got.Reason, tt.want)
			}
		})
	}
}

func TestRules(t *testing.T) {
	p, err := Parse([]byte(`{"policy": {"level": "act-within-policy", "tools": {
		"allow": [{"name": "observability.query_logs"}, {"name": "local_read", "arguments": {"path": "logs/**"}},
		          {"name": "local_exec", "arguments": {"program": "kubectl", "args": "*get*"}}, {"name": "local_*"}],
		"deny": [{"name": "local_exec", "arguments": {"program": "kubectl", "args": "*delete*"}}, {"name": "local_write"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		call      Call
		forbidden bool
		reason    string
	}{
		{"allowed by name", call("observability.query_logs", nil), false, ""},
		{"allowed by glob", call("local_list", nil), false, ""},
		{"not in the allow list", call("axlr_history", nil), true, "not allowed by the allow list"},
		{"deny by name wins over allow glob", call("local_write", map[string]any{"path": "a"}), true, "denied by a rule for local_write"},
		{"deny with arguments", call("local_exec", map[string]any{"program": "kubectl", "args": []string{"delete", "pod"}}), true, `program="kubectl"`},
		{"allow with arguments", call("local_exec", map[string]any{"program": "kubectl", "args": []string{"get", "pods"}}), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forbidden, reason := Forbidden(p, tt.call)
			if forbidden != tt.forbidden || !strings.Contains(reason, tt.reason) {
				t.Fatalf("Forbidden = %v %q, want %v containing %q", forbidden, reason, tt.forbidden, tt.reason)
			}
		})
	}
	if Offered(p, "local_write") {
		t.Error("a tool denied by name is offered")
	}
	if !Offered(p, "local_exec") {
		t.Error("a tool denied only with arguments is not offered")
	}
	if Offered(p, "axlr_history") {
		t.Error("a tool outside the allow list is offered")
	}
	if Offered(&Policy{Level: Observe}, "local_exec") || !Offered(&Policy{Level: Observe}, "local_read") {
		t.Error("observe offers what it forbids, or hides a read")
	}
	if !Offered(&Policy{Level: Propose}, "local_write") || Offered(&Policy{Level: Propose}, "local_exec") {
		t.Error("propose offers exec or hides document writes")
	}
}

func TestTruncatedArguments(t *testing.T) {
	allow := &Policy{Tools: Tools{Allow: []Rule{{Name: "local_write", Arguments: map[string]string{"content": "*"}}}}}
	deny := &Policy{Tools: Tools{Deny: []Rule{{Name: "local_write", Arguments: map[string]string{"content": "*secret*"}}}}}
	c := Call{Tool: "local_write", Args: map[string]Value{"path": {Text: "a.md"}, "content": {Text: "cut", Truncated: true}}}
	if f, reason := Forbidden(allow, c); !f || !strings.Contains(reason, "too long to check") {
		t.Errorf("an allow rule matched a cut argument: %v %q", f, reason)
	}
	if f, _ := Forbidden(deny, c); !f {
		t.Error("a deny rule did not match a cut argument")
	}
	if f, _ := Forbidden(&Policy{Level: Propose}, Call{Tool: "local_write", Args: map[string]Value{"path": {Text: "docs/x", Truncated: true}}}); !f {
		t.Error("propose allowed a write whose path it could not read")
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          bool
	}{
		{"local_*", "local_read", true},
		{"local_*", "axlr_history", false},
		{"observability/*", "observability/query_logs", true},
		{"observability/*", "observability/a/b", false},
		{"logs/**", "logs/a/b/c.txt", true},
		{"logs/**", "logs", false},
		{"logs/*", "logs/a/b", false},
		{"**", "a/b/c", true},
		{"?.go", "a.go", true},
		{"?.go", "/.go", false},
		{"*get*", `["get","pods"]`, true},
		{"*get*", `["delete"]`, false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"", "", true},
		{"*", "", true},
		{"a*b*c*d*e*f*g*h", strings.Repeat("a", 2000), false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.text); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.text, got, tt.want)
		}
	}
}

func TestDestructive(t *testing.T) {
	tests := []struct {
		name string
		call Call
		want string
	}{
		{"force push", call("local_exec", map[string]any{"program": "git", "args": []string{"push", "--force", "origin"}}), "git push --force"},
		{"flag order free", call("local_exec", map[string]any{"program": "/usr/bin/git", "args": []string{"push", "origin", "main", "--force"}}), "git push --force"},
		{"plain push", call("local_exec", map[string]any{"program": "git", "args": []string{"push", "origin"}}), ""},
		{"inside sh -c", call("local_exec", map[string]any{"program": "sh", "args": []string{"-c", "cd x && git reset --hard HEAD~1"}}), "git reset --hard"},
		{"inside bash -lc with env", call("local_exec", map[string]any{"program": "bash", "args": []string{"-lc", "FOO=1 rm -rf build"}}), "rm -rf"},
		{"quoted words", call("local_exec", map[string]any{"program": "sh", "args": []string{"-c", `git push "--force"`}}), "git push --force"},
		{"not a shell", call("local_exec", map[string]any{"program": "echo", "args": []string{"-c", "rm -rf /"}}), ""},
		{"unreadable args", Call{Tool: "local_exec", Args: map[string]Value{"program": {Text: "git"}, "args": {Text: "x", Truncated: true}}}, "git push --force"},
		{"tool name entry", call("local_write", map[string]any{"path": "a"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Destructive(defaultAsk, tt.call)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Destructive = %q %v, want %q", got, ok, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, doc, err string
	}{
		{"wrapped", `{"policy":{"level":"observe"}}`, ""},
		{"bare", `{"level":"propose","tools":{"deny":[{"name":"local_exec"}]}}`, ""},
		{"unknown field", `{"level":"observe","budget":{}}`, `unknown field "budget"`},
		{"unknown field in rule", `{"tools":{"allow":[{"name":"x","args":{}}]}}`, `unknown field "args"`},
		{"wrapper with extras", `{"policy":{},"correlation":{}}`, "beside"},
		{"unknown level", `{"level":"yolo"}`, `unknown level "yolo"`},
		{"rule without name", `{"tools":{"deny":[{"arguments":{"a":"b"}}]}}`, "tools.deny[0] has no name"},
		{"not json", `level: observe`, "not a JSON object"},
		{"two documents", `{"level":"observe"} {}`, "after top-level value"},
		{"triple star", `{"tools":{"allow":[{"name":"***"}]}}`, "***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if tt.err == "" && err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Parse error %v, want one containing %q", err, tt.err)
			}
		})
	}
	if _, err := Parse([]byte(`{"level":"observe","x":"` + strings.Repeat("a", MaxSize) + `"}`)); err == nil || !strings.Contains(err.Error(), "64 KiB limit") {
		t.Fatalf("oversized policy: %v", err)
	}
}

func TestDocument(t *testing.T) {
	for p, want := range map[string]bool{
		"plan.md": true, "notes.TXT": true, "docs/x.go": true, "a/b.patch": true, "c.diff": true,
		"main.go": false, "../x.md": false, "/etc/x.md": false, "docs": false,
	} {
		if got := Document(p); got != want {
			t.Errorf("Document(%q) = %v, want %v", p, got, want)
		}
	}
}
