package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
)

// A Go module with a failing test: Parse panics on empty input.
var calcFiles = map[string]string{
	"go.mod": "module example.com/calc\n\ngo 1.22\n",
	"calc.go": `package calc

import "strconv"

// Parse reads the first digit of s.
func Parse(s string) (int, error) {
	return strconv.Atoi(s[:1])
}
`,
	"calc_test.go": `package calc

import "testing"

func TestParse(t *testing.T) {
	if n, err := Parse("7"); err != nil || n != 7 {
		t.Fatalf("Parse(7) = %d, %v", n, err)
	}
	if _, err := Parse(""); err == nil {
		t.Fatal("Parse of empty input: no error")
	}
}
`,
}

// calcRepo writes the module into the workspace as a git repository with
// one commit, and lets go test use the test process's build cache.
func calcRepo(t *testing.T, e *env) {
	t.Helper()
	for name, content := range calcFiles {
		writeFile(t, e.workspace, name, content)
	}
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "calc"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = e.workspace
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		e.vars[k] = strings.TrimSpace(string(out))
	}
	e.vars["GOTOOLCHAIN"] = "local"
	e.vars["GOFLAGS"] = "-count=1"
}

// stepReply is what axlr_step_done answered, read from the last tool
// message of a request.
type stepReply struct {
	Accepted bool   `json:"accepted"`
	Error    string `json:"error"`
	Step     string `json:"step"`
	NextStep string `json:"next_step"`
	Ceremony string `json:"ceremony"`
	Feedback string `json:"feedback"`
	Instr    string `json:"instruction"`
	Check    *struct {
		ExitCode int `json:"exit_code"`
	} `json:"check"`
}

// lastReply returns the last axlr_step_done answer of a request, if the last
// message is one.
func lastReply(req agenttest.Request) (stepReply, bool) {
	m := req.Messages[len(req.Messages)-1]
	var r stepReply
	if m.Role != "tool" || json.Unmarshal([]byte(m.Content), &r) != nil || (r.Step == "" && r.Error == "") {
		return r, false
	}
	return r, true
}

// turnAt reads where a scripted model's request stands in a ceremony:
// the last axlr_step_done answer, if the last message is one; the last
// message; and the step to work on, the answer's next step or the one a
// console note opens.
func turnAt(req agenttest.Request) (r stepReply, isReply bool, last agenttest.Message, next string) {
	r, isReply = lastReply(req)
	last = req.Messages[len(req.Messages)-1]
	next = r.NextStep
	if !isReply && last.Role == "user" {
		next = openStep(last.Content)
	}
	return r, isReply, last, next
}

func stepDone(id string, fields string) agenttest.Reply {
	return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: id, Name: "axlr_step_done", Arguments: fields}}}
}

// debugScript plays a model through /debug on calcRepo: reproduce with go
// test, diagnose, fix Parse with local_edit, hand back the repair and
// integrate. fixes says how many repair rounds edit the code (0: never).
type debugScript struct {
	mu        sync.Mutex
	repairs   int
	fixWorks  bool
	handBacks []string
	// readHistory makes diagnose first read the reproduce step's messages
	// with axlr_history, from the range its ledger names; history is what
	// it read.
	readHistory bool
	history     string
}

// ledgerSpan reads "- STEP (iteration N): ...; messages #A-#B" off a
// compact ledger.
var ledgerSpan = regexp.MustCompile(`- (\w+) \(iteration \d+\): [^\n]*; messages #(\d+)-#(\d+)`)

func (s *debugScript) reply(req agenttest.Request) agenttest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, isReply := lastReply(req)
	last := req.Messages[len(req.Messages)-1]
	next := r.NextStep
	if !isReply && last.Role == "user" {
		// A console note, or a compact step's ledger: both name the step.
		next = openStep(last.Content)
	}
	switch {
	case next == "reproduce":
		return stepDone("r1", `{"check_command": {"program": "go", "args": ["test", "./..."]}, "expected": "ok", "observed": "panic: slice bounds out of range"}`)
	case isReply && r.Ceremony != "":
		return agenttest.Reply{Text: "The ceremony ended " + r.Ceremony + "."}
	case next == "diagnose" && s.readHistory && s.history == "":
		m := ledgerSpan.FindStringSubmatch(last.Content)
		if m == nil || m[1] != "reproduce" {
			return agenttest.Reply{Text: "no span for reproduce in the ledger"}
		}
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "h1", Name: "axlr_history", Arguments: `{"from": ` + m[2] + `, "to": ` + m[3] + `}`}}}
	case !isReply && last.Role == "tool" && s.readHistory && s.history == "":
		s.history = last.Content
		return stepDone("d1", `{"root_cause": "Parse slices s[:1] without checking that s is empty", "evidence": "calc.go: strconv.Atoi(s[:1])", "proposed_fix": "return an error for empty input"}`)
	case next == "diagnose":
		return stepDone("d1", `{"root_cause": "Parse slices s[:1] without checking that s is empty", "evidence": "calc.go: strconv.Atoi(s[:1])", "proposed_fix": "return an error for empty input"}`)
	case next == "repair":
		s.repairs++
		if s.fixWorks {
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "e1", Name: "local_edit",
				Arguments: `{"path": "calc.go", "old_text": "\treturn strconv.Atoi(s[:1])", "new_text": "\tif s == \"\" {\n\t\treturn 0, strconv.ErrSyntax\n\t}\n\treturn strconv.Atoi(s[:1])"}`}}}
		}
		return stepDone("p"+strconv.Itoa(s.repairs), `{"summary": "tried again"}`)
	case !isReply && last.Role == "tool":
		// After the edit.
		return stepDone("p1", `{"summary": "Parse returns ErrSyntax for empty input"}`)
	case next == "integrate":
		return stepDone("i1", `{"report": "TestParse panicked on empty input; Parse now returns an error; go test passes", "summary_en": "Fixed Parse on empty input."}`)
	}
	return agenttest.Reply{Text: "unexpected state"}
}

// openStep reads the open step from a console note ("current step: X (").
func openStep(note string) string {
	_, after, ok := strings.Cut(note, "current step: ")
	if !ok {
		return ""
	}
	step, _, _ := strings.Cut(after, " ")
	return step
}

// TestDebugCeremony runs /debug to COMPLETED: the first check waits for the
// person (--decide approve), the failure reproduces, the fix makes go test
// pass, integration records the revision; every step is completed once in
// MADE, in order.
func TestDebugCeremony(t *testing.T) {
	script := &debugScript{fixWorks: true}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	res := startCeremony(ctx, t, e, "debug", "TestParse fails on empty input")
	if res.Pending == nil || res.Pending.Tool != "axlr_check" || string(res.Pending.Arguments) != `{"program":"go","args":["test","./..."]}` {
		t.Fatalf("pending %+v", res.Pending)
	}
	if res.Ceremony == nil || res.Ceremony.State != "REPRODUCE" || res.Ceremony.Step != "reproduce" || res.Mode != "debug" {
		t.Fatalf("ceremony %+v, mode %q", res.Ceremony, res.Mode)
	}

	dec := e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json")
	if dec.code != 0 {
		t.Fatalf("decide: exit %d\n%s\n%s", dec.code, dec.stdout, dec.stderr)
	}
	evs, res := lines(t, dec.stdout)
	c := res.Ceremony
	if c == nil || c.State != "COMPLETED" || !c.Ended || res.Answer != "The ceremony ended COMPLETED." || res.Mode != "normal" {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	var steps []string
	for _, rec := range c.Steps {
		steps = append(steps, rec.Step)
	}
	if strings.Join(steps, ",") != "reproduce,diagnose,repair,integrate" {
		t.Fatalf("steps %v", steps)
	}
	if c.Steps[0].Check == nil || !c.Steps[0].Check.Failed() || c.Steps[2].Check == nil || !c.Steps[2].Check.Passed() {
		t.Fatalf("checks %+v %+v", c.Steps[0].Check, c.Steps[2].Check)
	}
	head, _ := exec.Command("git", "-C", e.workspace, "rev-parse", "HEAD").Output()
	if c.Steps[3].Output["revision"] != strings.TrimSpace(string(head)) || !strings.Contains(c.Steps[3].Output["dirty"].(string), "calc.go") {
		t.Fatalf("integration record %+v", c.Steps[3].Output)
	}
	var kinds []string
	for _, ev := range evs {
		if ev.Type == contract.EventTransition {
			kinds = append(kinds, ev.Trigger+">"+ev.State)
		}
	}
	if strings.Join(kinds, " ") != "reproduced>DIAGNOSE diagnosed>REPAIR repaired>INTEGRATE integrated>COMPLETED" {
		t.Fatalf("transitions %v", kinds)
	}
	if out, err := testCalc(e); err != nil {
		t.Fatalf("go test after the ceremony: %v\n%s", err, out)
	}

	captureHistory(t, e, res.SessionID, "session_debug")
	h := e.tui(ctx, "history", res.SessionID)
	for _, want := range []string{
		"local_activity ceremony.Start", "REPRODUCE, step reproduce claimed",
		"local_activity ceremony.HandBack", "axlr_step_done", "accepted",
		"activity ceremony.RunCheck", "go test ./...", "exit 1",
		"local_activity ceremony.Complete", "completed reproduce (iteration 1)",
		"local_activity ceremony.Transition", "applied reproduced from REPRODUCE", "state DIAGNOSE",
		"local_activity ceremony.Claim", "claimed diagnose (iteration 1)",
		"update decide", "approve the pending call",
	} {
		if !strings.Contains(h.stdout, want) {
			t.Errorf("history lacks %q:\n%s", want, h.stdout)
		}
	}

	// exec --session sends --mode (normal unless given), so a prompt after
	// the ceremony is a normal one: no new instance, the session in normal
	// mode.
	next := e.tui(ctx, "--exec", "and now?", "--session", res.SessionID, "--json")
	_, after := lines(t, next.stdout)
	if next.code != 0 || after.Ceremony != nil || after.Mode != "normal" {
		t.Fatalf("the prompt after the ceremony: exit %d, result %+v\n%s", next.code, after, next.stderr)
	}

	// MADE holds every step completed once, and no other instance.
	d.stop()
	completedOnce(t, madeInstance(t, e, c.InstanceID))
	if ids := madeInstances(t, e); len(ids) != 1 {
		t.Fatalf("MADE holds instances %q, want %s alone", ids, c.InstanceID)
	}
}

// completedOnce checks that MADE holds a COMPLETED instance whose every step
// was claimed once (attempt 1) and completed once (iteration 1).
func completedOnce(t *testing.T, inst made.Instance) {
	t.Helper()
	for _, s := range inst.Steps {
		if s.Status != made.StepCompleted || s.Attempt != 1 || s.Iteration != 1 {
			t.Errorf("MADE step %s: %s, attempt %d, iteration %d", s.StepID, s.Status, s.Attempt, s.Iteration)
		}
	}
	if inst.CurrentState != "COMPLETED" || !inst.Completed || inst.TransitionCount != 4 {
		t.Errorf("MADE instance %s, completed %v, %d transitions", inst.CurrentState, inst.Completed, inst.TransitionCount)
	}
}

func testCalc(e *env) ([]byte, error) {
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = e.workspace
	cmd.Env = append(os.Environ(), "GOFLAGS=-count=1")
	return cmd.CombinedOutput()
}

// madeInstance reads an instance from the embedded MADE store of a stopped
// daemon.
func madeInstance(t *testing.T, e *env, id string) made.Instance {
	t.Helper()
	eng, err := embedded.Open(filepath.Join(e.stateDir, "made"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	inst, err := eng.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// madeInstances lists the ids of the ceremonies' instances in the
// embedded MADE store of a stopped daemon: the sessions' records
// (axlr_session) are left out.
func madeInstances(t *testing.T, e *env) []string {
	t.Helper()
	eng, err := embedded.Open(filepath.Join(e.stateDir, "made"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	entries, err := eng.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, en := range entries {
		if en.Instance != nil && en.Instance.DefinitionName == ceremonies.SessionRecord {
			continue // a session's record (TestSessionRecord)
		}
		ids = append(ids, en.CeremonyID)
	}
	return ids
}

// TestDebugCeremonyOverMCP runs /debug with axlrd driving a made-mcp child
// process over stdio MCP (made.command in settings): the same ceremony, the
// real MCP client, made-mcp's tool names and payloads.
func TestDebugCeremonyOverMCP(t *testing.T) {
	script := &debugScript{fixWorks: true}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	settings, _ := json.Marshal(map[string]any{"model": "m", "made": map[string]any{
		"command": os.Args[0], "env": map[string]string{madeEnv: "1"}}})
	e.writeSettings(string(settings))
	d := e.start()
	res := runCeremony(t, e, "debug", "TestParse fails on empty input")
	c := res.Ceremony
	if res.Status != contract.Completed || c == nil || c.State != "COMPLETED" || stepNames(c) != "reproduce,diagnose,repair,integrate" {
		t.Fatalf("result %+v ceremony %+v\n%s", res, c, d.logs)
	}
	d.stop()
	eng, err := embedded.Open(filepath.Join(e.stateDir, "made", "served"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	inst, err := eng.Get(context.Background(), c.InstanceID)
	if err != nil || inst.CurrentState != "COMPLETED" {
		t.Fatalf("the made-mcp child's store: %+v %v", inst.CurrentState, err)
	}
}

// TestCompactDebug runs /debug under the compact profile: each step after
// the first starts from a ledger (the system prompt and one message),
// axlr_step_done offers the step's fields only, reproduce and diagnose
// cannot write, and the ceremony completes.
func TestCompactDebug(t *testing.T) {
	script := &debugScript{fixWorks: true, readHistory: true}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m", "ceremonies": {"profile": "compact"}}`)
	e.start()
	res := runCeremony(t, e, "debug", "TestParse fails on empty input")
	if c := res.Ceremony; res.Status != contract.Completed || c == nil || c.State != "COMPLETED" {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	var diagnose *agenttest.Request
	for _, req := range model.Requests() {
		if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "current step: diagnose") {
			diagnose = &req
			break
		}
	}
	if diagnose == nil {
		t.Fatal("no request for diagnose")
	}
	if len(diagnose.Messages) != 2 || diagnose.Messages[0].Role != "system" ||
		!strings.Contains(diagnose.Messages[1].Content, "- reproduce (iteration 1): completed; check go test ./... exited 1") ||
		!strings.Contains(diagnose.Messages[1].Content, "The person's request:\nTestParse fails on empty input") {
		t.Fatalf("diagnose starts from %d messages:\n%+v", len(diagnose.Messages), diagnose.Messages)
	}
	var names []string
	for _, tool := range diagnose.Tools {
		names = append(names, tool.Name)
		if tool.Name == "axlr_step_done" && (!strings.Contains(string(tool.Parameters), "root_cause") || strings.Contains(string(tool.Parameters), "check_command")) {
			t.Errorf("compact axlr_step_done for diagnose: %s", tool.Parameters)
		}
	}
	if strings.Contains(strings.Join(names, ","), "local_write") || !strings.Contains(strings.Join(names, ","), "axlr_history") {
		t.Errorf("diagnose offers %v", names)
	}
	// The ledger names the messages reproduce spanned; axlr_history read
	// them back from the session log: the hand-back and its check.
	if !strings.Contains(diagnose.Messages[1].Content, "axlr_history reads any of them by number") ||
		!strings.Contains(script.history, "call axlr_step_done") || !strings.Contains(script.history, `"check_command": {"program": "go"`) {
		t.Errorf("ledger:\n%s\naxlr_history read:\n%s", diagnose.Messages[1].Content, script.history)
	}
	var spans []string
	for _, st := range res.Ceremony.Steps {
		if st.Transcript == nil || st.Transcript.SessionID != res.SessionID || st.Transcript.To < st.Transcript.From {
			t.Fatalf("step %s spans %+v", st.Step, st.Transcript)
		}
		spans = append(spans, fmt.Sprintf("%d-%d", st.Transcript.From, st.Transcript.To))
	}
	for i := 1; i < len(res.Ceremony.Steps); i++ {
		if res.Ceremony.Steps[i].Transcript.From <= res.Ceremony.Steps[i-1].Transcript.To {
			t.Fatalf("step spans overlap: %v", spans)
		}
	}
	captureHistory(t, e, res.SessionID, "session_compact")
}
