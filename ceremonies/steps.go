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
)

// FieldType is the JSON shape of a hand-back field.
type FieldType string

// Field types.
const (
	Text    FieldType = "text"    // a non-empty string
	Bool    FieldType = "bool"    // true or false
	Command FieldType = "command" // {program, args}
)

// Field is one field the model hands back.
type Field struct {
	Name        string
	Type        FieldType
	Description string
}

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
}

// MaxFieldBytes bounds a text field of a hand-back.
const MaxFieldBytes = 16 << 10

var (
	fCheck      = Field{"check_command", Command, `The command that shows the failure, as argv without a shell: {"program": "go", "args": ["test", "./parser"]}.`}
	fExpected   = Field{"expected", Text, "What a passing run would show."}
	fObserved   = Field{"observed", Text, "What the run shows now."}
	fRepro      = Field{"reproducible", Bool, "false when the failure cannot be reproduced (then give observed)."}
	fRootCause  = Field{"root_cause", Text, "The root cause of the failure."}
	fEvidence   = Field{"evidence", Text, "What in the code or the output shows the root cause."}
	fFix        = Field{"proposed_fix", Text, "The change that will fix it."}
	fSummary    = Field{"summary", Text, "What you changed."}
	fReport     = Field{"report", Text, "What was wrong or asked, what changed, how it was verified."}
	fSummaryEn  = Field{"summary_en", Text, "One English sentence summing up the outcome."}
	fCriteria   = Field{"criteria", Text, "What done means for this task."}
	fScope      = Field{"scope", Text, "The files or areas the change touches."}
	fBriefCheck = Field{"check_command", Command, `The command that will exit zero once the task is done, as argv without a shell: {"program": "go", "args": ["test", "./..."]}.`}
	fRerun      = Field{"check_command", Command, "Ignored: AXLR reruns the command accepted earlier."}
)

// steps are the driver's view of each pinned definition's steps, by name
// and version. A version's steps never change once it is published: the
// runs in flight read them, and TestStepsPinned holds their digests. A
// change is a new version with its own entry, beside the old one for as
// long as runs of it may be in flight.
var steps = map[string][]Step{
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

// CheckCommand is a check: argv without a shell.
type CheckCommand struct {
	Program string   `json:"program"`
	Args    []string `json:"args"`
}

// Equal reports whether two commands are the same argv.
func (c CheckCommand) Equal(o CheckCommand) bool {
	return c.Program == o.Program && slices.Equal(c.Args, o.Args)
}

// String shows the argv, quoting arguments that need it.
func (c CheckCommand) String() string {
	parts := []string{quoteArg(c.Program)}
	for _, a := range c.Args {
		parts = append(parts, quoteArg(a))
	}
	return strings.Join(parts, " ")
}

func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\$`|&;<>()*?[]#~") {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
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
	// Ignored names the fields dropped under the compact profile.
	Ignored []string
}

// Validate checks a hand-back's arguments against a step. Under the
// standard profile a field the ceremony does not know, or a malformed one,
// refuses the hand-back; under the compact profile a field the step does
// not take is dropped and named in Ignored, and a check_command (or its
// args) sent as one string is split on spaces. A string that holds shell
// syntax is refused: there is no implicit shell, so a command that needs
// one names it ({"program": "/bin/sh", "args": ["-c", "..."]}).
func Validate(definition, version, step string, args []byte, compact bool) (HandBack, error) {
	st, ok := StepOf(definition, version, step)
	if !ok {
		return HandBack{}, fmt.Errorf("ceremony %s %s has no step %q", definition, cmp.Or(version, unversioned), step)
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
		v, err := decodeField(f, raw[name], compact)
		if err != nil {
			return HandBack{}, fmt.Errorf("%s: %w", name, err)
		}
		if cmd, ok := v.(CheckCommand); ok {
			hb.Command = &cmd
		}
		if name == "reproducible" && v == false {
			hb.NotReproducible = true
		}
		hb.Fields[name] = v
	}
	for _, set := range st.Requires {
		if hasAll(hb.Fields, set) && (!slices.Contains(set, "reproducible") || hb.NotReproducible) {
			return hb, nil
		}
	}
	alts := make([]string, len(st.Requires))
	for i, set := range st.Requires {
		alts[i] = strings.Join(set, ", ")
	}
	return HandBack{}, fmt.Errorf("step %s needs %s", step, strings.Join(alts, "; or "))
}

func fieldList(st Step) string {
	names := make([]string, len(st.Fields))
	for i, f := range st.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
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
		if len(s) > MaxFieldBytes {
			return nil, fmt.Errorf("is over the %d KiB limit", MaxFieldBytes>>10)
		}
		if !utf8.ValidString(s) {
			return nil, errors.New("is not valid UTF-8")
		}
		return s, nil
	case Command:
		return decodeCommand(raw, compact)
	}
	return nil, fmt.Errorf("unknown field type %s", f.Type)
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

// StepDoneSchema is the JSON Schema of axlr_step_done's arguments: every
// field of the ceremony under the standard profile, the step's own under the
// compact one.
func StepDoneSchema(definition, version, step string, compact bool) (json.RawMessage, error) {
	var fields []Field
	if compact {
		st, ok := StepOf(definition, version, step)
		if !ok {
			return nil, fmt.Errorf("ceremony %s %s has no step %q", definition, cmp.Or(version, unversioned), step)
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
			props[f.Name] = map[string]any{"type": "string", "description": f.Description}
		case Bool:
			props[f.Name] = map[string]any{"type": "boolean", "description": f.Description}
		case Command:
			props[f.Name] = map[string]any{
				"type": "object", "description": f.Description,
				"properties": map[string]any{
					"program": map[string]any{"type": "string"},
					"args":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				},
				"required": []string{"program"},
			}
		}
	}
	return json.Marshal(map[string]any{"type": "object", "properties": props})
}

// StepDoneDescription describes axlr_step_done to the model.
const StepDoneDescription = "Hand the open ceremony step back to AXLR with the fields the step asks for. AXLR checks them, runs the step's check command itself, records the step in MADE and answers with the next step's instruction, or with why the hand-back was refused."
