package plans

import (
	"fmt"
	"strings"
)

// Defect is one thing the planner must fix, with the tasks it is about.
// Tasks holds task ids, or #n (the nth task, from 1) for a task whose id is
// not a usable slug; no tasks means the plan as a whole.
type Defect struct {
	Tasks []string `json:"tasks"`
	Text  string   `json:"text"`
}

// String is the defect as the planner reads it: "plan: …", "task a: …",
// "tasks a and b: …" or "tasks a, b and c: …".
func (d Defect) String() string {
	switch n := len(d.Tasks); n {
	case 0:
		return "plan: " + d.Text
	case 1:
		return "task " + d.Tasks[0] + ": " + d.Text
	default:
		return "tasks " + strings.Join(d.Tasks[:n-1], ", ") + " and " + d.Tasks[n-1] + ": " + d.Text
	}
}

// Defects is what verification found, in the order it found them. As an
// error it reads as its Messages joined by "; "; a nil or empty Defects is
// never returned as an error.
type Defects []Defect

// Messages is the defects as the planner is told them: at most
// MaxDefectsShown, then "and N more defects".
func (ds Defects) Messages() []string {
	out := make([]string, 0, min(len(ds), MaxDefectsShown+1))
	for i, d := range ds {
		if i == MaxDefectsShown {
			more := len(ds) - MaxDefectsShown
			out = append(out, fmt.Sprintf("and %d more %s", more, plural(more, "defect", "defects")))
			break
		}
		out = append(out, d.String())
	}
	return out
}

func (ds Defects) Error() string { return strings.Join(ds.Messages(), "; ") }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxOutputShown bounds the output a did-not-run defect quotes.
const maxOutputShown = 200

// UnitCheckDidNotRun is the defect of a task whose unit check could not be
// started for its baseline (no such program, not executable, …); output is
// what the attempt printed or the error, of which the first 200 bytes are
// shown.
func UnitCheckDidNotRun(task, output string) Defect {
	return Defect{Tasks: []string{task}, Text: fmt.Sprintf("unit_check did not run (%s); give the program and its args separately, with a program that exists in the workspace or on PATH", shown(output))}
}

// E2ECheckDidNotRun is the defect of a plan whose end-to-end check could
// not be started for its baseline; output as in UnitCheckDidNotRun.
func E2ECheckDidNotRun(output string) Defect {
	return Defect{Text: fmt.Sprintf("e2e_check did not run (%s); give the program and its args separately, with a program that exists in the workspace or on PATH", shown(output))}
}

// shown is text with its whitespace collapsed, cut to maxOutputShown bytes
// on a character boundary with "…" when longer; "no output" when empty.
func shown(text string) string {
	text = collapse(text)
	if text == "" {
		return "no output"
	}
	return cut(text, maxOutputShown)
}

// cut shortens text to at most n bytes, on a character boundary, with "…"
// after it when anything was left out.
func cut(text string, n int) string {
	if len(text) <= n {
		return text
	}
	i := n
	for i > 0 && !startsRune(text[i]) {
		i--
	}
	return text[:i] + "…"
}

func startsRune(b byte) bool { return b&0xC0 != 0x80 }

// collapse is text with each run of whitespace replaced by one space, and
// none at either end.
func collapse(text string) string { return strings.Join(strings.Fields(text), " ") }
