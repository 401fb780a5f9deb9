package ceremonies

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Check is what AXLR runs itself when a step is handed back.
type Check string

// Checks.
const (
	// CheckNone runs nothing.
	CheckNone Check = ""
	// CheckReproduce runs the hand-back's command, approved by the person;
	// the failure is reproduced when it exits nonzero.
	CheckReproduce Check = "reproduce"
	// CheckBaseline runs the hand-back's command, approved by the person,
	// once as the baseline; any exit is recorded.
	CheckBaseline Check = "baseline"
	// CheckRerun reruns the saved command; the step passes when it exits
	// zero. A command the model hands back is ignored.
	CheckRerun Check = "rerun"
	// CheckRevision records git rev-parse HEAD and git status --porcelain.
	CheckRevision Check = "revision"
	// CheckMissing runs the hand-back's command, approved by the person,
	// on a clean tree (the driver refuses the hand-back while git status
	// --porcelain shows a change) to show that an improvement is missing:
	// the step's outcome holds when the command exits nonzero, or when it
	// is a go test run that matched no test ([no tests to run], NoTestsRun),
	// which is how a test the build step will add shows the improvement
	// missing. A command that already passes is sent back.
	CheckMissing Check = "missing"
	// CheckPresent reruns the saved command; the step passes when it exits
	// zero and ran a test (not NoTestsRun): the improvement is present. A
	// command the model hands back is ignored.
	CheckPresent Check = "present"
	// CheckRed is a plan task's red step: the hand-back's test_files must
	// be paths of the task's scope that are test files and changed since
	// the task's start, else the round fails without a run (the outcome
	// false, the files named in the reply); then AXLR runs the task's unit
	// check, approved with the plan (no command is handed back), and the
	// step's outcome holds when it exits nonzero. The test files' digests
	// are then frozen for the green step.
	CheckRed Check = "red"
	// CheckGreen is a plan task's green step: the frozen test files and
	// the protected files must be intact and every change since the start
	// inside the task's scope (git status, less the files changed before
	// the start; without Git, the digests only), else the round fails
	// without a run (the outcome false, the files named in the reply);
	// then AXLR runs the task's unit check, and the step's outcome holds
	// when it exits zero and ran a test (not NoTestsRun).
	CheckGreen Check = "green"
	// CheckIncident is an incident's step's check: its session host checks
	// the hand-back against the workspace and the day (IncidentRules), and
	// records the draft's digest or publishes the approved bytes.
	CheckIncident Check = "incident"
)

// Holds reports whether a run of the check, which exited with exit and
// printed output, did what its step needs: reproduce and red, that it
// failed; missing, that it failed or ran no test; rerun, that it passed;
// present and green, that it passed and ran a test; baseline, revision and
// none, that it ran.
func (c Check) Holds(exit int, output string) bool {
	switch c {
	case CheckReproduce, CheckRed:
		return exit != 0
	case CheckMissing:
		return exit != 0 || NoTestsRun(output)
	case CheckRerun:
		return exit == 0
	case CheckPresent, CheckGreen:
		return exit == 0 && !NoTestsRun(output)
	}
	return true
}

// Proposes reports whether the step's hand-back proposes the check
// command, which the person approves before it runs; the later steps
// rerun the one accepted.
func (c Check) Proposes() bool { return c == CheckReproduce || c == CheckBaseline || c == CheckMissing }

// Hosted reports whether the check is its ceremony's host's to run, not
// the driver's: a plan task's red and green, which the task's worker
// checks against the task's files, and an incident's, which read the
// workspace.
func (c Check) Hosted() bool { return c == CheckRed || c == CheckGreen || c == CheckIncident }

// Judgement is what one run of a step's check means for the step.
type Judgement struct {
	// Holds is the step's outcome.
	Holds bool
	// Settles: the check settles the step (reproduce, missing), and the
	// step records settled as Holds.
	Settles bool
	// Feedback tells the model what the run showed when the step is not
	// done; empty when it is.
	Feedback string
}

// Judge judges a run of the check that exited with exit and printed
// output (its tail). It is pure: the driver calls it from workflow code.
// A check that records rather than judges (baseline, revision, none)
// holds.
func (c Check) Judge(exit int, output string) Judgement {
	holds := c.Holds(exit, output)
	j := Judgement{Holds: holds, Settles: c == CheckReproduce || c == CheckMissing}
	switch {
	case holds:
	case c == CheckReproduce:
		j.Feedback = fmt.Sprintf("The command exited %d: the failure is not reproduced. ", exit)
	case c == CheckMissing:
		j.Feedback = fmt.Sprintf("The command exited %d and ran tests: the improvement is not missing. Hand back a check that fails until the improvement is built. ", exit)
	case exit != 0:
		j.Feedback = fmt.Sprintf("The command exited %d: the step is not done. ", exit)
	case c == CheckPresent:
		j.Feedback = "The command passed but ran no test ([no tests to run]): add the test the brief's check names. "
	}
	return j
}

// ReadRevision reads the output of the revision check (CheckRevision):
// HEAD on the first line, then git status --porcelain.
func ReadRevision(output string) (head, dirty string) {
	head, dirty, _ = strings.Cut(output, "\n")
	return strings.TrimSpace(head), dirty
}

// NoTestsRun reports whether output is a go test run that matched no
// test: a package reports [no tests to run] and none reports a run (an
// "ok" line without that mark; a package without test files prints "?").
func NoTestsRun(output string) bool {
	const mark = "[no tests to run]"
	marked := false
	for line := range strings.Lines(output) {
		line = strings.TrimSpace(line)
		switch {
		case strings.Contains(line, mark):
			marked = true
		case strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "ok\t"):
			return false
		}
	}
	return marked
}

// FieldType is the JSON shape of a hand-back field.
type FieldType string

// Field types. Int, Digests, CheckRun, CheckRuns and Responses describe
// only what AXLR records at a console step: a model's hand-back never
// carries them.
const (
	Text     FieldType = "text"      // a non-empty string
	Bool     FieldType = "bool"      // true or false
	Command  FieldType = "command"   // {program, args}
	Links    FieldType = "links"     // [{ref, rel, why, evidence?}], at most MaxLinks
	Int      FieldType = "int"       // an integer
	TextList FieldType = "text_list" // [string], each non-empty
	// Tasks are a plan's tasks: [PlanTask].
	Tasks FieldType = "tasks"
	// Notes are a worker's notes for later tasks: [Note].
	Notes FieldType = "notes"
	// Digests are files' SHA-256 digests in hex by workspace path, "" for
	// a file that does not exist.
	Digests FieldType = "digests"
	// CheckRun is one run of a command as the check's record holds it:
	// {program, args, exit_code, output_tail}.
	CheckRun FieldType = "check_run"
	// CheckRuns are check runs by a key the field names.
	CheckRuns FieldType = "check_runs"
	// Responses are a reconciliation round's: [Response].
	Responses FieldType = "responses"
	// Timeline is an incident's timeline: [TimelineEntry].
	Timeline FieldType = "timeline"
	// Actions are an incident's actions: [Action].
	Actions FieldType = "actions"
	// Findings are a review's findings: [string], at most MaxFindings.
	Findings FieldType = "findings"
)

// Field is one field the model hands back, or that AXLR records at a
// console step.
type Field struct {
	Name        string
	Type        FieldType
	Description string
	// Values are the only values a recorded text field takes; empty: any.
	Values []string `json:",omitempty"`
	// MinItems and MaxItems bound a list's items (MaxItems zero: no bound
	// but the type's own); MaxChars bounds a text's characters, or each
	// item's text (zero: MaxFieldBytes bytes only).
	MinItems int `json:",omitempty"`
	MaxItems int `json:",omitempty"`
	MaxChars int `json:",omitempty"`
}

// Link is one connect_to link a diagnosis proposes: from the cause to a
// memory the wake showed (Ref), by a KMP relation name (Rel). The shape is
// checked here; the driver refuses, and names in its reply, a link to a
// ref the wake did not show or with a relation KMP does not know.
type Link struct {
	Ref      string `json:"ref"`
	Rel      string `json:"rel"`
	Why      string `json:"why"`
	Evidence string `json:"evidence,omitempty"`
}

// MaxLinks bounds a connect_to field.
const MaxLinks = 8

// Step is what the driver knows of a definition's step.
type Step struct {
	ID     string
	Fields []Field
	// Requires lists alternative sets of fields: a hand-back must carry
	// every field of one of them.
	Requires [][]string
	Check    Check
	// Outcome is the boolean AXLR records in the step's output: true for a
	// step without a check; for a check, whether it did what the step
	// needs (reproduce: exit nonzero; rerun: exit zero; baseline: ran).
	Outcome string
	// ReadOnly steps cannot write under the compact profile.
	ReadOnly bool
	// Compact is the compact profile's instruction: under 500 bytes,
	// leading with one exact example call.
	Compact string
	// Console steps are AXLR's own: the job's workflow runs them without
	// the model, so the driver never offers them to it, Validate refuses a
	// hand-back of them, and they have no Fields, Requires, Check, Outcome
	// or Compact. Records are what the workflow records as the step's
	// output, which the definition's guards read.
	Console bool    `json:",omitempty"`
	Records []Field `json:",omitempty"`
	// TestFilesOnly: local_write and local_edit reach only test files in
	// this step (a plan task's red), under every profile.
	TestFilesOnly bool `json:",omitempty"`
	// Lease is the claim's lease of a console step that waits for the
	// person longer than the step timeout (an incident's approval); zero:
	// the step timeout.
	Lease time.Duration `json:",omitempty"`
}

// MaxFieldBytes bounds a text field of a hand-back.
const MaxFieldBytes = 16 << 10

var (
	fCheck      = Field{Name: "check_command", Type: Command, Description: `The command that shows the failure, as argv without a shell: {"program": "go", "args": ["test", "./parser"]}.`}
	fExpected   = Field{Name: "expected", Type: Text, Description: "What a passing run would show."}
	fObserved   = Field{Name: "observed", Type: Text, Description: "What the run shows now."}
	fRepro      = Field{Name: "reproducible", Type: Bool, Description: "false when the failure cannot be reproduced (then give observed)."}
	fRootCause  = Field{Name: "root_cause", Type: Text, Description: "The root cause of the failure."}
	fEvidence   = Field{Name: "evidence", Type: Text, Description: "What in the code or the output shows the root cause."}
	fFix        = Field{Name: "proposed_fix", Type: Text, Description: "The change that will fix it."}
	fSummary    = Field{Name: "summary", Type: Text, Description: "What you changed."}
	fReport     = Field{Name: "report", Type: Text, Description: "What was wrong or asked, what changed, how it was verified."}
	fSummaryEn  = Field{Name: "summary_en", Type: Text, Description: "One English sentence summing up the outcome."}
	fCriteria   = Field{Name: "criteria", Type: Text, Description: "What done means for this task."}
	fScope      = Field{Name: "scope", Type: Text, Description: "The files or areas the change touches."}
	fBriefCheck = Field{Name: "check_command", Type: Command, Description: `The command that will exit zero once the task is done, as argv without a shell: {"program": "go", "args": ["test", "./..."]}.`}
	fRerun      = Field{Name: "check_command", Type: Command, Description: "Ignored: AXLR reruns the command accepted earlier."}

	fConnectTo      = Field{Name: "connect_to", Type: Links, Description: "Optional: links from the cause to memories the wake showed, at most 8: [{ref, rel, why, evidence}], ref one the wake listed, rel a KMP relation name (supports, depends_on, contradicts...)."}
	fRepairSummary  = Field{Name: "summary", Type: Text, Description: "What you changed; the pull request carries it."}
	fMissingCheck   = Field{Name: "check_command", Type: Command, Description: `The command that fails now because the improvement is missing and will exit zero once it is made, as argv without a shell: {"program": "go", "args": ["test", "-run", "TestLogTail", "./tools"]}.`}
	fFeasible       = Field{Name: "feasible", Type: Bool, Description: "false when the improvement exists already or cannot be made safely as a small change (then give observed)."}
	fInfeasible     = Field{Name: "observed", Type: Text, Description: "Why the improvement exists already or cannot be made safely."}
	fImproveSummary = Field{Name: "summary", Type: Text, Description: "What you changed; its first sentence titles the pull request."}
	fImproveRerun   = Field{Name: "check_command", Type: Command, Description: "Ignored: AXLR reruns the brief's command."}
)

// What AXLR records at the console steps of the jobs' definitions: the
// step's output in MADE, which the guards read (output_field:<step>:
// <field>=<value>). A field a case does not give is left out.
var (
	rProposed    = Field{Name: "proposed", Type: Bool, Description: "true when the pull request is open for the pushed head; false when it could not be (then error)."}
	rPullRequest = Field{Name: "pull_request", Type: Int, Description: "The pull request's number."}
	rURL         = Field{Name: "url", Type: Text, Description: "The pull request's web address."}
	rHeadSHA     = Field{Name: "head_sha", Type: Text, Description: "The pull request's head commit the step acted on."}
	rRound       = Field{Name: "round", Type: Int, Description: "The check round, from 1; each red round sent back adds one."}
	rRerun       = Field{Name: "rerun", Type: Bool, Description: "true when the model changed no file this round and the failed jobs were rerun on the same head instead of a new commit."}
	rError       = Field{Name: "error", Type: Text, Description: "Why the step failed, as the forge or git said it."}
	rVerdict     = Field{Name: "verdict", Type: Text, Values: []string{VerdictGreen, VerdictRed, VerdictBlocked},
		Description: "green: every check passed (none pending or failed, at least one passed) and the merge state is CLEAN, HAS_HOOKS or UNSTABLE; red: a check failed (back to the model, at most twice); blocked: the third red round, a stall past repair.watch_minutes, a conflict, the pull request closed or merged outside, or a forge that cannot be read (then reason)."}
	rUpdated  = Field{Name: "updated", Type: Bool, Description: "true when the branch was behind its base and was updated this round."}
	rPassed   = Field{Name: "passed", Type: TextList, Description: "The names of the checks that passed."}
	rFailed   = Field{Name: "failed", Type: TextList, Description: "The names of the checks that failed (red), which the model is told."}
	rReason   = Field{Name: "reason", Type: Text, Description: "Why the watch ended blocked, or why the merge was declined."}
	rDecision = Field{Name: "decision", Type: Text, Values: []string{DecisionAutomatic, DecisionApprove, DecisionDecline},
		Description: "automatic: repair.auto_merge is set (repair only); approve: the person approved, and AXLR grants the human guard through the approver identity; decline: the person declined, or the candidate did not build (then reason)."}
	rImproveDecision = Field{Name: "decision", Type: Text, Values: []string{DecisionApprove, DecisionDecline},
		Description: "approve: the person approved, and AXLR grants the human guard through the approver identity; decline: the person declined, or the candidate did not build (then reason). An improvement has no automatic merge."}
	rMerged   = Field{Name: "merged", Type: Bool, Description: "true when the pull request was squash-merged and its branch deleted; false when the merge failed (then error)."}
	rMergeSHA = Field{Name: "merge_sha", Type: Text, Description: "The merge commit."}
)

// Values of the console steps' records.
const (
	VerdictGreen      = "green"
	VerdictRed        = "red"
	VerdictBlocked    = "blocked"
	DecisionAutomatic = "automatic"
	DecisionApprove   = "approve"
	DecisionDecline   = "decline"
)

// The guard a person grants at the merge decision, and the role whose
// identity grants it (made_approve_ceremony_guard with role_kind human):
// only that role may fire merge_approved, so MADE records who merged.
const (
	MergeApprovalGuard = "person_approves"
	ApproverRole       = "HUMAN_APPROVER"
)

// jobConsole are the console steps both jobs' definitions end with; the
// decide step's decision differs.
func jobConsole(decision Field) []Step {
	return []Step{
		{ID: "propose", Console: true, Records: []Field{rProposed, rPullRequest, rURL, rHeadSHA, rRound, rRerun, rError}},
		{ID: "watch", Console: true, Records: []Field{rVerdict, rPullRequest, rHeadSHA, rRound, rUpdated, rPassed, rFailed, rReason}},
		{ID: "decide", Console: true, Records: []Field{decision, rReason, rPullRequest, rHeadSHA}},
		{ID: "merge", Console: true, Records: []Field{rMerged, rMergeSHA, rPullRequest, rError}},
	}
}

// What AXLR records at each turn of a session's record (axlr_session
// 1.0): the turn's record as the seed lists it. Effects and decisions are
// lists of {tool, what, why, status, decision, exit_code, tail}.
var sessionTurn = Step{ID: SessionTurnStep, Console: true, Records: []Field{
	{Name: "turn", Type: Int, Description: "The turn's number in the session, from 1."},
	{Name: "prompt", Type: Text, Description: "The person's prompt, at most 500 bytes."},
	{Name: "answer", Type: Text, Description: "The model's answer to the person, at most 500 bytes."},
	{Name: "side_effects", Type: Text, Description: "Each file written, command run and external call, with its why, its decision, its outcome and, for a command, its exit code and the redacted tail of its output."},
	{Name: "decisions", Type: Text, Description: "Each decision on a call (approve, auto_approve, deny) with its outcome (completed, failed, denied, cancelled, rejected, over_budget)."},
	{Name: "memories", Type: TextList, Description: "The refs of the memories the turn recorded."},
	{Name: "reads", Type: Int, Description: "How many reads the turn made."},
	{Name: "mode", Type: Text, Description: "The work mode the turn ran in."},
	{Name: "model", Type: Text, Description: "The model."},
	{Name: "about", Type: Text, Description: "The workspace's memory about."},
	{Name: "status", Type: Text, Description: "How the turn's execution ended, or interrupted."},
	{Name: "requests", Type: Int, Description: "The turn's model requests."},
	{Name: "cost_usd", Type: Text, Description: "The turn's cost, and its share of the session's requests and cost."},
	{Name: "interrupted", Type: Bool, Description: "true for a turn whose end was never recorded: completed at the next prompt."},
	{Name: "closing", Type: Bool, Description: "true for the closing turn, which carries summary."},
	{Name: "summary", Type: Text, Description: "The session's summary, on the closing turn."},
}}

// steps are the driver's view of each pinned definition's steps, by name
// and version. A version's steps never change once it is published: the
// runs in flight read them, and TestStepsPinned holds their digests. A
// change is a new version with its own entry, beside the old one for as
// long as runs of it may be in flight.
var steps = map[string][]Step{
	"axlr_session 1.0": {sessionTurn},
	"axlr_debug 2.0": {
		{ID: "reproduce", Fields: []Field{fCheck, fExpected, fObserved, fRepro},
			Requires: [][]string{{"check_command", "expected", "observed"}, {"reproducible", "observed"}},
			Check:    CheckReproduce, Outcome: "reproduced", ReadOnly: true,
			Compact: `Example: axlr_step_done({"check_command": {"program": "go", "args": ["test", "./parser"]}, "expected": "ok", "observed": "FAIL TestParse"}). Find a command that exits nonzero because of the failure; or send reproducible: false with observed.`},
		{ID: "diagnose", Fields: []Field{fRootCause, fEvidence, fFix},
			Requires: [][]string{{"root_cause", "evidence", "proposed_fix"}}, Outcome: "diagnosed", ReadOnly: true,
			Compact: `Example: axlr_step_done({"root_cause": "Parse indexes an empty slice", "evidence": "parser.go:42 reads s[0]", "proposed_fix": "return an error when s is empty"}). Read the code; change nothing.`},
		{ID: "repair", Fields: []Field{fSummary, fRerun},
			Requires: [][]string{{"summary"}}, Check: CheckRerun, Outcome: "repaired",
			Compact: `Example: axlr_step_done({"summary": "Parse returns ErrEmpty for empty input"}). Fix the code; AXLR reruns the reproduction command, which must exit zero.`},
		{ID: "integrate", Fields: []Field{fReport, fSummaryEn},
			Requires: [][]string{{"report", "summary_en"}}, Check: CheckRevision, Outcome: "integrated",
			Compact: `Example: axlr_step_done({"report": "TestParse failed on empty input; Parse now returns ErrEmpty; go test passes", "summary_en": "Fixed Parse on empty input."}). Do not commit.`},
	},
	"axlr_delivery 2.0": {
		{ID: "brief", Fields: []Field{fCriteria, fScope, fBriefCheck},
			Requires: [][]string{{"criteria", "scope", "check_command"}}, Check: CheckBaseline, Outcome: "ready", ReadOnly: true,
			Compact: `Example: axlr_step_done({"criteria": "a CHANGELOG entry for 1.2", "scope": "CHANGELOG.md", "check_command": {"program": "grep", "args": ["-q", "## 1.2", "CHANGELOG.md"]}}). Change nothing yet.`},
		{ID: "build", Fields: []Field{fSummary, fRerun},
			Requires: [][]string{{"summary"}}, Check: CheckRerun, Outcome: "verified",
			Compact: `Example: axlr_step_done({"summary": "Added the 1.2 entry"}). Make the change; AXLR reruns the brief's command, which must exit zero.`},
		{ID: "integrate", Fields: []Field{fReport, fSummaryEn},
			Requires: [][]string{{"report", "summary_en"}}, Check: CheckRevision, Outcome: "integrated",
			Compact: `Example: axlr_step_done({"report": "Added the 1.2 entry; grep finds it", "summary_en": "Added the CHANGELOG entry for 1.2."}). Do not commit.`},
	},
}

// The jobs' steps: the model's, then the console's.
func init() {
	steps["axlr_repair 1.0"] = append([]Step{
		{ID: "reproduce", Fields: []Field{fCheck, fExpected, fObserved, fRepro},
			Requires: [][]string{{"check_command", "expected", "observed"}, {"reproducible", "observed"}},
			Check:    CheckReproduce, Outcome: "reproduced", ReadOnly: true,
			Compact: `Example: axlr_step_done({"check_command": {"program": "go", "args": ["test", "./parser"]}, "expected": "ok", "observed": "FAIL TestParse"}). Find a command that exits nonzero because of the failure; or send reproducible: false with observed.`},
		{ID: "diagnose", Fields: []Field{fRootCause, fEvidence, fFix, fConnectTo},
			Requires: [][]string{{"root_cause", "evidence", "proposed_fix"}}, Outcome: "diagnosed", ReadOnly: true,
			Compact: `Example: axlr_step_done({"root_cause": "Parse indexes an empty slice", "evidence": "parser.go:42 reads s[0]", "proposed_fix": "return an error when s is empty"}). Read the code; change nothing. connect_to is optional.`},
		{ID: "repair", Fields: []Field{fRepairSummary, fSummaryEn, fRerun},
			Requires: [][]string{{"summary", "summary_en"}}, Check: CheckRerun, Outcome: "repaired",
			Compact: `Example: axlr_step_done({"summary": "Parse returns ErrEmpty for empty input", "summary_en": "Fixed Parse on empty input."}). Fix the code; AXLR reruns the reproduction command, which must exit zero. Do not commit.`},
	}, jobConsole(rDecision)...)
	steps["axlr_improve 1.0"] = append([]Step{
		{ID: "brief", Fields: []Field{fCriteria, fScope, fMissingCheck, fFeasible, fInfeasible},
			Requires: [][]string{{"criteria", "scope", "check_command"}, {"feasible", "observed"}},
			Check:    CheckMissing, Outcome: "missing", ReadOnly: true,
			Compact: `Example: axlr_step_done({"criteria": "exec output names its exit", "scope": "tools/exec.go", "check_command": {"program": "go", "args": ["test", "-run", "TestExitShown", "./tools"]}}). The command must fail now; or send feasible: false with observed.`},
		{ID: "build", Fields: []Field{fImproveSummary, fSummaryEn, fImproveRerun},
			Requires: [][]string{{"summary", "summary_en"}}, Check: CheckPresent, Outcome: "verified",
			Compact: `Example: axlr_step_done({"summary": "exec output names its exit code", "summary_en": "Exec output now names the exit code."}). Make the change and its test; AXLR reruns the brief's command, which must exit zero and run a test. Do not commit.`},
	}, jobConsole(rImproveDecision)...)
}

// unversioned is the version an empty one names: activity inputs recorded
// before the driver named versions, when 2.0 was the only one.
const unversioned = "2.0"

// Version 2.1 adds only the cancel trigger: its steps are 2.0's.
func init() {
	steps["axlr_debug 2.1"] = steps["axlr_debug 2.0"]
	steps["axlr_delivery 2.1"] = steps["axlr_delivery 2.0"]
}

// stepsOf returns the steps of a definition's version.
func stepsOf(definition, version string) []Step {
	return steps[definition+" "+cmp.Or(version, unversioned)]
}

// StepOf returns a step of a definition's version (empty: 2.0).
func StepOf(definition, version, step string) (Step, bool) {
	for _, s := range stepsOf(definition, version) {
		if s.ID == step {
			return s, true
		}
	}
	return Step{}, false
}

// CheckCommand is a command AXLR runs as a check: a program and its
// arguments, run without a shell. It is the one argv type: a step's
// check_command, a plan task's unit check and a plan's end-to-end check.
type CheckCommand struct {
	Program string   `json:"program"`
	Args    []string `json:"args"`
}

// Equal reports whether two commands are the same argv.
func (c CheckCommand) Equal(o CheckCommand) bool {
	return c.Program == o.Program && slices.Equal(c.Args, o.Args)
}

// String is the command as a person would type it: the program and each
// argument, single-quoted when it holds anything but letters, digits and
// _./:=@%+,-, and an empty argument as a pair of single quotes.
func (c CheckCommand) String() string {
	words := make([]string, 0, 1+len(c.Args))
	for _, w := range append([]string{c.Program}, c.Args...) {
		words = append(words, shellQuote(w))
	}
	return strings.Join(words, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=@%+,-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HandBack is a validated hand-back.
type HandBack struct {
	// Fields are the step's fields as handed back (check_command as a
	// CheckCommand), without the ones dropped.
	Fields map[string]any
	// Command is the check_command, when given.
	Command *CheckCommand
	// NotReproducible: the model declared the failure not reproducible.
	NotReproducible bool
	// NotFeasible: the model declared the improvement not feasible
	// (feasible: false).
	NotFeasible bool
	// NotTestable: the model declared that no test the unit check runs
	// can show a plan task's goal (testable: false).
	NotTestable bool
	// Ignored names the fields dropped under the compact profile.
	Ignored []string
}

// Validate checks a hand-back's arguments against a step. Under the
// standard profile a field the ceremony does not know, or a malformed one,
// refuses the hand-back; under the compact profile a field the step does
// not take is dropped and named in Ignored, and a check_command (or its
// args) sent as one string is split on spaces. A string that holds shell
// syntax is refused: there is no implicit shell, so a command that needs
// one names it ({"program": "/bin/sh", "args": ["-c", "..."]}). An
// optional text (one no set of Requires names) left empty is not given. A
// set of Requires that names a bool field (reproducible, feasible,
// testable) is the model's declaration that the step cannot be done: it
// holds only when that field is false. A console step is refused: AXLR
// runs it, not the model.
func Validate(definition, version, step string, args []byte, compact bool) (HandBack, error) {
	st, ok := StepOf(definition, version, step)
	if !ok {
		return HandBack{}, fmt.Errorf("ceremony %s %s has no step %q", definition, cmp.Or(version, unversioned), step)
	}
	if st.Console {
		return HandBack{}, fmt.Errorf("step %s is AXLR's own: it runs without the model, and nothing is handed back for it", step)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(orEmpty(args)))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return HandBack{}, errors.New("the hand-back is not a JSON object of the step's fields")
	}
	if s, ok := raw["step"]; ok {
		var name string
		if json.Unmarshal(s, &name) != nil || name != step {
			return HandBack{}, fmt.Errorf("the open step is %s, not %s", step, strings.Trim(string(s), `"`))
		}
		delete(raw, "step")
	}
	hb := HandBack{Fields: map[string]any{}}
	known := map[string]Field{}
	for _, f := range st.Fields {
		known[f.Name] = f
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		f, ok := known[name]
		if !ok {
			if compact {
				hb.Ignored = append(hb.Ignored, name)
				continue
			}
			return HandBack{}, fmt.Errorf("step %s takes %s; %q is not one of its fields", step, fieldList(st), name)
		}
		if f.Type == Text && !required(st, name) && blank(raw[name]) {
			// An optional text left empty is not given.
			continue
		}
		v, err := decodeField(f, raw[name], compact)
		if err != nil {
			return HandBack{}, fmt.Errorf("%s: %w", name, err)
		}
		if cmd, ok := v.(CheckCommand); ok && name == "check_command" {
			hb.Command = &cmd
		}
		switch {
		case name == "reproducible" && v == false:
			hb.NotReproducible = true
		case name == "feasible" && v == false:
			hb.NotFeasible = true
		case name == "testable" && v == false:
			hb.NotTestable = true
		}
		hb.Fields[name] = v
	}
	for _, set := range st.Requires {
		if hasAll(hb.Fields, set) && declaresFalse(known, hb.Fields, set) {
			return hb, nil
		}
	}
	alts := make([]string, len(st.Requires))
	for i, set := range st.Requires {
		alts[i] = strings.Join(set, ", ")
	}
	return HandBack{}, fmt.Errorf("step %s needs %s", step, strings.Join(alts, "; or "))
}

// required reports whether a set of the step's Requires names the field.
func required(st Step, name string) bool {
	return slices.ContainsFunc(st.Requires, func(set []string) bool { return slices.Contains(set, name) })
}

// blank reports whether a JSON value is a string of nothing but spaces.
func blank(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) == ""
}

func fieldList(st Step) string {
	names := make([]string, len(st.Fields))
	for i, f := range st.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// declaresFalse reports whether every bool field a set names is false.
func declaresFalse(known map[string]Field, fields map[string]any, set []string) bool {
	for _, n := range set {
		if known[n].Type == Bool && fields[n] != false {
			return false
		}
	}
	return true
}

func hasAll(fields map[string]any, names []string) bool {
	for _, n := range names {
		if _, ok := fields[n]; !ok {
			return false
		}
	}
	return true
}

func decodeField(f Field, raw json.RawMessage, compact bool) (any, error) {
	switch f.Type {
	case Bool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, errors.New("must be true or false")
		}
		return b, nil
	case Text:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("must be a string")
		}
		if strings.TrimSpace(s) == "" {
			return nil, errors.New("must not be empty")
		}
		if err := boundText(f, s); err != nil {
			return nil, err
		}
		return s, nil
	case Command:
		return decodeCommand(raw, compact)
	case Timeline:
		return DecodeTimeline(raw)
	case Actions:
		return DecodeActions(raw)
	case Links:
		return decodeLinks(raw)
	case TextList:
		return decodeTextList(f, raw, compact)
	case Notes:
		return decodeNotes(f, raw)
	case Tasks:
		return decodeTasks(f, raw, compact)
	}
	return nil, fmt.Errorf("unknown field type %s", f.Type)
}

func decodeLinks(raw json.RawMessage) ([]Link, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New(`must be an array of {"ref": "...", "rel": "...", "why": "...", "evidence": "..."}`)
	}
	if len(items) > MaxLinks {
		return nil, fmt.Errorf("holds %d links; at most %d", len(items), MaxLinks)
	}
	links := make([]Link, 0, len(items))
	for i, item := range items {
		var l Link
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf(`link %d must be {"ref": "...", "rel": "...", "why": "...", "evidence": "..."}: %v`, i+1, err)
		}
		for _, p := range []struct {
			name     string
			v        *string
			optional bool
		}{{"ref", &l.Ref, false}, {"rel", &l.Rel, false}, {"why", &l.Why, false}, {"evidence", &l.Evidence, true}} {
			*p.v = strings.TrimSpace(*p.v)
			switch {
			case *p.v == "" && !p.optional:
				return nil, fmt.Errorf("link %d: %s must not be empty", i+1, p.name)
			case len(*p.v) > MaxFieldBytes:
				return nil, fmt.Errorf("link %d: %s is over the %d KiB limit", i+1, p.name, MaxFieldBytes>>10)
			}
		}
		links = append(links, l)
	}
	return links, nil
}

func decodeCommand(raw json.RawMessage, compact bool) (CheckCommand, error) {
	var line string
	if json.Unmarshal(raw, &line) == nil {
		if !compact {
			return CheckCommand{}, errors.New(`must be an object {"program": "...", "args": ["..."]}, not a string`)
		}
		return splitCommand(line)
	}
	var obj struct {
		Program string          `json:"program"`
		Args    json.RawMessage `json:"args"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return CheckCommand{}, fmt.Errorf(`must be {"program": "...", "args": ["..."]}: %v`, err)
	}
	cmd := CheckCommand{Program: strings.TrimSpace(obj.Program)}
	if cmd.Program == "" {
		return CheckCommand{}, errors.New("program must not be empty")
	}
	if len(obj.Args) > 0 && string(obj.Args) != "null" {
		if err := json.Unmarshal(obj.Args, &cmd.Args); err != nil {
			var s string
			if !compact || json.Unmarshal(obj.Args, &s) != nil {
				return CheckCommand{}, errors.New("args must be an array of strings")
			}
			if err := noShell(s); err != nil {
				return CheckCommand{}, fmt.Errorf("args %w", err)
			}
			cmd.Args = strings.Fields(s)
		}
	}
	if cmd.Args == nil {
		cmd.Args = []string{}
	}
	return cmd, nil
}

func splitCommand(line string) (CheckCommand, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return CheckCommand{}, errors.New("must not be empty")
	}
	if err := noShell(line); err != nil {
		return CheckCommand{}, err
	}
	words := strings.Fields(line)
	return CheckCommand{Program: words[0], Args: append([]string{}, words[1:]...)}, nil
}

// shellSyntax are the characters a shell would read as more than words.
const shellSyntax = "|&;<>()$`\\\"'*?[]#~{}\n"

// noShell refuses a command line a plain split on spaces would not run as
// written: one that holds shell syntax.
func noShell(line string) error {
	i := strings.IndexAny(line, shellSyntax)
	if i < 0 {
		return nil
	}
	return fmt.Errorf(`holds shell syntax (%q) and AXLR runs no implicit shell: send {"program": "...", "args": ["..."]}, and if the command needs a shell name it: {"program": "/bin/sh", "args": ["-c", %q]}`, line[i:i+1], line)
}

func orEmpty(b []byte) []byte {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{}")
	}
	return b
}

// boundText checks a text's size and encoding against the field's bounds.
func boundText(f Field, s string) error {
	if len(s) > MaxFieldBytes {
		return fmt.Errorf("is over the %d KiB limit", MaxFieldBytes>>10)
	}
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); f.MaxChars > 0 && n > f.MaxChars {
		return fmt.Errorf("is %d characters; at most %d", n, f.MaxChars)
	}
	return nil
}

// StepDoneSchema is the JSON Schema of axlr_step_done's arguments: every
// field of the ceremony's model steps under the standard profile, the
// step's own under the compact one. A console step has none.
func StepDoneSchema(definition, version, step string, compact bool) (json.RawMessage, error) {
	var fields []Field
	if compact {
		st, ok := StepOf(definition, version, step)
		if !ok {
			return nil, fmt.Errorf("ceremony %s %s has no step %q", definition, cmp.Or(version, unversioned), step)
		}
		if st.Console {
			return nil, fmt.Errorf("step %s is AXLR's own: the model hands nothing back for it", step)
		}
		fields = st.Fields
	} else {
		seen := map[string]bool{}
		for _, st := range stepsOf(definition, version) {
			for _, f := range st.Fields {
				if !seen[f.Name] {
					seen[f.Name] = true
					fields = append(fields, f)
				}
			}
		}
	}
	props := map[string]any{
		"step": map[string]any{"type": "string", "description": "The step you hand back (the open step)."},
	}
	for _, f := range fields {
		switch f.Type {
		case Text:
			props[f.Name] = bounded(map[string]any{"type": "string", "description": f.Description}, "maxLength", f.MaxChars)
		case Bool:
			props[f.Name] = map[string]any{"type": "boolean", "description": f.Description}
		case Command:
			props[f.Name] = commandSchema(f.Description)
		case TextList, Notes, Tasks:
			props[f.Name] = listSchema(f)
		case Links:
			props[f.Name] = map[string]any{
				"type": "array", "description": f.Description, "maxItems": MaxLinks,
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"ref":      map[string]any{"type": "string"},
						"rel":      map[string]any{"type": "string"},
						"why":      map[string]any{"type": "string"},
						"evidence": map[string]any{"type": "string"},
					},
					"required": []string{"ref", "rel", "why"},
				},
			}
		}
	}
	return json.Marshal(map[string]any{"type": "object", "properties": props})
}

func commandSchema(description string) map[string]any {
	s := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"program": map[string]any{"type": "string"},
			"args":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []string{"program"},
	}
	if description != "" {
		s["description"] = description
	}
	return s
}

// bounded sets a schema's bound when it is not zero.
func bounded(s map[string]any, key string, n int) map[string]any {
	if n > 0 {
		s[key] = n
	}
	return s
}

// stringList is the schema of a task's list of paths or ids.
func stringList(minItems, maxItems int) map[string]any {
	s := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	return bounded(bounded(s, "minItems", minItems), "maxItems", maxItems)
}

// listSchema is the schema of a list field a model hands back.
func listSchema(f Field) map[string]any {
	var items map[string]any
	switch f.Type {
	case TextList:
		items = bounded(map[string]any{"type": "string"}, "maxLength", f.MaxChars)
	case Notes:
		items = map[string]any{
			"type": "object",
			"properties": map[string]any{
				"to":   map[string]any{"type": "string", "description": `A task id of the plan, or "all".`},
				"text": bounded(map[string]any{"type": "string"}, "maxLength", f.MaxChars),
			},
			"required": []string{"to", "text"},
		}
	case Tasks:
		items = map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":    map[string]any{"type": "string", "description": "A slug: lowercase letters, digits and hyphens, at most 40."},
				"goal":  map[string]any{"type": "string"},
				"scope": stringList(1, MaxScope),
				"context": map[string]any{"type": "array", "maxItems": MaxCitations, "items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"path":  map[string]any{"type": "string"},
						"line":  map[string]any{"type": "integer", "minimum": 1},
						"quote": map[string]any{"type": "string"},
					},
					"required": []string{"path", "line", "quote"},
				}},
				"unit_check": commandSchema(""),
				"depends_on": stringList(0, 0),
				"test_first": map[string]any{"type": "boolean"},
				"protect":    stringList(0, 0),
			},
			"required": []string{"id", "goal", "scope", "unit_check"},
		}
	}
	s := map[string]any{"type": "array", "items": items, "description": f.Description}
	return bounded(bounded(s, "minItems", f.MinItems), "maxItems", f.MaxItems)
}

// StepDoneDescription describes axlr_step_done to the model.
const StepDoneDescription = "Hand the open ceremony step back to AXLR with the fields the step asks for. AXLR checks them, runs the step's check command itself, records the step in MADE and answers with the next step's instruction, or with why the hand-back was refused."
