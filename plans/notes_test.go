package plans

import (
	"reflect"
	"strings"
	"testing"
)

func TestValidateHandback(t *testing.T) {
	ids := []string{"add-max", "use-max"}
	long := strings.Repeat("é", MaxNoteText+1)
	tests := []struct {
		name      string
		notes     []Note
		questions []string
		want      string // the error, or "" when accepted
	}{
		{"none", nil, nil, ""},
		{"to a task and to all", []Note{{To: "use-max", Text: "Max is in calc/max.go"}, {To: "all", Text: "go 1.26"}}, []string{"Keep Min?"}, ""},
		{"at the limits", []Note{{To: "all", Text: strings.Repeat("é", MaxNoteText)}, {To: "all", Text: "b"}, {To: "all", Text: "c"}, {To: "all", Text: "d"}},
			[]string{strings.Repeat("q", MaxQuestion), "r"}, ""},
		{"too many notes", []Note{{To: "all", Text: "a"}, {To: "all", Text: "b"}, {To: "all", Text: "c"}, {To: "all", Text: "d"}, {To: "all", Text: "e"}}, nil,
			"5 notes; leave at most 4"},
		{"to an unknown task", []Note{{To: "add-min", Text: "a"}}, nil, `note 1: to "add-min" is not a task of this plan; address a task id or "all"`},
		{"to nobody", []Note{{Text: "a"}}, nil, `note 1: to "" is not a task of this plan; address a task id or "all"`},
		{"empty note", []Note{{To: "all", Text: " \n"}}, nil, "note 1: text is empty"},
		{"long note", []Note{{To: "all", Text: "ok"}, {To: "all", Text: long}}, nil, "note 2: text is 501 characters (at most 500)"},
		{"too many questions", nil, []string{"a", "b", "c"}, "3 questions; ask at most 2"},
		{"empty question", nil, []string{"  "}, "question 1 is empty"},
		{"long question", nil, []string{strings.Repeat("q", MaxQuestion+1)}, "question 1 is 501 characters (at most 500)"},
		{"every problem", []Note{{To: "x", Text: ""}}, []string{"", "b", "c"},
			`note 1: to "x" is not a task of this plan; address a task id or "all"; note 1: text is empty; 3 questions; ask at most 2; question 1 is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notes, questions, err := ValidateHandback("add-max", tt.notes, tt.questions, ids)
			if tt.want != "" {
				if err == nil || err.Error() != tt.want || notes != nil || questions != nil {
					t.Fatalf("error %v, want %s", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) != len(tt.notes) || len(questions) != len(tt.questions) {
				t.Fatalf("kept %v %v", notes, questions)
			}
			for _, n := range notes {
				if n.From != "add-max" {
					t.Fatalf("note from %q", n.From)
				}
			}
		})
	}
}

func TestValidateHandbackTrims(t *testing.T) {
	notes, questions, err := ValidateHandback("a", []Note{{From: "forged", To: " b ", Text: "  use Max \n"}}, []string{" why? "}, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Note{{From: "a", To: "b", Text: "use Max"}}; !reflect.DeepEqual(notes, want) {
		t.Fatalf("notes %+v", notes)
	}
	if !reflect.DeepEqual(questions, []string{"why?"}) {
		t.Fatalf("questions %q", questions)
	}
}

func TestParseNotes(t *testing.T) {
	reply := "I changed calc/max.go.\n" +
		"NOTE use-max: Max now takes ints\r\n" +
		"NOTE all:   run go generate first  \n" +
		"  NOTE use-max: indented, not a note\n" +
		"note use-max: lower case, not a note\n" +
		"NOTE Use-Max: not a slug\n" +
		"NOTE use-max:\n" +
		"NOTE use-max:    \n" +
		"NOTE use-max no colon\n" +
		"NOTE add-max-2:second:colon kept"
	got := ParseNotes("add-max", reply)
	want := []Note{
		{From: "add-max", To: "use-max", Text: "Max now takes ints"},
		{From: "add-max", To: "all", Text: "run go generate first"},
		{From: "add-max", To: "add-max-2", Text: "second:colon kept"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("notes\n got %+v\nwant %+v", got, want)
	}
	if ParseNotes("a", "no notes here") != nil {
		t.Fatal("notes where there are none")
	}
}

func TestNotesFor(t *testing.T) {
	notes := []Note{
		{From: "a", To: "b", Text: "1"},
		{From: "a", To: "all", Text: "2"},
		{From: "b", To: "all", Text: "3"},
		{From: "c", To: "d", Text: "4"},
		{From: "b", To: "b", Text: "5"},
	}
	got := NotesFor(notes, "b")
	want := []Note{notes[0], notes[1], notes[4]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("for b %+v", got)
	}
	if got := NotesText(got); got != "Notes from earlier tasks:\n- from a: 1\n- from a: 2\n- from b: 5\n" {
		t.Fatalf("text %q", got)
	}
	if NotesText(nil) != "" {
		t.Fatal("text of no notes")
	}
	if got := NotesText([]Note{{From: "a", To: "b", Text: "two\nlines"}}); got != "Notes from earlier tasks:\n- from a: two lines\n" {
		t.Fatalf("text %q", got)
	}
}

func TestAffected(t *testing.T) {
	wave := []Task{
		{ID: "add-max", Scope: []string{"calc/calc.go", "calc/calc_test.go"}},
		{ID: "use-max", Scope: []string{"cmd/main.go"}},
		{ID: "docs", Scope: []string{"README.md"}},
	}
	tests := []struct {
		name, tail string
		want       []string
	}{
		{"full path", "--- FAIL: TestMax\n    calc/calc_test.go:12: got 2, want 3\nFAIL", []string{"add-max"}},
		{"base name", "./main.go:7:2: undefined: calc.Max", []string{"use-max"}},
		{"two tasks", "main.go:7 and calc.go:3", []string{"add-max", "use-max"}},
		{"part of a longer name", "mycalc.go:3: boom; calc.gox; main_go", []string{"add-max", "use-max", "docs"}},
		{"none named", "exit status 1", []string{"add-max", "use-max", "docs"}},
		{"at the end", "see README.md", []string{"docs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Affected(wave, tt.tail); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("affected %v, want %v", got, tt.want)
			}
		})
	}
}
