package plans

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDefectString(t *testing.T) {
	tests := []struct {
		d    Defect
		want string
	}{
		{Defect{Text: "summary_en is empty"}, "plan: summary_en is empty"},
		{Defect{Tasks: []string{"a"}, Text: "goal is empty"}, "task a: goal is empty"},
		{Defect{Tasks: []string{"a", "b"}, Text: "x"}, "tasks a and b: x"},
		{Defect{Tasks: []string{"a", "b", "c"}, Text: "x"}, "tasks a, b and c: x"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestDefectsMessages(t *testing.T) {
	many := func(n int) Defects {
		var ds Defects
		for i := range n {
			ds = append(ds, Defect{Tasks: []string{fmt.Sprintf("t%d", i+1)}, Text: "goal is empty"})
		}
		return ds
	}
	tests := []struct {
		n     int
		shown int
		last  string
	}{
		{0, 0, ""},
		{1, 1, "task t1: goal is empty"},
		{12, 12, "task t12: goal is empty"},
		{13, 13, "and 1 more defect"},
		{20, 13, "and 8 more defects"},
	}
	for _, tt := range tests {
		got := many(tt.n).Messages()
		if len(got) != tt.shown {
			t.Fatalf("%d defects: %d messages %v", tt.n, len(got), got)
		}
		if tt.shown > 0 && got[len(got)-1] != tt.last {
			t.Errorf("%d defects: last message %q, want %q", tt.n, got[len(got)-1], tt.last)
		}
	}
	if got := many(2).Error(); got != "task t1: goal is empty; task t2: goal is empty" {
		t.Errorf("error %q", got)
	}
}

func TestDidNotRun(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	tests := []struct {
		name string
		d    Defect
		want string
	}{
		{"unit", UnitCheckDidNotRun("add-max", "exec: \"gotest\": executable file not found in $PATH\n"),
			`task add-max: unit_check did not run (exec: "gotest": executable file not found in $PATH); give the program and its args separately, with a program that exists in the workspace or on PATH`},
		{"unit no output", UnitCheckDidNotRun("add-max", " \n"),
			"task add-max: unit_check did not run (no output); give the program and its args separately, with a program that exists in the workspace or on PATH"},
		{"e2e", E2ECheckDidNotRun("fork/exec ./e2e.sh: permission denied"),
			"plan: e2e_check did not run (fork/exec ./e2e.sh: permission denied); give the program and its args separately, with a program that exists in the workspace or on PATH"},
		{"e2e long", E2ECheckDidNotRun(long),
			"plan: e2e_check did not run (" + strings.Repeat("é", 100) + "…); give the program and its args separately, with a program that exists in the workspace or on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Fatalf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		text string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"}, // é is two bytes: not split
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := cut(tt.text, tt.n); got != tt.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tt.text, tt.n, got, tt.want)
		}
	}
	if got := collapse("  a \t b\n\nc  "); !reflect.DeepEqual(got, "a b c") {
		t.Errorf("collapse: %q", got)
	}
}
