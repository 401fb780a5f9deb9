package plans

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of what a task's worker leaves for the others and the person.
const (
	MaxNotes     = 4
	MaxNoteText  = 500 // characters
	MaxQuestions = 2
	MaxQuestion  = 500 // characters
)

// ToAll addresses a note to every later task.
const ToAll = "all"

// Note is what one task leaves for another (To a task id) or for all
// (ToAll): the only channel between tasks. From is the task that left it,
// set by the console, never by the worker.
type Note struct {
	From string `json:"from"`
	To   string `json:"to"`
	Text string `json:"text"`
}

// ValidateHandback checks the notes and questions the worker of task from
// hands back, for a plan of the task ids ids: at most MaxNotes notes, each
// to a task of the plan or ToAll, with a text of 1 to MaxNoteText
// characters; at most MaxQuestions questions of 1 to MaxQuestion
// characters. It returns them with their whitespace trimmed and each
// note's From set, or an error naming every problem, for the worker.
func ValidateHandback(from string, notes []Note, questions []string, ids []string) ([]Note, []string, error) {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if n := len(notes); n > MaxNotes {
		problem("%d notes; leave at most %d", n, MaxNotes)
	}
	out := make([]Note, 0, len(notes))
	for i, n := range notes {
		n.From, n.To, n.Text = from, strings.TrimSpace(n.To), strings.TrimSpace(n.Text)
		if n.To != ToAll && !slices.Contains(ids, n.To) {
			problem("note %d: to %q is not a task of this plan; address a task id or %q", i+1, n.To, ToAll)
		}
		switch chars := utf8.RuneCountInString(n.Text); {
		case chars == 0:
			problem("note %d: text is empty", i+1)
		case chars > MaxNoteText:
			problem("note %d: text is %d characters (at most %d)", i+1, chars, MaxNoteText)
		}
		out = append(out, n)
	}
	if n := len(questions); n > MaxQuestions {
		problem("%d questions; ask at most %d", n, MaxQuestions)
	}
	qs := make([]string, 0, len(questions))
	for i, q := range questions {
		q = strings.TrimSpace(q)
		switch chars := utf8.RuneCountInString(q); {
		case chars == 0:
			problem("question %d is empty", i+1)
		case chars > MaxQuestion:
			problem("question %d is %d characters (at most %d)", i+1, chars, MaxQuestion)
		}
		qs = append(qs, q)
	}
	if len(problems) > 0 {
		return nil, nil, errors.New(strings.Join(problems, "; "))
	}
	return out, qs, nil
}

var noteLine = regexp.MustCompile(`^NOTE ([a-z0-9-]+|all):\s*(.+)$`)

// ParseNotes reads the notes a reconciliation worker of task from leaves
// in its reply, one per line, as "NOTE <task>: text" or "NOTE all: text"
// (^NOTE ([a-z0-9-]+|all):\s*(.+)$ on each line, a trailing \r dropped),
// in the order they come. The text is trimmed; a line whose text is only
// whitespace is not a note. Who they are addressed to is not checked:
// ValidateHandback does that.
func ParseNotes(from, text string) []Note {
	var notes []Note
	for line := range strings.SplitSeq(text, "\n") {
		m := noteLine.FindStringSubmatch(strings.TrimSuffix(line, "\r"))
		if m == nil {
			continue
		}
		if body := strings.TrimSpace(m[2]); body != "" {
			notes = append(notes, Note{From: from, To: m[1], Text: body})
		}
	}
	return notes
}

// NotesFor is the notes addressed to task, or to all by another task, in
// their order.
func NotesFor(notes []Note, task string) []Note {
	var out []Note
	for _, n := range notes {
		if n.To == task || n.To == ToAll && n.From != task {
			out = append(out, n)
		}
	}
	return out
}

// NotesText is notes as a worker reads them after its context pack:
// "Notes from earlier tasks:" and one "- from <task>: <text>" line each;
// empty when there are none.
func NotesText(notes []Note) string {
	if len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Notes from earlier tasks:\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "- from %s: %s\n", n.From, collapse(n.Text))
	}
	return b.String()
}

// Affected is the tasks of a wave a red sync reconciles: those with a scope
// path in the failing tail, or its base name where it is not part of a
// longer name; every task of the wave when none is named.
func Affected(wave []Task, tail string) []string {
	var out []string
	for _, t := range wave {
		if slices.ContainsFunc(t.Scope, func(p string) bool { return strings.Contains(tail, p) || namesFile(tail, path.Base(p)) }) {
			out = append(out, t.ID)
		}
	}
	if len(out) == 0 {
		for _, t := range wave {
			out = append(out, t.ID)
		}
	}
	return out
}

// namesFile reports whether text holds base with no name character right
// before or after it ("calc.go:12", "./calc.go", not "mycalc.go" or
// "calc.gox").
func namesFile(text, base string) bool {
	for at := 0; ; {
		i := strings.Index(text[at:], base)
		if i < 0 {
			return false
		}
		start, end := at+i, at+i+len(base)
		before := start == 0 || !nameByte(text[start-1])
		after := end == len(text) || !nameByte(text[end])
		if before && after {
			return true
		}
		at = start + 1
	}
}

func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}
