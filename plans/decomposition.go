package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/jsonargs"
)

// Limits of a decomposition: what keeps a task atomic for a small model.
const (
	MaxTasks         = 12
	MaxScope         = 8 // paths in a task's scope
	MaxCitations     = 8 // places a task's context cites
	MaxProtect       = 8 // paths a task must not change
	MaxInterfaces    = 2 << 10
	MaxSummary       = 2 << 10 // bytes of summary_en
	MaxPack          = 12 << 10
	MinQuote         = 12 // characters of a citation's quote, whitespace collapsed
	Margin           = 20 // lines shown either side of a cited line
	MaxCitedFile     = 1 << 20
	MaxDefectsShown  = 12
	MaxDecomposition = 64 << 10 // bytes of the hand-back's JSON
)

// Decomposition is the planner's hand-back: the tasks, the end-to-end check
// the sync runs after each wave, the interfaces the tasks share, and an
// English summary.
type Decomposition struct {
	Tasks      []ceremonies.PlanTask   `json:"tasks"`
	E2ECheck   ceremonies.CheckCommand `json:"e2e_check"`
	Interfaces string                  `json:"interfaces"`
	SummaryEN  string                  `json:"summary_en"`
}

// Task returns the task with id, and whether there is one.
func (d Decomposition) Task(id string) (ceremonies.PlanTask, bool) {
	i := slices.IndexFunc(d.Tasks, func(t ceremonies.PlanTask) bool { return t.ID == id })
	if i < 0 {
		return ceremonies.PlanTask{}, false
	}
	return d.Tasks[i], true
}

// Commands lists the distinct commands the decomposition would run, the
// end-to-end check first, then each task's unit check in task order: what
// the approval card shows before the baseline runs them. A command without
// a program is left out.
func (d Decomposition) Commands() []ceremonies.CheckCommand {
	var out []ceremonies.CheckCommand
	add := func(c ceremonies.CheckCommand) {
		if strings.TrimSpace(c.Program) == "" {
			return
		}
		if slices.ContainsFunc(out, func(o ceremonies.CheckCommand) bool { return o.Program == c.Program && slices.Equal(o.Args, c.Args) }) {
			return
		}
		out = append(out, c)
	}
	add(d.E2ECheck)
	for _, t := range d.Tasks {
		add(t.UnitCheck)
	}
	return out
}

// DecodeError refuses a hand-back that is not a decomposition's shape: not
// JSON, an unknown or missing field, a value of the wrong type. Message is
// an English sentence for the planner.
type DecodeError struct {
	Message string
}

func (e *DecodeError) Error() string { return e.Message }

func decodeRefusal(format string, args ...any) *DecodeError {
	return &DecodeError{Message: fmt.Sprintf(format, args...)}
}

// The JSON shapes as they are read: nested objects stay raw until their own
// field names are checked.
type (
	rawDecomposition struct {
		Tasks      json.RawMessage `json:"tasks"`
		E2ECheck   json.RawMessage `json:"e2e_check"`
		Interfaces string          `json:"interfaces"`
		SummaryEN  string          `json:"summary_en"`
	}
	rawTask struct {
		ID        string          `json:"id"`
		Goal      string          `json:"goal"`
		Scope     []string        `json:"scope"`
		Context   json.RawMessage `json:"context"`
		UnitCheck json.RawMessage `json:"unit_check"`
		DependsOn []string        `json:"depends_on"`
		TestFirst bool            `json:"test_first"`
		Protect   []string        `json:"protect"`
	}
)

// DecodeDecomposition decodes the planner's hand-back strictly: at most
// MaxDecomposition bytes of one JSON object; tasks, e2e_check and
// summary_en required, interfaces optional; each task needs id, goal, scope
// and unit_check, and may have context, depends_on, test_first and
// protect; a citation needs path, line and quote; a command needs program
// and may have args. Field names match exactly, and an unknown one is
// refused with the names its object takes. The refusal is a *DecodeError.
//
// Limits on counts and sizes are not checked here: Verify reports each as
// a defect of its task.
func DecodeDecomposition(raw []byte) (Decomposition, error) {
	if len(raw) > MaxDecomposition {
		return Decomposition{}, decodeRefusal("the plan is %d bytes of JSON (at most %d); propose fewer or smaller tasks", len(raw), MaxDecomposition)
	}
	if !json.Valid(raw) {
		return Decomposition{}, decodeRefusal("the plan is not valid JSON; send one object with tasks, e2e_check, interfaces and summary_en")
	}
	var top rawDecomposition
	if err := strict("the plan", raw, &top, "tasks", "e2e_check", "summary_en"); err != nil {
		return Decomposition{}, err
	}
	d := Decomposition{Interfaces: top.Interfaces, SummaryEN: top.SummaryEN}
	var err error
	if d.E2ECheck, err = decodeCommand("e2e_check of the plan", top.E2ECheck); err != nil {
		return Decomposition{}, err
	}
	tasks, err := list("tasks of the plan", "task objects", top.Tasks)
	if err != nil {
		return Decomposition{}, err
	}
	for i, rawT := range tasks {
		t, err := decodeTask(i, rawT)
		if err != nil {
			return Decomposition{}, err
		}
		d.Tasks = append(d.Tasks, t)
	}
	return d, nil
}

func decodeTask(i int, raw json.RawMessage) (ceremonies.PlanTask, error) {
	what := fmt.Sprintf("task %d", i+1)
	// Name the task by its id when it has a usable one.
	var peek struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &peek) == nil {
		if id, ok := peek.ID.(string); ok && ValidID(id) {
			what = "task " + id
		}
	}
	var rt rawTask
	if err := strict(what, raw, &rt, "id", "goal", "scope", "unit_check"); err != nil {
		return ceremonies.PlanTask{}, err
	}
	t := ceremonies.PlanTask{ID: rt.ID, Goal: rt.Goal, Scope: rt.Scope, DependsOn: rt.DependsOn, TestFirst: rt.TestFirst, Protect: rt.Protect}
	var err error
	if t.UnitCheck, err = decodeCommand("unit_check of "+what, rt.UnitCheck); err != nil {
		return ceremonies.PlanTask{}, err
	}
	cites, err := list("context of "+what, "citation objects", rt.Context)
	if err != nil {
		return ceremonies.PlanTask{}, err
	}
	for j, rawC := range cites {
		var c ceremonies.Citation
		if err := strict(fmt.Sprintf("citation %d of %s", j+1, what), rawC, &c, "path", "line", "quote"); err != nil {
			return ceremonies.PlanTask{}, err
		}
		t.Context = append(t.Context, c)
	}
	return t, nil
}

func decodeCommand(what string, raw json.RawMessage) (ceremonies.CheckCommand, error) {
	var c ceremonies.CheckCommand
	if err := strict(what, raw, &c, "program"); err != nil {
		return ceremonies.CheckCommand{}, err
	}
	return c, nil
}

// strict decodes one JSON object into dst through jsonargs.Decode, which
// matches names exactly and refuses unknown ones. An absent or null raw is
// refused too: every object decoded here is required where it appears.
func strict(what string, raw json.RawMessage, dst any, required ...string) error {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
		return decodeRefusal("%s must be a JSON object, not %s", what, kind(raw))
	}
	//workflowcheck:ignore jsonargs.Decode sorts the names it reads from a map before it uses them
	if err := jsonargs.Decode(what, raw, dst, required...); err != nil {
		return decodeRefusal("%s", err.Error())
	}
	return nil
}

// list splits a JSON array into its elements; absent or null is empty.
func list(what, of string, raw json.RawMessage) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if trimmed[0] != '[' || json.Unmarshal(trimmed, &items) != nil {
		return nil, decodeRefusal("%s must be an array of %s, not %s", what, of, kind(raw))
	}
	return items, nil
}

// kind names the JSON type of a value for a refusal.
func kind(raw json.RawMessage) string {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return "nothing"
	}
	switch trimmed[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
