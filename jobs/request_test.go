package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// session is a transcript's calls: c1 and c2 are the same filesystem
// failure of local_read, c3 a program that exited 1, c4 and c5 successes,
// c6 a host error, c7 a plugin's call.
var session = []CallOutcome{
	{CallID: "c1", Tool: "local_read", Status: CallFailed, Code: "filesystem_error", Message: "read a.go: input/output error"},
	{CallID: "c2", Tool: "local_read", Status: CallFailed, Code: "filesystem_error", Message: "read a.go: input/output error"},
	{CallID: "c3", Tool: "local_exec", Status: CallCompleted, ExitCode: exit(1)},
	{CallID: "c4", Tool: "axlr_history", Status: CallCompleted},
	{CallID: "c5", Tool: "axlr_history", Status: CallCompleted},
	{CallID: "c6", Tool: "axlr_logs", Status: CallFailed, Code: "internal_error", Message: "the log store is closed"},
	{CallID: "c7", Tool: "gh__issue_view", Status: CallFailed, Code: "internal_error", Plugin: true},
}

const sessionRecent = "Recent citable calls of this session, newest first: c6 axlr_logs (failed: internal_error); c5 axlr_history (completed); c4 axlr_history (completed); c3 local_exec (completed, exited 1); c2 local_read (failed: filesystem_error)."

var ctx = RequestContext{Session: "origin", Mode: "normal", Repository: repo, Build: build}

// args is a request's arguments with fields replaced or, given nil, left out.
func args(t *testing.T, change map[string]any) json.RawMessage {
	t.Helper()
	a := map[string]any{
		"description": "local_read fails with an I/O error on a readable file",
		"expected":    "the file's text",
		"observed":    "filesystem_error twice",
		"evidence":    "read a.go: input/output error\ncat a.go prints it",
		"tool_calls":  []string{"c1", "c2"},
	}
	for k, v := range change {
		if v == nil {
			delete(a, k)
		} else {
			a[k] = v
		}
	}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type refusalCase struct {
	name   string
	ctx    *RequestContext
	raw    string
	change map[string]any
	calls  []CallOutcome
	code   RefusalCode
	call   string
	reason string
}

func checkRefusals(t *testing.T, validate func(json.RawMessage, []CallOutcome, RequestContext) (Validated, error), tests []refusalCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ctx
			if tt.ctx != nil {
				c = *tt.ctx
			}
			raw := json.RawMessage(tt.raw)
			if tt.raw == "" {
				raw = args(t, tt.change)
			}
			calls := session
			if tt.calls != nil {
				calls = tt.calls
			}
			v, err := validate(raw, calls, c)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if v.Signature == "" || v.Brief == "" || v.Admission.Signature != v.Signature {
					t.Fatalf("validated %+v", v)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error %v (%T), want a *Refusal", err, err)
			}
			if r.Code != tt.code || r.Call != tt.call || r.Reason != tt.reason {
				t.Fatalf("refusal %s call %q:\n%s\nwant %s call %q:\n%s", r.Code, r.Call, r.Reason, tt.code, tt.call, tt.reason)
			}
			want := tt.reason + " " + recentText(Citable(calls))
			if err.Error() != want {
				t.Fatalf("error\n%s\nwant\n%s", err, want)
			}
		})
	}
}

func TestValidateRepairRequest(t *testing.T) {
	repairSession := RequestContext{Session: "s", Mode: "repair", Repository: repo, Build: build}
	improveSession := RequestContext{Session: "s", Mode: "improve", Repository: repo, Build: build}
	clone := RequestContext{Session: "s", Mode: "normal", Clone: true, Repository: repo, Build: build}
	uncertain := func(msg string) []CallOutcome {
		return append([]CallOutcome{
			{CallID: "u1", Tool: "local_write", Status: CallUncertain, Message: msg},
			{CallID: "u2", Tool: "local_write", Status: CallUncertain, Message: msg},
		}, session...)
	}
	one := func(c CallOutcome) []CallOutcome { return append([]CallOutcome{c}, session...) }
	tests := []refusalCase{
		{name: "accepted: a failure that recurs"},
		{name: "accepted: one cited failure that recurs uncited", change: map[string]any{"tool_calls": []string{"c2"}}},
		{name: "accepted: two wrong results", change: map[string]any{"tool_calls": []string{"c4", "c5"}}},
		{name: "accepted: host errors that recur", calls: append(session, CallOutcome{CallID: "c8", Tool: "axlr_logs", Status: CallFailed, Message: "the log store is closed"}),
			change: map[string]any{"tool_calls": []string{"c6"}}},
		{name: "accepted: evidence as an array", change: map[string]any{"evidence": []string{"one", "two"}}},
		{name: "accepted: unreadable outcomes", calls: append(session, CallOutcome{CallID: "x1", Tool: "local_list", Status: CallUnreadable}, CallOutcome{CallID: "x2", Tool: "local_list", Status: CallUnreadable}),
			change: map[string]any{"tool_calls": []string{"x1"}}},
		{name: "accepted: effect unknown", calls: uncertain("no result: an earlier attempt of this call was interrupted after it may have run"),
			change: map[string]any{"tool_calls": []string{"u1", "u2"}}},
		{name: "accepted: a status axlr does not know is its own failure", calls: append(session, CallOutcome{CallID: "n1", Tool: "local_list", Status: "exploded"}, CallOutcome{CallID: "n2", Tool: "local_list", Status: "exploded"}),
			change: map[string]any{"tool_calls": []string{"n1", "n2"}}},
		{name: "accepted: web tools are axlr's", calls: append(session, CallOutcome{CallID: "w1", Tool: "web_fetch", Status: CallFailed, Message: "reduce the page: unexpected EOF"}, CallOutcome{CallID: "w2", Tool: "web_fetch", Status: CallFailed, Message: "reduce the page: unexpected EOF"}),
			change: map[string]any{"tool_calls": []string{"w1", "w2"}}},

		{name: "repair session", ctx: &repairSession, code: RefuseMode,
			reason: "a repair session cannot request another repair; finish this one and report the defect to the person"},
		{name: "improvement session", ctx: &improveSession, code: RefuseMode,
			reason: "an improvement session cannot request a repair; finish this one and report the defect to the person"},
		{name: "in a clone", ctx: &clone, code: RefuseMode,
			reason: "this session works in a job's clone; a repair cannot start from it"},

		{name: "not JSON", raw: `{"description": "x", "evidence": - broken}`, code: RefuseArguments,
			reason: `the arguments of axlr_request_repair are not JSON: invalid character ' ' in numeric literal at byte 35, near " \"x\", \"evidence\": - broken}"`},
		{name: "not an object", raw: `["x"]`, code: RefuseArguments,
			reason: "arguments of axlr_request_repair must be one JSON object"},
		{name: "unknown field", change: map[string]any{"severity": "high"}, code: RefuseArguments,
			reason: `unknown argument "severity" for axlr_request_repair; it takes description, expected, observed, evidence, tool_calls`},
		{name: "missing field", change: map[string]any{"observed": nil}, code: RefuseArguments,
			reason: "axlr_request_repair needs argument observed"},
		{name: "wrong type", change: map[string]any{"tool_calls": "c1"}, code: RefuseArguments,
			reason: "argument tool_calls of axlr_request_repair must be an array of strings, not string"},
		{name: "evidence of another type", change: map[string]any{"evidence": 3}, code: RefuseArguments,
			reason: "arguments of axlr_request_repair: evidence must be a string with one item per line, or an array of strings"},
		{name: "short description", change: map[string]any{"description": "  read fails ñ  "}, code: RefuseArguments,
			reason: "description needs at least 20 characters (it has 12): say which axlr operation fails and how"},
		{name: "description of 20 characters", change: map[string]any{"description": "local_read fails ééé"}},
		{name: "long text", change: map[string]any{"expected": strings.Repeat("x", MaxText+1)}, code: RefuseArguments,
			reason: "description, expected and observed take at most 2000 bytes each (expected has 2001)"},
		{name: "empty observed", change: map[string]any{"observed": " "}, code: RefuseArguments,
			reason: "expected and observed are required: what axlr should have done and what it did"},
		{name: "no evidence", change: map[string]any{"evidence": "\n \n"}, code: RefuseArguments,
			reason: "evidence needs 1 to 8 concrete items, one per line (it has 0): outputs, messages or file paths you observed"},
		{name: "nine items", change: map[string]any{"evidence": strings.Repeat("item\n", 9)}, code: RefuseArguments,
			reason: "evidence needs 1 to 8 concrete items, one per line (it has 9): outputs, messages or file paths you observed"},
		{name: "eight items", change: map[string]any{"evidence": strings.Repeat("item\n", 8)}},
		{name: "an empty item", change: map[string]any{"evidence": []string{"a", " "}}, code: RefuseArguments,
			reason: "evidence item 2 is empty"},
		{name: "a long item", change: map[string]any{"evidence": []string{strings.Repeat("x", MaxEvidenceItem+1)}}, code: RefuseArguments,
			reason: "evidence items take at most 1000 bytes each (item 1 has 1001)"},
		{name: "no calls", change: map[string]any{"tool_calls": []string{}}, code: RefuseArguments,
			reason: "tool_calls needs 1 to 8 IDs of calls from this session that show the failure (it has 0)"},
		{name: "nine calls", change: map[string]any{"tool_calls": strings.Split("a b c d e f g h i", " ")}, code: RefuseArguments,
			reason: "tool_calls needs 1 to 8 IDs of calls from this session that show the failure (it has 9)"},
		{name: "a call twice", change: map[string]any{"tool_calls": []string{"c1", " c1"}}, code: RefuseArguments,
			reason: "tool_calls cites c1 twice: cite distinct calls"},
		{name: "an empty call", change: map[string]any{"tool_calls": []string{"c1", ""}}, code: RefuseArguments,
			reason: "tool_calls item 2 is empty: cite call IDs"},

		{name: "external cause in the description", change: map[string]any{"description": "local_read fails: OpenRouter returned an error"}, code: RefuseExternal,
			reason: `the request names an external cause ("openrouter"): a provider, credential, permission or network problem is not a defect of axlr; resolve it or tell the person`},
		{name: "external cause in the evidence", change: map[string]any{"evidence": "HTTP 403 from the server"}, code: RefuseExternal,
			reason: `the request names an external cause ("403"): a provider, credential, permission or network problem is not a defect of axlr; resolve it or tell the person`},
		{name: "the earliest external cause", change: map[string]any{"observed": "Permission denied, then rate limited"}, code: RefuseExternal,
			reason: `the request names an external cause ("permission denied"): a provider, credential, permission or network problem is not a defect of axlr; resolve it or tell the person`},

		{name: "a call not in the session", change: map[string]any{"tool_calls": []string{"c1", "tui-tool"}}, code: RefuseCall, call: "tui-tool",
			reason: "call tui-tool is not in this session; cite the IDs of calls you made here"},
		{name: "a call without an outcome", calls: one(CallOutcome{CallID: "p", Tool: "local_exec", Status: CallPending}),
			change: map[string]any{"tool_calls": []string{"p"}}, code: RefuseCall, call: "p",
			reason: "call p has no outcome yet; cite calls that have ended"},
		{name: "a plugin's call", change: map[string]any{"tool_calls": []string{"c7"}}, code: RefuseCall, call: "c7",
			reason: "call c7 is gh__issue_view, an MCP plugin tool: its failures belong to that server, not to axlr"},
		{name: "a request tool's call", calls: one(CallOutcome{CallID: "r", Tool: ToolRequestRepair, Status: CallFailed, Message: "duplicate"}),
			change: map[string]any{"tool_calls": []string{"r"}}, code: RefuseCall, call: "r",
			reason: "call r is axlr_request_repair, a request of its own: its refusals are answers, not failures"},
		{name: "a tool that is not axlr's", calls: one(CallOutcome{CallID: "o", Tool: "shell", Status: CallFailed}),
			change: map[string]any{"tool_calls": []string{"o"}}, code: RefuseCall, call: "o",
			reason: "call o is shell, not a tool of axlr's own (local_*, axlr_* or web_*)"},
		{name: "denied", calls: one(CallOutcome{CallID: "d", Tool: "local_exec", Status: CallDenied}),
			change: map[string]any{"tool_calls": []string{"d"}}, code: RefuseCall, call: "d",
			reason: "call d was denied (by the person, the policy or the mode); a denial is not a defect"},
		{name: "forbidden", calls: one(CallOutcome{CallID: "f", Tool: "local_exec", Status: CallForbidden}),
			change: map[string]any{"tool_calls": []string{"f"}}, code: RefuseCall, call: "f",
			reason: "call f was denied (by the person, the policy or the mode); a denial is not a defect"},
		{name: "cancelled", calls: one(CallOutcome{CallID: "x", Tool: "local_exec", Status: CallCancelled}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: "call x was cancelled; that is not proof of a defect"},
		{name: "timed out", calls: one(CallOutcome{CallID: "x", Tool: "local_exec", Status: CallTimedOut, Code: "timeout"}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: "call x timed out; that is not proof of a defect"},
		{name: "rejected", calls: one(CallOutcome{CallID: "x", Tool: "local_read", Status: CallRejected, Code: "invalid_path", Message: "path ../x\nescapes the workspace"}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: "call x was rejected by axlr (invalid_path: path ../x escapes the workspace); correct the arguments instead of repairing axlr"},
		{name: "a program that exited nonzero", change: map[string]any{"tool_calls": []string{"c3"}}, code: RefuseCall, call: "c3",
			reason: "call c3 ran a program that exited 1: a failure of that program or of the project, not of axlr"},
		{name: "a failure of the workspace", calls: one(CallOutcome{CallID: "x", Tool: "local_read", Status: CallFailed, Code: "not_found", Message: "no file a.go"}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: "call x failed with not_found (no file a.go): the workspace, the program or a permission, not axlr"},
		{name: "a failed start", calls: one(CallOutcome{CallID: "x", Tool: "local_exec", Status: CallFailed, Code: "start_failed", Message: "exec: gox: not found"}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: "call x failed with start_failed (exec: gox: not found): the workspace, the program or a permission, not axlr"},
		{name: "a failure for an external cause", calls: one(CallOutcome{CallID: "x", Tool: "axlr_recall", Status: CallFailed, Message: "dial tcp: connection refused"}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: `call x failed for an external cause ("connection refused"), not a defect of axlr`},
		{name: "a host error about the arguments", calls: one(CallOutcome{CallID: "x", Tool: "axlr_history", Status: CallFailed, Message: "limit must be positive"}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: "call x was refused for its arguments (limit must be positive); correct the call instead of repairing axlr"},
		{name: "a host error with an argument code", calls: one(CallOutcome{CallID: "x", Tool: "axlr_call_tool", Status: CallFailed, Code: "invalid_request", Message: "no such thing"}),
			change: map[string]any{"tool_calls": []string{"x"}}, code: RefuseCall, call: "x",
			reason: "call x was refused for its arguments (no such thing); correct the call instead of repairing axlr"},
		{name: "effect unknown after a cancel", calls: uncertain("context canceled"),
			change: map[string]any{"tool_calls": []string{"u1"}}, code: RefuseCall, call: "u1",
			reason: "call u1 was cancelled or ran out of time; that is not proof of a defect"},
		{name: "effect unknown for an external cause", calls: uncertain("write: EACCES"),
			change: map[string]any{"tool_calls": []string{"u1"}}, code: RefuseCall, call: "u1",
			reason: `call u1 failed for an external cause ("eacces"), not a defect of axlr`},

		{name: "an isolated failure", change: map[string]any{"tool_calls": []string{"c6"}}, code: RefuseIsolated,
			reason: "an isolated failure is not evidence of a defect: repeat the operation once; if it fails the same way, cite both calls (a wrong result needs two cited calls)"},
		{name: "one wrong result", change: map[string]any{"tool_calls": []string{"c4"}}, code: RefuseIsolated,
			reason: "an isolated failure is not evidence of a defect: repeat the operation once; if it fails the same way, cite both calls (a wrong result needs two cited calls)"},
		{name: "the same tool failing two ways", calls: append(session, CallOutcome{CallID: "c8", Tool: "axlr_logs", Status: CallUnreadable}),
			change: map[string]any{"tool_calls": []string{"c6", "c8"}}, code: RefuseIsolated,
			reason: "an isolated failure is not evidence of a defect: repeat the operation once; if it fails the same way, cite both calls (a wrong result needs two cited calls)"},
	}
	checkRefusals(t, ValidateRepairRequest, tests)
}

func TestValidateImprovementRequest(t *testing.T) {
	mode := func(m string) *RequestContext { c := ctx; c.Mode = m; return &c }
	clone := ctx
	clone.Clone = true
	one := func(c CallOutcome) []CallOutcome { return append([]CallOutcome{c}, session...) }
	tests := []refusalCase{
		{name: "accepted"},
		{name: "accepted: a program that exited nonzero and a timeout count", calls: one(CallOutcome{CallID: "t", Tool: "local_exec", Status: CallTimedOut}),
			change: map[string]any{"tool_calls": []string{"c3", "t"}}},
		{name: "accepted: successes", change: map[string]any{"tool_calls": []string{"c4", "c5"}}},
		{name: "accepted from a review session", ctx: mode("review")},
		{name: "accepted from a debug session", ctx: mode("debug")},

		{name: "repair session", ctx: mode("repair"), code: RefuseMode,
			reason: "a repair session cannot request an improvement; finish this one and tell the person what you would improve"},
		{name: "improvement session", ctx: mode("improve"), code: RefuseMode,
			reason: "an improvement session cannot request another improvement; finish this one and tell the person what you would improve"},
		{name: "plan session", ctx: mode("plan"), code: RefuseMode,
			reason: "plan and task sessions cannot request an improvement; leave a note for the person instead"},
		{name: "task session", ctx: mode("task"), code: RefuseMode,
			reason: "plan and task sessions cannot request an improvement; leave a note for the person instead"},
		{name: "in a clone", ctx: &clone, code: RefuseMode,
			reason: "this session works in a job's clone; an improvement cannot start from it"},

		{name: "short description", change: map[string]any{"description": "make it better"}, code: RefuseArguments,
			reason: "description needs at least 20 characters (it has 14): say what axlr should do better"},
		{name: "empty expected", change: map[string]any{"expected": ""}, code: RefuseArguments,
			reason: "expected and observed are required: what axlr should let you do and what you had to do instead"},
		{name: "one call", change: map[string]any{"tool_calls": []string{"c1"}}, code: RefuseArguments,
			reason: "tool_calls needs 2 to 8 IDs of calls from this session that show the friction (it has 1)"},
		{name: "unknown field", change: map[string]any{"why": "x"}, code: RefuseArguments,
			reason: `unknown argument "why" for axlr_request_improvement; it takes description, expected, observed, evidence, tool_calls`},
		{name: "external cause", change: map[string]any{"evidence": "needs an API key"}, code: RefuseExternal,
			reason: `the request names an external cause ("api key"): a provider, credential, permission or network problem is not something axlr can improve; resolve it or tell the person`},

		{name: "a call not in the session", change: map[string]any{"tool_calls": []string{"c1", "zz"}}, code: RefuseCall, call: "zz",
			reason: "call zz is not in this session; cite the IDs of calls you made here"},
		{name: "a plugin's call", change: map[string]any{"tool_calls": []string{"c1", "c7"}}, code: RefuseCall, call: "c7",
			reason: "call c7 is gh__issue_view, an MCP plugin tool: improving it belongs to that server, not to axlr"},
		{name: "a call without an outcome", calls: one(CallOutcome{CallID: "p", Tool: "local_exec"}),
			change: map[string]any{"tool_calls": []string{"c1", "p"}}, code: RefuseCall, call: "p",
			reason: "call p has no outcome yet; cite calls that have ended"},
		{name: "denied", calls: one(CallOutcome{CallID: "d", Tool: "local_exec", Status: CallDenied}),
			change: map[string]any{"tool_calls": []string{"c1", "d"}}, code: RefuseCall, call: "d",
			reason: "call d was denied (by the person, the policy or the mode); a denial is not friction of axlr"},
		{name: "cancelled", calls: one(CallOutcome{CallID: "x", Tool: "local_exec", Status: CallCancelled}),
			change: map[string]any{"tool_calls": []string{"c1", "x"}}, code: RefuseCall, call: "x",
			reason: "call x was cancelled; that is not friction of axlr"},
		{name: "a request tool's call", calls: one(CallOutcome{CallID: "r", Tool: ToolRepairStatus, Status: CallCompleted}),
			change: map[string]any{"tool_calls": []string{"c1", "r"}}, code: RefuseCall, call: "r",
			reason: "call r is axlr_repair_status, a request of its own: its refusals are answers, not failures"},
	}
	checkRefusals(t, ValidateImprovementRequest, tests)
}

func TestValidatedRepair(t *testing.T) {
	v, err := ValidateRepairRequest(args(t, map[string]any{"tool_calls": []string{" c2", "c1"}}), session, ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantFailures := []ToolFailure{{"local_read", ClassRuntimeFailure}}
	if !reflect.DeepEqual(v.Failures, wantFailures) || v.Kind != Repair {
		t.Fatalf("failures %+v", v.Failures)
	}
	if v.Signature != RepairSignature(repo, wantFailures) {
		t.Fatalf("signature %s", v.Signature)
	}
	if ids := []string{v.Cited[0].CallID, v.Cited[1].CallID}; !reflect.DeepEqual(ids, []string{"c2", "c1"}) || !reflect.DeepEqual(v.Request.ToolCalls, ids) {
		t.Fatalf("cited %v, request %v", ids, v.Request.ToolCalls)
	}
	wantAdmission := Admission{Kind: Repair, Repository: repo, Signature: v.Signature, Brief: v.Brief, OriginSession: "origin"}
	if v.Admission != wantAdmission {
		t.Fatalf("admission %+v", v.Admission)
	}
	wantBrief := "local_read fails with an I/O error on a readable file\n\n" +
		"Expected: the file's text\nObserved: filesystem_error twice\n\n" +
		"Evidence from session origin (axlr build v1.2.3):\n- read a.go: input/output error\n- cat a.go prints it\n\n" +
		"Failing calls as the session saw them:\n" +
		"- c2 local_read → failed: filesystem_error: read a.go: input/output error\n" +
		"- c1 local_read → failed: filesystem_error: read a.go: input/output error\n\n" +
		"Reproduce the defect in this clone with a check command that fails before any change; a failure that cannot be shown here ends the repair BLOCKED.\n"
	if v.Brief != wantBrief {
		t.Fatalf("brief\n%s\nwant\n%s", v.Brief, wantBrief)
	}
	// The job's name comes from the description, as the brief starts with it.
	if SlugWords(v.Brief) != SlugWords(v.Request.Description) {
		t.Fatalf("slug of the brief %q", SlugWords(v.Brief))
	}
}

func TestValidatedImprovement(t *testing.T) {
	v, err := ValidateImprovementRequest(args(t, map[string]any{"tool_calls": []string{"c3", "c1", "c2"}}), session, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != Improve || v.Failures != nil || len(v.Cited) != 3 || v.Admission.Kind != Improve {
		t.Fatalf("validated %+v", v)
	}
	if want := ImprovementSignature(repo, []string{"local_exec", "local_read"}, v.Request.Description); v.Signature != want {
		t.Fatalf("signature %s, want %s", v.Signature, want)
	}
	if !strings.Contains(v.Brief, "Calls that showed the friction, as the session saw them:\n- c3 local_exec → completed, exited 1\n") ||
		!strings.HasSuffix(v.Brief, "hand back the brief with feasible=false and the reason.\n") {
		t.Fatalf("brief\n%s", v.Brief)
	}
}

func TestBriefBounded(t *testing.T) {
	var calls []CallOutcome
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("b%d", i)
		ids = append(ids, id)
		calls = append(calls, CallOutcome{CallID: id, Tool: "local_read", Status: CallFailed, Code: "internal_error", Message: strings.Repeat("é", 2000)})
	}
	items := make([]string, 8)
	for i := range items {
		items[i] = strings.Repeat("x", MaxEvidenceItem)
	}
	v, err := ValidateRepairRequest(args(t, map[string]any{"tool_calls": ids, "evidence": items, "description": strings.Repeat("d", MaxText)}), calls, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Brief) > MaxBrief || !strings.HasSuffix(v.Brief, "…") {
		t.Fatalf("brief is %d bytes, ends %q", len(v.Brief), v.Brief[len(v.Brief)-10:])
	}
	if err := Admit(nil, v.Admission, Limits{}, build); err != nil {
		t.Fatalf("the registry refuses a validated request: %v", err)
	}
}

func TestEvidence(t *testing.T) {
	tests := []struct {
		name, json string
		want       Evidence
		fails      bool
	}{
		{"lines", `"a\n\n  b  \r\nc"`, Evidence{"a", "b", "c"}, false},
		{"array", `["a", " b "]`, Evidence{"a", " b "}, false},
		{"null", `null`, nil, false},
		{"number", `3`, nil, true},
		{"array of numbers", `[1]`, nil, true},
		{"object", `{"a": 1}`, nil, true},
	}
	var direct Evidence
	if err := direct.UnmarshalJSON([]byte(`"unterminated`)); err == nil {
		t.Fatal("an unterminated string is evidence")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Evidence
			err := json.Unmarshal([]byte(tt.json), &e)
			if (err != nil) != tt.fails || !reflect.DeepEqual(e, tt.want) {
				t.Fatalf("evidence %q %v", e, err)
			}
		})
	}
}

func TestExternalCause(t *testing.T) {
	tests := []struct{ text, want string }{
		{"the API Key was rejected", "api key"},
		{"got 429 Too Many Requests", "429"},
		{"HTTP 4030 is no code", ""},
		{"credentials expired", "credentials"},
		{"a credential_store bug", ""},
		{"rate-limited", "rate limited"},
		{"Connection-Refused", "connection refused"},
		{"we were rate limited", "rate limited"},
		{"DNS lookup failed", "dns"},
		{"dnsmasq config", ""},
		{"proxyquire is a test library", ""},
		{"tls handshake timeout", "tls handshake"},
		{"ETIMEDOUT reading", "etimedout"},
		{"gh auth login first", "gh auth"},
		{"the parser drops the last line", ""},
		{"Ünicode before 403", "403"},
	}
	for _, tt := range tests {
		if got := externalCause(tt.text); got != tt.want {
			t.Errorf("externalCause(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	for _, w := range externalCauses {
		if got := externalCause("x " + strings.ToUpper(w) + "."); got == "" {
			t.Errorf("%q is not found", w)
		}
	}
}

func TestCitable(t *testing.T) {
	got := Citable(session)
	var ids []string
	for _, c := range got {
		ids = append(ids, c.CallID)
	}
	if !reflect.DeepEqual(ids, []string{"c6", "c5", "c4", "c3", "c2"}) {
		t.Fatalf("citable %v", ids)
	}
	if recentText(got) != sessionRecent {
		t.Fatalf("recent text %q", recentText(got))
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		c    CallOutcome
		want string
	}{
		{CallOutcome{}, "no outcome yet"},
		{CallOutcome{Status: CallCompleted}, "completed"},
		{CallOutcome{Status: CallCompleted, ExitCode: exit(2)}, "completed, exited 2"},
		{CallOutcome{Status: CallFailed, Code: "process_error"}, "failed: process_error"},
		{CallOutcome{Status: CallRejected, Code: "invalid_path"}, "rejected: invalid_path"},
		{CallOutcome{Status: CallTimedOut, Code: "timeout"}, "timed out: timeout"},
		{CallOutcome{Status: CallUncertain}, "effect unknown"},
		{CallOutcome{Status: CallUnreadable}, "outcome unreadable"},
		{CallOutcome{Status: CallDenied}, "denied"},
	}
	for _, tt := range tests {
		if got := tt.c.Outcome(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.c, got, tt.want)
		}
	}
}
