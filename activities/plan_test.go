package activities

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/workflows"
)

// planJSON is a planner's decompose hand-back for the workspace
// planFiles make: add-max cites calc.go, use-max depends on it.
const planJSON = `{
  "tasks": [
    {"id": "add-max", "goal": "calc.Max returns the larger int", "scope": ["calc/max.go", "calc/max_test.go"],
     "context": [{"path": "calc/calc.go", "line": 3, "quote": "func Min(a, b int) int {"}],
     "unit_check": {"program": "go", "args": ["test", "./calc"]}, "test_first": true},
    {"id": "use-max", "goal": "main prints Max(1, 2)", "scope": ["main.go"],
     "unit_check": {"program": "go", "args": ["build", "./..."]}, "depends_on": ["add-max"]}
  ],
  "e2e_check": {"program": "go", "args": ["test", "./..."]},
  "interfaces": "func Max(a, b int) int",
  "summary_en": "Adds calc.Max and uses it."
}`

// planFiles writes the workspace the plan cites, and a file outside it
// that a symbolic link inside points to.
func planFiles(t *testing.T, root string) {
	t.Helper()
	files := map[string]string{
		"calc/calc.go": "package calc\n\nfunc Min(a, b int) int {\n\tif a < b {\n\t\treturn a\n\t}\n\treturn b\n}\n",
		"main.go":      "package main\n\nfunc main() {}\n",
	}
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(filepath.Dir(root), "secret.go")
	if err := os.WriteFile(outside, []byte("package secret\n\nfunc Min(a, b int) int { return 0 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
}

// handBack saves the planner's response, an axlr_step_done call with args,
// in a real session and returns the call's key.
func (f *fixture) handBack(tool, args string) string {
	f.t.Helper()
	rev := f.begin("add max and use it").Revision
	res, err := call[workflows.ModelRequestInput, workflows.ModelRequestResult](f, func(s *Session) any { return s.ModelRequest },
		workflows.ModelRequestInput{SessionID: f.id, Revision: rev, Model: "m",
			Tools:    append(slices.Clone(workflows.LocalTools), workflows.StepDoneTool),
			StepDone: &workflows.StepDoneSpec{Definition: "axlr_plan", Version: "1.0", Step: "decompose"}})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(res.Calls) != 1 || res.Calls[0].Tool != tool {
		f.t.Fatalf("response %+v", res)
	}
	return res.Calls[0].Key
}

// TestPlanVerify reads the hand-back from a real session store and
// verifies it against a real workspace: a plan that holds gets its waves
// and packs; each defect names its task; a hand-back that is not a
// decomposition's shape is the plan's defect; a citation through a link
// out of the workspace is refused.
func TestPlanVerify(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    string
		waves   [][]string
		defects []string
	}{
		{"verified", planJSON, [][]string{{"add-max"}, {"use-max"}}, nil},
		{"quote off its line", strings.Replace(planJSON, `"line": 3`, `"line": 4`, 1), nil, []string{
			`task add-max: calc/calc.go:4 does not contain the quote (at least 12 characters); the line reads "if a < b {"`,
		}},
		{"independent tasks", strings.Replace(planJSON, `"depends_on": ["add-max"]`, `"depends_on": []`, 1), [][]string{{"add-max", "use-max"}}, nil},
		{"not a decomposition", `{"tasks": [], "e2e_check": {"program": "go"}, "summary_en": "x", "owner": "me"}`, nil, []string{
			`plan: unknown argument "owner" for the plan; it takes tasks, e2e_check, interfaces, summary_en`,
		}},
		{"a link out of the workspace", strings.Replace(planJSON, `"path": "calc/calc.go"`, `"path": "link.go"`, 1), nil, []string{
			"task add-max: citation 1: cited file link.go cannot be read: path escapes from parent",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, agenttest.Queue(agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "c1", Name: workflows.StepDoneTool, Arguments: tt.args}}}))
			planFiles(t, f.root)
			key := f.handBack(workflows.StepDoneTool, tt.args)
			a := &Plan{Store: f.acts.Store}
			v, err := a.Verify(t.Context(), workflows.PlanVerifyInput{Plan: "add-max-0a1b2c", SessionID: f.id, CallKey: key, Root: f.root})
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Defects.Messages(); !slices.Equal(got, tt.defects) && !(len(got) == 0 && tt.defects == nil) {
				t.Fatalf("defects\n got %q\nwant %q", got, tt.defects)
			}
			if tt.defects != nil {
				if v.Packs != nil {
					t.Fatalf("packs with defects: %q", v.Packs)
				}
				return
			}
			if !slices.EqualFunc(v.Waves, tt.waves, slices.Equal) || len(v.Packs) != 2 || v.Decomposition.Tasks[1].Scope[0] != "main.go" ||
				!strings.HasPrefix(v.Packs[0], "Task add-max of plan add-max-0a1b2c, wave 1: calc.Max returns the larger int\n") ||
				!strings.Contains(v.Packs[0], "--- calc/calc.go:1-8 ---\npackage calc\n") ||
				!strings.Contains(v.Packs[0], "Scope (the only files you may change): calc/max.go (new), calc/max_test.go (new)\n") {
				t.Fatalf("verification %+v", v)
			}
		})
	}
}

// TestPlanVerifyRefuses: a call that is not the hand-back, a session the
// store does not hold, or a workspace that is not there is not the
// planner's to fix: each is a non-retryable error naming what it read. A
// file the plan cites that is not in the workspace is.
func TestPlanVerifyRefuses(t *testing.T) {
	f := newFixture(t, agenttest.Queue(writeCall("w1", `{"path":"a.txt","content":"one","mode":"create"}`)))
	key := f.handBack("local_write", "")
	a := &Plan{Store: f.acts.Store}
	_, err := a.Verify(t.Context(), workflows.PlanVerifyInput{Plan: "p", SessionID: f.id, CallKey: key, Root: f.root})
	assertAppError(t, err, workflows.ErrTypeSessionDiverged, "is local_write, not the planner's axlr_step_done")
	_, err = a.Verify(t.Context(), workflows.PlanVerifyInput{Plan: "p", SessionID: mustID(t), CallKey: key, Root: f.root})
	assertAppError(t, err, workflows.ErrTypeSessionDiverged, "is not in the store")

	g := newFixture(t, agenttest.Queue(agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "c1", Name: workflows.StepDoneTool, Arguments: planJSON}}}))
	key = g.handBack(workflows.StepDoneTool, planJSON)
	a = &Plan{Store: g.acts.Store}
	_, err = a.Verify(t.Context(), workflows.PlanVerifyInput{Plan: "p", SessionID: g.id, CallKey: key, Root: filepath.Join(g.root, "gone")})
	assertAppError(t, err, workflows.ErrTypeBadRequest, "open workspace "+filepath.Join(g.root, "gone"))
	// The workspace is there but empty: the cited file is the planner's
	// defect, not an error.
	v, err := a.Verify(t.Context(), workflows.PlanVerifyInput{Plan: "p", SessionID: g.id, CallKey: key, Root: g.root})
	if want := "task add-max: citation 1: cited file calc/calc.go does not exist; cite a file of the workspace"; err != nil || !slices.Equal(v.Defects.Messages(), []string{want}) {
		t.Fatalf("verification %+v, %v", v, err)
	}
}
