package card

import (
	"encoding/json"
	"flag"
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden views")

var call = contract.PendingCall{CallID: "call-7", Tool: "local_exec", Arguments: json.RawMessage(`{"program":"go","args":["test","./..."]}`)}

func mergeJob() jobs.Record {
	return jobs.Record{ID: "grep-tool-slow", Status: jobs.AwaitingMerge, URL: "https://github.com/o/r/pull/42",
		Pending: &jobs.Pending{Kind: jobs.PendingMerge, PullRequest: 42, HeadSHA: "abcdef0123456"}}
}

func plan() plans.Record {
	return plans.Record{ID: "p-1a2b3c", Status: plans.AwaitingApproval, Brief: "split the parser", Waves: 2, Pending: &plans.Pending{Kind: plans.PendingApproval},
		Tasks: []plans.Task{{ID: "lexer", Goal: "a lexer", Wave: 1}, {ID: "parser", Goal: "a parser on the lexer", Wave: 2, DependsOn: []string{"lexer"}}}}
}

func decide(t *testing.T, m Model, keys ...string) (DecisionMsg, bool) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		m, cmd = m.Update(tuitest.Key(k))
	}
	if cmd == nil {
		return DecisionMsg{}, false
	}
	d, ok := cmd().(DecisionMsg)
	return d, ok
}

func TestCardDecisions(t *testing.T) {
	jobReq, err := ForJob(mergeJob())
	if err != nil {
		t.Fatal(err)
	}
	planReq, err := ForPlan(plan())
	if err != nil {
		t.Fatal(err)
	}
	cmdReq, err := ForPlan(plans.Record{ID: "p-2", Status: plans.Running, Pending: &plans.Pending{Kind: plans.PendingCommand, Commands: []string{"go test ./..."}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  Request
		keys []string
		want any
	}{
		{"approve a call", ForCall("s1", call), []string{"a"}, workflows.DecideRequest{CallID: "call-7", Decision: contract.Approve}},
		{"deny a call", ForCall("s1", call), append(append([]string{"d"}, keys("no tests")...), "enter"),
			workflows.DecideRequest{CallID: "call-7", Decision: contract.Deny, Reason: "no tests"}},
		{"merge at the head", jobReq, []string{"a"}, workflows.JobDecision{Job: "grep-tool-slow", Kind: jobs.PendingMerge, Approve: true, HeadSHA: "abcdef0123456"}},
		{"decline a merge", jobReq, append(append([]string{"d"}, keys("later")...), "enter"),
			workflows.JobDecision{Job: "grep-tool-slow", Kind: jobs.PendingMerge, Reason: "later"}},
		{"approve a plan", planReq, []string{"a"}, workflows.PlanDecision{Plan: "p-1a2b3c", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanApprove}},
		{"return a plan", planReq, append(append([]string{"d"}, keys("one task")...), "enter"),
			workflows.PlanDecision{Plan: "p-1a2b3c", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanReturn, Reason: "one task"}},
		{"decline a plan", planReq, append(append([]string{"x"}, keys("no")...), "enter"),
			workflows.PlanDecision{Plan: "p-1a2b3c", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanDecline, Reason: "no"}},
		{"deny a plan's commands", cmdReq, append(append([]string{"d"}, keys("slow")...), "enter"),
			workflows.PlanDecision{Plan: "p-2", Kind: workflows.PlanDecideCommands, Decision: workflows.PlanDeny, Reason: "slow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := decide(t, New(common.New(80, 24, false), tt.req), tt.keys...)
			if !ok {
				t.Fatal("no decision")
			}
			var got any
			switch tt.req.Subject {
			case Call:
				got = d.DecideRequest()
			case Job:
				got = d.JobDecision()
			default:
				got = d.PlanDecision()
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decision %+v, want %+v", got, tt.want)
			}
		})
	}
}

func keys(s string) []string {
	var ks []string
	for _, r := range s {
		ks = append(ks, string(r))
	}
	return ks
}

func TestCardRefusals(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
	}{
		{"an empty reason", []string{"d", "enter"}},
		{"esc cancels the reason", []string{"d", "n", "esc", "enter"}},
		{"x is only for a plan", []string{"x"}},
		{"other keys", []string{"q", "enter"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d, ok := decide(t, New(common.New(80, 24, false), ForCall("s1", call)), tt.keys...); ok {
				t.Errorf("decided %+v", d)
			}
		})
	}
}

func TestCardWithoutWait(t *testing.T) {
	if _, err := ForJob(jobs.Record{ID: "j", Status: jobs.Running}); err == nil || !strings.Contains(err.Error(), "waits for no decision") {
		t.Errorf("ForJob: %v", err)
	}
	if _, err := ForPlan(plans.Record{ID: "p", Status: plans.Running}); err == nil || !strings.Contains(err.Error(), "waits for no decision") {
		t.Errorf("ForPlan: %v", err)
	}
}

func TestCardView(t *testing.T) {
	jobReq, _ := ForJob(mergeJob())
	planReq, _ := ForPlan(plan())
	long := call
	long.Arguments = json.RawMessage(`{"program":"sh","args":["-c","` + strings.Repeat("echo exactly this long line; ", 5) + `"]}`)
	for _, tt := range []struct {
		name string
		req  Request
	}{
		{"call", ForCall("s1", call)},
		{"long call wraps", ForCall("s1", long)},
		{"merge", jobReq},
		{"plan", planReq},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tuitest.Golden(t, New(common.New(80, 24, false), tt.req).View(), *update)
		})
	}
}

// TestMergeCardBehind: a merge whose branch fell behind its base again says
// so, and that the merge queue is the way to land it.
func TestMergeCardBehind(t *testing.T) {
	rec := mergeJob()
	plain, err := ForJob(rec)
	if err != nil {
		t.Fatal(err)
	}
	rec.Pending.Behind = true
	behind, err := ForJob(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := behind.Lines[len(behind.Lines)-1]; len(behind.Lines) != len(plain.Lines)+1 || !strings.Contains(got, "behind its base again") || !strings.Contains(got, "queues it") {
		t.Fatalf("lines %q, without behind %q", behind.Lines, plain.Lines)
	}
}
