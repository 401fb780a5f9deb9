package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
)

// TestStaleInterruptIsRefused: an interrupt names the execution it stops;
// one for another execution is refused with what runs now, and changes
// nothing.
func TestStaleInterruptIsRefused(t *testing.T) {
	var errs []reply
	for range 10 {
		errs = append(errs, reply{err: errors.New("provider busy")})
	}
	acts := newScripted(errs...)
	h := newHarness(t, acts)
	h.env.SetTestTimeout(time.Minute)
	var ex, stale, own outcome
	var p Progress
	h.update(UpdateExecute, "exec-2", execReq("exec-2", "hi", policy.ApproveNone, nil), &ex)
	h.at -= 55 * time.Second // while the first request backs off
	h.update(UpdateInterrupt, "int-1", InterruptRequest{ExecutionID: "exec-1"}, &stale)
	h.update(UpdateInterrupt, "int-2", InterruptRequest{ExecutionID: "exec-2", Reason: "enough"}, &own)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	stale.mustReject(t, "stale interrupt", "interrupt: execution exec-1 is not running in session "+sessionID+"; execution exec-2 is")
	own.mustAccept(t, "interrupt")
	if p.Result == nil || p.Result.Status != contract.Interrupted || p.Result.Error != "enough" {
		t.Fatalf("result %+v", p.Result)
	}
}

// TestStaleDecisionIsRefused: a decision names the call it decides; a
// late one for a call no longer pending is refused, naming the call that
// waits now.
func TestStaleDecisionIsRefused(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_write", args: map[string]any{"path": "a", "content": "x", "mode": "create"}}}},
		reply{calls: []scriptCall{{tool: "local_edit", args: map[string]any{"path": "a", "old": "x", "new": "y"}}}},
		reply{text: "done"},
	)
	h := newHarness(t, acts)
	var ex, dec, late, next outcome
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "write then edit", policy.ApproveNone, nil), &ex)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-3-0", Decision: contract.Approve}, &dec)
	// A second click on the first card arrives after the edit waits.
	h.update(UpdateDecide, "dec-2", DecideRequest{ExecutionID: "dec-2", CallID: "call-3-0", Decision: contract.Approve}, &late)
	h.update(UpdateDecide, "dec-3", DecideRequest{ExecutionID: "dec-3", CallID: "call-5-0", Decision: contract.Deny}, &next)
	h.run()
	ex.mustAccept(t, "execute")
	dec.mustAccept(t, "decide")
	late.mustReject(t, "late decision", "decide: call call-3-0 was already decided (approve)")
	next.mustAccept(t, "decide the edit")
	if len(acts.ran) != 1 || acts.ran[0].Tool != "local_write" || len(acts.recorded) != 1 || acts.recorded[0].Status != contract.CallDenied {
		t.Fatalf("ran %+v recorded %+v", acts.ran, acts.recorded)
	}

	h = newHarness(t, newScripted(reply{calls: []scriptCall{{tool: "local_write", args: map[string]any{"path": "a", "content": "x", "mode": "create"}}}}))
	var ex2, other outcome
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "write", policy.ApproveNone, nil), &ex2)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-9-0", Decision: contract.Approve}, &other)
	h.run()
	other.mustReject(t, "another call", "decide: no call call-9-0 waits for a decision in session "+sessionID+"; the pending call is call-3-0 (local_write)")
}

// TestOldStateContinuesAsNew: the state a run of the previous shape
// carried over continue-as-new decodes into this one with every field.
func TestOldStateContinuesAsNew(t *testing.T) {
	old := `{"session_ids":["s1","s2"],"root":"/w","mode":"debug","model":"m","approval":"local",
		"revision":12,"ledgers":[{"requests":1},{"requests":2}],
		"calls":[{"session":"s2","key":"9.0","call_id":"c1","tool":"local_read","decision":"auto_approve","status":"completed"}],
		"pending":{"call":{"key":"11.0","call_id":"c2","tool":"local_write"},"reason":"asks"},
		"turn":{"revision":3,"model":"m","root":"/w","settings":{},"stream":true,"ceremony_profile":"compact"},
		"execution":{"id":"e1","sessions":["s2"],"event_from":4},
		"ceremony":{"mode":"debug","definition":"axlr_debug","version":"2.0","instance_id":"i","state":"REPRODUCE","step":"reproduce","calls":3},
		"recent":[{"id":"e0","sessions":["s1"],"event_from":0,"result":{"status":"completed"}}],
		"event_base":40,"applied":["e0","e1"]}`
	var st SessionState
	if err := json.Unmarshal([]byte(old), &st); err != nil {
		t.Fatal(err)
	}
	if st.Current() != "s2" || st.Root != "/w" || st.Revision != 12 || len(st.Ledgers) != 2 || len(st.Calls) != 1 || st.Pending.Call.CallID != "c2" ||
		st.Snapshot == nil || st.Snapshot.CeremonyProfile != "compact" || st.Execution.ID != "e1" || st.Ceremony.Calls != 3 || st.EventBase != 40 ||
		len(st.Applied) != 2 || st.Mode != "debug" || st.Approval != policy.ApproveLocal {
		t.Fatalf("decoded %+v", st)
	}
}

// TestCarriedStateIsBounded: what a session carries over continue-as-new
// stays under MaxCarriedBytes however long its call ids are, keeps the
// newest calls and the last result whole, and the older results, carried
// without the session's calls, get them back when read.
func TestCarriedStateIsBounded(t *testing.T) {
	st := SessionState{HostState: newHostState(sessionID, "", "")}
	long := strings.Repeat("x", 1<<10)
	for i := range MaxCalls {
		st.Calls = append(st.Calls, CallState{Session: sessionID, Key: fmt.Sprintf("%d.0", i), CallID: fmt.Sprintf("%s-%d", long, i), Tool: "local_read", Status: contract.CallCompleted})
	}
	all := make([]contract.ToolCallRecord, 0, 100)
	for _, c := range st.Calls[len(st.Calls)-100:] {
		all = append(all, contract.ToolCallRecord{CallID: c.CallID, Tool: c.Tool, Status: c.Status})
	}
	for i := range maxRecent {
		st.Recent = append(st.Recent, ExecutionState{ID: fmt.Sprint("e", i), Sessions: []string{sessionID},
			Result: &contract.Result{Status: contract.Completed, SessionID: sessionID, Sessions: []string{sessionID}, ToolCalls: all}})
	}
	for range 100 {
		st.emit(contract.Event{Type: contract.EventText, Text: long})
	}
	carried := st.carried()
	if n := carriedSize(&carried); n > MaxCarriedBytes {
		t.Fatalf("carried %d bytes, over %d", n, MaxCarriedBytes)
	}
	if len(carried.Calls) == 0 || carried.Calls[len(carried.Calls)-1] != st.Calls[len(st.Calls)-1] || len(carried.Events) != 0 || carried.EventBase != 100 {
		t.Fatalf("carried %d calls, %d events from %d", len(carried.Calls), len(carried.Events), carried.EventBase)
	}
	last := carried.Recent[len(carried.Recent)-1].Result
	if len(last.ToolCalls) != 100 || carried.Recent[0].Result.ToolCalls != nil || len(st.Recent[0].Result.ToolCalls) != 100 {
		t.Fatalf("last result %d calls, first %v (the original keeps %d)", len(last.ToolCalls), carried.Recent[0].Result.ToolCalls, len(st.Recent[0].Result.ToolCalls))
	}
	if got := carried.resultOf(carried.Recent[0]); len(got.ToolCalls) != len(carried.Calls) {
		t.Fatalf("an older result read back has %d calls, want the session's %d", len(got.ToolCalls), len(carried.Calls))
	}
}
