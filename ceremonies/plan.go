package ceremonies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A plan runs three definitions, each started by the plan's workflows
// (ForPlan), never by a session's --mode nor as a job:
//
//   - axlr_plan: the planner model decomposes the brief (decompose); AXLR
//     verifies the proposal and runs its commands once (verify), records
//     the person's decision (approve) and runs the waves (run);
//   - axlr_task: one task's worker, in a fresh session: AXLR's start, the
//     model's red (test-first tasks only) and green, AXLR's handback;
//   - axlr_sync: a wave's end-to-end check (integrate) and its
//     reconciliation rounds (reconcile), both AXLR's.
//
// What the model hands back is checked here for its shape and bounds; what
// the proposal means (slug ids, dependencies, waves, paths, citations,
// packs, commands) is the verify step's, without a model.

// The parts of a plan, each its own definition's Mode (ForPlan).
const (
	PartPlan = "plan"
	PartTask = "task"
	PartSync = "sync"
)

// Bounds of a plan's hand-backs.
const (
	// MaxTasks bounds a plan's tasks; MaxScope a task's scope paths (at
	// least one); MaxCitations its context citations.
	MaxTasks     = 12
	MaxScope     = 8
	MaxCitations = 8
	// MaxInterfacesChars bounds the interfaces a plan's tasks share.
	MaxInterfacesChars = 2048
	// MaxTestFiles bounds the test files a red step names (at least one).
	MaxTestFiles = 4
	// MaxNotes bounds a worker's notes and MaxNoteChars each note's text;
	// MaxQuestions its questions for the person, each at most
	// MaxNoteChars too.
	MaxNotes     = 4
	MaxNoteChars = 500
	MaxQuestions = 2
)

// NoteToAll addresses a note to every later task.
const NoteToAll = "all"

// PlanTask is one task of a plan as the planner hands it back, and as
// the plan's verification (package plans) and the task's worker read it.
// Lists are never nil in a validated hand-back.
type PlanTask struct {
	// ID is a slug (plans.ValidID), unique in the plan.
	ID   string `json:"id"`
	Goal string `json:"goal"`
	// Scope are the only workspace paths the task may change, 1 to
	// MaxScope of them; a path may name a file that does not exist yet.
	Scope []string `json:"scope"`
	// Context are the citations of the code the worker must read, at most
	// MaxCitations.
	Context   []Citation   `json:"context"`
	UnitCheck CheckCommand `json:"unit_check"`
	// DependsOn names the tasks that must finish before this one.
	DependsOn []string `json:"depends_on"`
	// TestFirst: the worker writes a failing test first (the red step).
	TestFirst bool `json:"test_first"`
	// Protect are files the task must leave intact (plans.MaxProtect).
	Protect []string `json:"protect"`
}

// Citation is a line of the workspace the worker must read: the verify
// step checks that the quote stands on it.
type Citation struct {
	Path  string `json:"path"`
	Line  int    `json:"line"`
	Quote string `json:"quote"`
}

// Note is a worker's note for a later task of its plan (To a task id), or
// for every one (To NoteToAll).
type Note struct {
	To   string `json:"to"`
	Text string `json:"text"`
}

// Response is one worker's answer in a reconciliation round: the files it
// changed (of its task's scope), what it did, and the notes it left.
type Response struct {
	Task    string   `json:"task"`
	Changed []string `json:"changed"`
	Summary string   `json:"summary"`
	Notes   []Note   `json:"notes"`
}

// noteTo is what a note may address: a task id (a slug) or all.
var noteTo = regexp.MustCompile(`^(all|[a-z0-9][a-z0-9-]{0,39})$`)

// noteLine is a note a reconciliation worker leaves in its answer.
var noteLine = regexp.MustCompile(`^NOTE (all|[a-z0-9][a-z0-9-]{0,39}):\s*(.+)$`)

// NoteLines reads the notes a reconciliation worker left in its answer,
// one a line: NOTE <task>: text, or NOTE all: text. The first MaxNotes are
// kept, each text cut to MaxNoteChars characters.
func NoteLines(answer string) []Note {
	notes := []Note{}
	for line := range strings.Lines(answer) {
		m := noteLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		text := strings.TrimSpace(m[2])
		if r := []rune(text); len(r) > MaxNoteChars {
			text = string(r[:MaxNoteChars])
		}
		notes = append(notes, Note{To: m[1], Text: text})
		if len(notes) == MaxNotes {
			break
		}
	}
	return notes
}

// countItems checks a list's length against the field's bounds.
func countItems(f Field, n int, what string) error {
	switch {
	case n < f.MinItems && f.MinItems == 1:
		return fmt.Errorf("holds no %s; give at least one", what)
	case n < f.MinItems:
		return fmt.Errorf("holds %d %s; at least %d", n, what, f.MinItems)
	case f.MaxItems > 0 && n > f.MaxItems:
		return fmt.Errorf("holds %d %s; at most %d", n, what, f.MaxItems)
	}
	return nil
}

func decodeTextList(f Field, raw json.RawMessage, compact bool) ([]string, error) {
	var items []string
	if err := json.Unmarshal(raw, &items); err != nil {
		var one string
		if !compact || json.Unmarshal(raw, &one) != nil {
			return nil, errors.New("must be an array of strings")
		}
		items = []string{one}
	}
	out := make([]string, 0, len(items))
	for i, s := range items {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("item %d must not be empty", i+1)
		}
		if err := boundText(f, s); err != nil {
			return nil, fmt.Errorf("item %d %w", i+1, err)
		}
		out = append(out, s)
	}
	if err := countItems(f, len(out), "items"); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeNotes(f Field, raw json.RawMessage) ([]Note, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New(`must be an array of {"to": "<task id> or all", "text": "..."}`)
	}
	if err := countItems(f, len(items), "notes"); err != nil {
		return nil, err
	}
	notes := make([]Note, 0, len(items))
	for i, item := range items {
		var n Note
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&n); err != nil {
			return nil, fmt.Errorf(`note %d must be {"to": "<task id> or all", "text": "..."}: %v`, i+1, err)
		}
		n.To, n.Text = strings.TrimSpace(n.To), strings.TrimSpace(n.Text)
		switch {
		case !noteTo.MatchString(n.To):
			return nil, fmt.Errorf("note %d: to %q must be a task id of the plan or %q", i+1, n.To, NoteToAll)
		case n.Text == "":
			return nil, fmt.Errorf("note %d: text must not be empty", i+1)
		}
		if err := boundText(f, n.Text); err != nil {
			return nil, fmt.Errorf("note %d: text %w", i+1, err)
		}
		notes = append(notes, n)
	}
	return notes, nil
}

func decodeTasks(f Field, raw json.RawMessage, compact bool) ([]PlanTask, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("must be an array of tasks {id, goal, scope, context, unit_check, depends_on, test_first, protect}")
	}
	if err := countItems(f, len(items), "tasks"); err != nil {
		return nil, err
	}
	tasks := make([]PlanTask, 0, len(items))
	for i, item := range items {
		t, err := decodeTask(item, compact)
		if err != nil {
			name := fmt.Sprintf("task %d", i+1)
			if t.ID != "" {
				name += fmt.Sprintf(" (%s)", t.ID)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// decodeTask reads one task; on an error the task holds its id when the
// id could be read.
func decodeTask(raw json.RawMessage, compact bool) (PlanTask, error) {
	var in struct {
		ID        string          `json:"id"`
		Goal      string          `json:"goal"`
		Scope     []string        `json:"scope"`
		Context   []Citation      `json:"context"`
		UnitCheck json.RawMessage `json:"unit_check"`
		DependsOn []string        `json:"depends_on"`
		TestFirst bool            `json:"test_first"`
		Protect   []string        `json:"protect"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var named struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &named) // the id names the task when it reads
		return PlanTask{ID: strings.TrimSpace(named.ID)}, fmt.Errorf("must be {id, goal, scope, context, unit_check, depends_on, test_first, protect}: %v", err)
	}
	t := PlanTask{ID: strings.TrimSpace(in.ID), Goal: strings.TrimSpace(in.Goal), TestFirst: in.TestFirst}
	switch {
	case t.ID == "":
		return t, errors.New("id must not be empty")
	case t.Goal == "":
		return t, errors.New("goal must not be empty")
	case len(t.Goal) > MaxFieldBytes || !utf8.ValidString(t.Goal):
		return t, fmt.Errorf("goal must be valid UTF-8 of at most %d KiB", MaxFieldBytes>>10)
	case len(in.Scope) == 0:
		return t, errors.New("scope holds no path; give the files the task may change, at least one")
	case len(in.Scope) > MaxScope:
		return t, fmt.Errorf("scope lists %d paths; split the task (at most %d)", len(in.Scope), MaxScope)
	case len(in.Context) > MaxCitations:
		return t, fmt.Errorf("context holds %d citations; at most %d", len(in.Context), MaxCitations)
	case len(in.UnitCheck) == 0 || string(in.UnitCheck) == "null":
		return t, errors.New(`unit_check is missing: {"program": "...", "args": ["..."]}`)
	}
	var err error
	if t.Scope, err = trimmedList("scope", in.Scope); err != nil {
		return t, err
	}
	if t.DependsOn, err = trimmedList("depends_on", in.DependsOn); err != nil {
		return t, err
	}
	if t.Protect, err = trimmedList("protect", in.Protect); err != nil {
		return t, err
	}
	t.Context = make([]Citation, 0, len(in.Context))
	for i, c := range in.Context {
		c.Path = strings.TrimSpace(c.Path)
		switch {
		case c.Path == "":
			return t, fmt.Errorf("citation %d: path must not be empty", i+1)
		case c.Line < 1:
			return t, fmt.Errorf("citation %d (%s): line must be a line number, from 1", i+1, c.Path)
		case strings.TrimSpace(c.Quote) == "":
			return t, fmt.Errorf("citation %d (%s:%d): quote must not be empty", i+1, c.Path, c.Line)
		}
		t.Context = append(t.Context, c)
	}
	if t.UnitCheck, err = decodeCommand(in.UnitCheck, compact); err != nil {
		return t, fmt.Errorf("unit_check: %w", err)
	}
	return t, nil
}

// trimmedList trims a task's list of paths or ids, refusing an empty
// one; nil becomes empty.
func trimmedList(name string, in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for i, p := range in {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%s item %d must not be empty", name, i+1)
		}
		out = append(out, p)
	}
	return out, nil
}

// What the planner and a task's worker hand back.
var (
	fTasks = Field{Name: "tasks", Type: Tasks, MinItems: 1, MaxItems: MaxTasks,
		Description: "The plan's tasks, 1 to 12: {id (a slug, unique), goal, scope (1 to 8 paths, the only files the task may change), context (up to 8 citations {path, line, quote}, each quote at least 12 characters as it stands on the line), unit_check {program, args}, depends_on (task ids), test_first (a failing test first; the scope then holds a test file and a file that is not one), protect (files the task must not change)}."}
	fE2ECheck   = Field{Name: "e2e_check", Type: Command, Description: `The check of the whole plan, run after each wave, as argv without a shell: {"program": "go", "args": ["test", "./..."]}.`}
	fInterfaces = Field{Name: "interfaces", Type: Text, MaxChars: MaxInterfacesChars, Description: "Optional: the names and signatures the tasks share, at most 2048 characters."}

	fTestFiles  = Field{Name: "test_files", Type: TextList, MinItems: 1, MaxItems: MaxTestFiles, Description: "The test files of the task's scope you changed, 1 to 4 paths."}
	fRedExpect  = Field{Name: "expected", Type: Text, Description: "What the unit check shows until the code exists."}
	fTestable   = Field{Name: "testable", Type: Bool, Description: "false when no test the unit check runs can show the goal (then give observed)."}
	fUntestable = Field{Name: "observed", Type: Text, Description: "Why no test the unit check runs can show the goal."}
	fNotes      = Field{Name: "notes", Type: Notes, MaxItems: MaxNotes, MaxChars: MaxNoteChars,
		Description: `Optional: notes for later tasks, at most 4: [{"to": "<task id> or all", "text": "at most 500 characters"}].`}
	fQuestions = Field{Name: "questions", Type: TextList, MaxItems: MaxQuestions, MaxChars: MaxNoteChars, Description: "Optional: questions for the person, at most 2, each at most 500 characters."}
)

// What AXLR records at the plan's, the tasks' and the syncs' console steps:
// the step's output in MADE, which the guards read. A field a case does
// not give is left out.
var (
	rVerifyVerdict = Field{Name: "verdict", Type: Text, Values: []string{VerdictVerified, VerdictDefects, VerdictBlocked},
		Description: "verified: no defect, and every command ran once (the baseline); defects: back to the planner; blocked: the third unverified round since the plan began or was last returned."}
	rVerifyRound = Field{Name: "round", Type: Int, Description: "The proposal's round since the plan began or was last returned, from 1."}
	rDefects     = Field{Name: "defects", Type: TextList, Description: `The defects the planner is told, each naming its task ("task add-max: ..."; "plan: ..." for the plan's own), the first 12 then "and N more defects".`}
	rWaves       = Field{Name: "waves", Type: Int, Description: "The plan's waves, computed from the tasks' dependencies."}
	rBaseline    = Field{Name: "baseline", Type: CheckRuns, Description: "Each command's run: each task's unit_check by its id, the plan's e2e_check under e2e_check."}

	rPlanDecision = Field{Name: "decision", Type: Text, Values: []string{DecisionApprove, DecisionAutomatic, DecisionReturn, DecisionDecline},
		Description: "approve: the person approved, and AXLR grants the human guard through the approver identity; automatic: plan.auto_approve is set; return: back to the planner with the reason, at most twice; decline: the plan ends DECLINED with the reason."}
	rPlanReason = Field{Name: "reason", Type: Text, Description: "The person's reason to return or decline the plan."}
	rReturns    = Field{Name: "returns", Type: Int, Description: "How often the person returned the plan, this decision included."}

	rOutcome = Field{Name: "outcome", Type: Text, Values: []string{OutcomeDone, OutcomePartial},
		Description: "done: every task done and every wave synced; partial: a task blocked or skipped, or a sync not green."}
	rSynced    = Field{Name: "synced", Type: Int, Description: "The waves whose sync ended SYNCED."}
	rDoneTasks = Field{Name: "done", Type: TextList, Description: "The tasks done."}
	rBlocked   = Field{Name: "blocked", Type: TextList, Description: "The tasks blocked, each as <id>: <reason>."}
	rSkipped   = Field{Name: "skipped", Type: TextList, Description: "The tasks skipped, each as <id>: depends on <id>, which did not finish."}
	rChanged   = Field{Name: "changed", Type: TextList, Description: "The workspace files the plan's tasks changed."}
	rRevision  = Field{Name: "revision", Type: Text, Description: "git rev-parse HEAD in the workspace; left out without Git."}
	rRunReason = Field{Name: "reason", Type: Text, Description: "Why the plan is partial."}

	rStarted       = Field{Name: "started", Type: Bool, Description: "true when the digests are recorded and the unit check ran; false when it could not run (then reason)."}
	rTestFirst     = Field{Name: "test_first", Type: Bool, Description: "The task's test_first, copied from the plan: true goes to red, false to green."}
	rDigests       = Field{Name: "digests", Type: Digests, Description: "The SHA-256 digests at the start of the task's scope and protected files and of the files already changed."}
	rChangedBefore = Field{Name: "changed_before", Type: TextList, Description: "The files git status showed changed at the start (earlier tasks' work), which are not this task's changes."}
	rBaselineCheck = Field{Name: "check", Type: CheckRun, Description: "The unit check's baseline run."}
	rStartReason   = Field{Name: "reason", Type: Text, Description: "Why the unit check could not run."}

	rHandedBack   = Field{Name: "done", Type: Bool, Description: "true when the hand-back is recorded."}
	rChangedFiles = Field{Name: "changed_files", Type: TextList, Description: "The files the task changed since its start."}
	rScopeBy      = Field{Name: "scope_checked_by", Type: Text, Values: []string{ScopeByGit, ScopeByDigests},
		Description: "git: the changes were read from git status; digests: without Git, from the digests of the start."}
	rNotes     = Field{Name: "notes", Type: Notes, Description: "The green step's notes for later tasks."}
	rQuestions = Field{Name: "questions", Type: TextList, Description: "The green step's questions for the person."}

	rSyncVerdict = Field{Name: "verdict", Type: Text, Values: []string{VerdictGreen, VerdictRed, VerdictBlocked},
		Description: "green: the end-to-end check exited zero; red: it failed while a reconciliation round remains (at most two); blocked: it failed after the second round, or did not run (then reason)."}
	rSyncRound  = Field{Name: "round", Type: Int, Description: "The run of the end-to-end check, from 1; a reconciliation round adds one."}
	rE2ERun     = Field{Name: "check", Type: CheckRun, Description: "The end-to-end check's run."}
	rAffected   = Field{Name: "affected", Type: TextList, Description: "The tasks a red check affects: those whose scope path or its base name the failing output names, else every task of the wave."}
	rSyncReason = Field{Name: "reason", Type: Text, Description: "Why the sync is blocked."}
	rReconciled = Field{Name: "reconciled", Type: Bool, Description: "true when every affected task's worker answered, or ended (then its response says how)."}
	rRecRound   = Field{Name: "round", Type: Int, Description: "The reconciliation round, 1 or 2."}
	rResponses  = Field{Name: "responses", Type: Responses, Description: "Each worker's {task, changed, summary, notes}."}
)

// Values of the plan's, the tasks' and the syncs' console records.
const (
	VerdictVerified = "verified"
	VerdictDefects  = "defects"
	DecisionReturn  = "return"
	OutcomeDone     = "done"
	OutcomePartial  = "partial"
	ScopeByGit      = "git"
	ScopeByDigests  = "digests"
)

// MaxReturns is how often the person may return a plan to the planner,
// or an incident's draft to its author (DecisionReturn); the next denial
// of a draft declines it.
const MaxReturns = 2

// PlanApprovalGuard is the guard the person grants at a plan's approval,
// through ApproverRole's identity: only that role may fire approved.
const PlanApprovalGuard = "person_approves"

func init() {
	steps["axlr_plan 1.0"] = []Step{
		{ID: "decompose", Fields: []Field{fTasks, fE2ECheck, fInterfaces, fSummaryEn},
			Requires: [][]string{{"tasks", "e2e_check", "summary_en"}}, Outcome: "proposed", ReadOnly: true,
			Compact: `Example: axlr_step_done({"tasks": [{"id": "add-max", "goal": "calc.Max returns the larger int", "scope": ["calc/max.go", "calc/max_test.go"], "unit_check": {"program": "go", "args": ["test", "./calc"]}, "test_first": true}], "e2e_check": {"program": "go", "args": ["test", "./..."]}, "summary_en": "Adds calc.Max."}). Change nothing; AXLR verifies the plan and runs each command once.`},
		{ID: "verify", Console: true, Records: []Field{rVerifyVerdict, rVerifyRound, rDefects, rWaves, rBaseline}},
		{ID: "approve", Console: true, Records: []Field{rPlanDecision, rPlanReason, rReturns}},
		{ID: "run", Console: true, Records: []Field{rOutcome, rWaves, rSynced, rDoneTasks, rBlocked, rSkipped, rChanged, rRevision, rRunReason}},
	}
	steps["axlr_task 1.0"] = []Step{
		{ID: "start", Console: true, Records: []Field{rStarted, rTestFirst, rDigests, rChangedBefore, rBaselineCheck, rStartReason}},
		{ID: "red", Fields: []Field{fTestFiles, fRedExpect, fTestable, fUntestable},
			Requires: [][]string{{"test_files", "expected"}, {"testable", "observed"}}, Check: CheckRed, Outcome: "red", TestFilesOnly: true,
			Compact: `Example: axlr_step_done({"test_files": ["calc/max_test.go"], "expected": "TestMax fails: Max is undefined"}). Write only the test; AXLR runs the unit check, which must fail now. Or send testable: false with observed.`},
		{ID: "green", Fields: []Field{fSummary, fSummaryEn, fNotes, fQuestions},
			Requires: [][]string{{"summary", "summary_en"}}, Check: CheckGreen, Outcome: "green",
			Compact: `Example: axlr_step_done({"summary": "Max returns the larger int", "summary_en": "Added calc.Max.", "notes": [{"to": "all", "text": "calc.Max(a, b int) int exists"}]}). Change only the task's scope; AXLR runs the unit check, which must pass. notes and questions are optional.`},
		{ID: "handback", Console: true, Records: []Field{rHandedBack, rChangedFiles, rRevision, rScopeBy, rNotes, rQuestions}},
	}
	steps["axlr_sync 1.0"] = []Step{
		{ID: "integrate", Console: true, Records: []Field{rSyncVerdict, rSyncRound, rE2ERun, rAffected, rSyncReason}},
		{ID: "reconcile", Console: true, Records: []Field{rReconciled, rRecRound, rResponses}},
	}
}
