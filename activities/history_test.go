package activities

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/workflows"
)

// stepTranscript is a compact step's transcript: the system prompt, the
// ledger, then n exchanges of a local_read call and a result of size bytes.
func stepTranscript(n, size int) ([]agent.Message, []int) {
	msgs := []agent.Message{
		{Role: "system", Content: strings.Repeat("s", 1000)},
		{Role: "user", Content: "[AXLR] the ledger " + strings.Repeat("l", 1000)},
	}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			agent.Message{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: id, Name: "local_read", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)}}},
			agent.Message{Role: "tool", ToolCallID: id, Content: strings.Repeat("r", size)})
	}
	seqs := make([]int, len(msgs))
	for i := range seqs {
		seqs[i] = i + 3
	}
	return msgs, seqs
}

func viewSize(msgs []agent.Message) int {
	n := 0
	for _, m := range msgs {
		n += msgSize(m)
	}
	return n
}

func TestCompactViewUnderTheCeilingIsTheTranscript(t *testing.T) {
	msgs, seqs := stepTranscript(5, 7000)
	out, ok := compactView(msgs, seqs, CompactCeiling)
	if !ok || len(out) != len(msgs) {
		t.Fatalf("ok %v, %d of %d messages", ok, len(out), len(msgs))
	}
}

// Past the 80 KiB ceiling the oldest exchanges make way for a checkpoint,
// down to about the 56 KiB watermark; the head stays and no tool result
// loses its call.
func TestCompactViewCheckpoint(t *testing.T) {
	msgs, seqs := stepTranscript(14, 7000) // about 100 KB
	out, ok := compactView(msgs, seqs, CompactCeiling)
	if !ok {
		t.Fatal("did not fit")
	}
	size := viewSize(out)
	if size > CompactCeiling || size < CompactWatermark-8<<10 {
		t.Fatalf("view of %d bytes, want at most %d and near %d", size, CompactCeiling, CompactWatermark)
	}
	if out[0].Role != "system" || !strings.HasPrefix(out[1].Content, "[AXLR] the ledger") {
		t.Fatalf("head %+v", out[:2])
	}
	cp := out[2].Content
	dropped := len(msgs) - len(out) + 1
	want := fmt.Sprintf("messages #5-#%d are left out", 5+dropped-1)
	if out[2].Role != "user" || !strings.Contains(cp, "[AXLR · checkpoint]") || !strings.Contains(cp, want) ||
		!strings.Contains(cp, "axlr_history reads") || !strings.Contains(cp, `#5 you called local_read {"path":"f0.go"}`) ||
		!strings.Contains(cp, "#6 result (7000 bytes): rrrr") || len(cp) > CompactCheckpoint {
		t.Fatalf("checkpoint (want %q):\n%s", want, cp)
	}
	if out[3].Role != "assistant" {
		t.Fatalf("the kept part starts with %s", out[3].Role)
	}

}

// As a step's transcript grows, the cut moves only when the view passes
// the ceiling again, and each move brings it back to about the watermark:
// between moves every request sends the same prefix, so a provider's prompt
// cache survives.
func TestCompactViewCutMovesInSteps(t *testing.T) {
	const size = 3000
	exchange := msgSize(agent.Message{Role: "tool", Content: strings.Repeat("r", size)}) + 100
	prev, prevDropped, moves := "", 0, 0
	for n := 1; n <= 60; n++ {
		msgs, seqs := stepTranscript(n, size)
		out, ok := compactView(msgs, seqs, CompactCeiling)
		if !ok {
			t.Fatalf("%d exchanges did not fit", n)
		}
		total := viewSize(out)
		if total > CompactCeiling {
			t.Fatalf("%d exchanges: view of %d bytes", n, total)
		}
		cp, dropped := "", 0
		if len(out) < len(msgs) {
			cp, dropped = out[2].Content, len(msgs)-len(out)+1
		}
		if cp != prev {
			moves++
			if total > CompactWatermark+exchange+CompactCheckpoint {
				t.Fatalf("%d exchanges: the cut moved to a view of %d bytes, want about %d", n, total, CompactWatermark)
			}
		} else if dropped != prevDropped {
			t.Fatalf("%d exchanges: %d messages left out, %d before, under the same checkpoint", n, dropped, prevDropped)
		}
		prev, prevDropped = cp, dropped
	}
	// 60 exchanges of about 3 KB pass the 80 KiB ceiling once, then move
	// the cut once for each 24 KiB (80-56) that follows.
	if moves < 3 || moves > 5 {
		t.Fatalf("the cut moved %d times over 60 exchanges", moves)
	}
}

func TestCompactViewRefusesWhatCannotFit(t *testing.T) {
	msgs, seqs := stepTranscript(1, 90<<10)
	if _, ok := compactView(msgs, seqs, CompactCeiling); ok {
		t.Fatal("a last exchange over the ceiling fit")
	}
	// A head alone over the ceiling (a successor's opening) goes as it is:
	// a successor would open with the same.
	head, headSeqs := stepTranscript(0, 0)
	head[1].Content = strings.Repeat("l", 90<<10)
	if out, ok := compactView(head, headSeqs, CompactCeiling); !ok || len(out) != 2 {
		t.Fatalf("head alone: ok %v, %d messages", ok, len(out))
	}
}

func TestCheckpointKeepsTheNewestLines(t *testing.T) {
	msgs, seqs := stepTranscript(400, 200)
	out, ok := compactView(msgs, seqs, CompactCeiling)
	if !ok {
		t.Fatal("did not fit")
	}
	cp := out[2].Content
	last := seqs[len(msgs)-len(out)+2]
	if len(cp) > CompactCheckpoint || !strings.Contains(cp, "earlier messages not listed") || !strings.Contains(cp, fmt.Sprintf("#%d result", last)) {
		t.Fatalf("checkpoint of %d bytes (last dropped #%d):\n%s", len(cp), last, cp)
	}
}

func TestHistoryArgs(t *testing.T) {
	for _, tt := range []struct{ args, err string }{
		{`{"from": 3, "extra": 1}`, `unknown field "extra"`},
		{`{"to": 3}`, `needs "from"`},
		{`{"from": 5, "to": 2}`, "want 0 <= from <= to"},
		{`{"from": "5"}`, "takes {"},
	} {
		if _, _, err := parseHistoryArgs(tt.args); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want %q", tt.args, err, tt.err)
		}
	}
	if from, to, err := parseHistoryArgs(`{"from": 4}`); err != nil || from != 4 || to != 4+historyDefaultSpan-1 {
		t.Fatalf("default span: %d-%d %v", from, to, err)
	}
	c := inspectCall(nil, "1.0", agent.ToolCall{ID: "h", Name: workflows.HistoryTool, Arguments: `{"from": 1, "lines": 3}`}, true)
	if !strings.Contains(c.Invalid, `unknown field "lines"`) {
		t.Fatalf("invalid call passed: %+v", c)
	}
}

// axlr_history reads the saved transcript through the ToolCall activity,
// from the real session log.
func TestHistoryToolReadsTheLog(t *testing.T) {
	big := strings.Repeat("x", CompactResultBytes)
	f := newFixture(t, agenttest.Queue(
		writeCall("w1", `{"path":"a.txt","content":"`+big+`","mode":"create"}`),
		agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "h1", Name: workflows.HistoryTool, Arguments: `{"from": 1, "to": 2}`}}},
		agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "h2", Name: workflows.HistoryTool, Arguments: `{"from": 1}`}}},
		agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "h3", Name: workflows.HistoryTool, Arguments: `{"from": 900}`}}},
	))
	out := f.firstCall("please write a.txt")
	log, _ := f.acts.Store.Log(f.id)
	lastContent := func() string {
		msgs, _, _, err := f.acts.transcripts.get(log, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return msgs[len(msgs)-1].Content
	}
	run := func(rev int) workflows.ToolCallResult {
		t.Helper()
		res, err := f.request(rev)
		if err != nil || res.Calls[0].Invalid != "" {
			t.Fatalf("request: %+v %v", res, err)
		}
		out, err := f.tool(res.Calls[0])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	out = run(out.Revision)
	got := lastContent()
	if out.Status != contract.CallCompleted || !strings.HasPrefix(got, "#1 system:\n") || !strings.Contains(got, "#2 user:\nplease write a.txt\n") {
		t.Fatalf("%s:\n%s", out.Status, got)
	}
	// From #1 the big write call passes 8 KiB: the output says where to
	// read on.
	out = run(out.Revision)
	got = lastContent()
	if out.Status != contract.CallCompleted || !strings.HasSuffix(got, "[AXLR] output cut at 8192 bytes: read on from #3") || len(got) > CompactResultBytes+100 {
		t.Fatalf("%s, %d bytes:\n%s", out.Status, len(got), got[max(0, len(got)-300):])
	}
	out = run(out.Revision)
	if got := lastContent(); out.Status != contract.CallFailed || !strings.Contains(got, "message #900 is past the end of the transcript") {
		t.Fatalf("%s: %s", out.Status, got)
	}
}

// A compact request past the ceiling reaches the provider with the
// checkpoint in place of the oldest work, and offers axlr_history.
func TestCompactModelRequestSendsTheCheckpoint(t *testing.T) {
	var seen agenttest.Request
	f := newFixture(t, func(req agenttest.Request) agenttest.Reply {
		seen = req
		return agenttest.Reply{Text: "done"}
	})
	rev := f.begin("find the bug").Revision
	log, _ := f.acts.Store.Log(f.id)
	for i := range 14 {
		id := fmt.Sprintf("c%d", i)
		if err := f.acts.appendMessage(log, fmt.Sprintf("response:t%d", i), messageData{Message: agent.Message{Role: "assistant",
			ToolCalls: []agent.ToolCall{{ID: id, Name: "local_read", Arguments: `{"path":"x.go"}`}}}}); err != nil {
			t.Fatal(err)
		}
		if err := f.acts.appendMessage(log, "tool:t"+id, messageData{Message: agent.Message{Role: "tool", ToolCallID: id,
			Content: strings.Repeat("r", 7000)}, Tool: "local_read", Status: contract.CallCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	rev = log.Len()
	_, err := call[workflows.ModelRequestInput, workflows.ModelRequestResult](f, func(s *Session) any { return s.ModelRequest },
		workflows.ModelRequestInput{SessionID: f.id, Revision: rev, Model: "m",
			Tools:    append(slices.Clone(workflows.LocalTools), workflows.HistoryTool, workflows.StepDoneTool),
			StepDone: &workflows.StepDoneSpec{Definition: "axlr_debug", Step: "diagnose", Compact: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen.Messages) < 4 || !strings.Contains(seen.Messages[2].Content, "[AXLR · checkpoint]") || seen.Messages[3].Role != "assistant" {
		t.Fatalf("%d messages; third: %.200s", len(seen.Messages), seen.Messages[min(2, len(seen.Messages)-1)].Content)
	}
	if !slices.ContainsFunc(seen.Tools, func(tl agenttest.Tool) bool { return tl.Name == workflows.HistoryTool }) {
		t.Fatalf("tools %+v", seen.Tools)
	}
}
