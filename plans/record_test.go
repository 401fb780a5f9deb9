package plans

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/internal/jsontest"
)

func exit(code int) *int { return &code }

// fullRecord has every field set, the nested ones included.
func fullRecord() Record {
	at := time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)
	return Record{
		ID: "add-max-to-a1b2c3", Status: Running, Brief: "Add Max to calc", Root: "/work/calc",
		PlannerModel: "qwen3-coder",
		Tasks: []Task{{
			ID: "add-max", Goal: "Add Max", Scope: []string{"calc/calc.go"}, DependsOn: []string{}, Wave: 1,
			TestFirst: true, Status: TaskDone, Session: "s-1", Changed: []string{"calc/calc.go"}, Reason: "r",
			Questions: []string{"Should Max take a variadic list?"}, Restored: []string{"calc/calc.go"}, Created: []string{"calc/max.go"},
		}},
		Waves:   1,
		Syncs:   []Sync{{Wave: 1, Check: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}, Exit: exit(0), Round: 0}},
		Pending: &Pending{Kind: PendingCommand, Commands: []string{"go test ./..."}},
		Reason:  "r", Created: at, Updated: at,
	}
}

func TestRecordFields(t *testing.T) {
	data, err := json.Marshal(fullRecord())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"brief", "created", "id", "pending", "pending.commands", "pending.kind", "planner_model", "reason", "root", "status",
		"syncs", "syncs.check", "syncs.check.args", "syncs.check.program", "syncs.exit", "syncs.round", "syncs.wave",
		"tasks", "tasks.changed", "tasks.created", "tasks.depends_on", "tasks.goal", "tasks.id", "tasks.questions", "tasks.reason", "tasks.restored", "tasks.scope", "tasks.session",
		"tasks.status", "tasks.test_first", "tasks.wave",
		"updated", "waves",
	}
	if got := jsontest.Keys(t, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("record keys\n got %v\nwant %v", got, want)
	}
	var back Record
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, fullRecord()) {
		t.Fatalf("round trip: %v\n%+v", err, back)
	}
}

func TestRecordAbsentParts(t *testing.T) {
	data, err := json.Marshal(Record{ID: "x", Syncs: []Sync{{Wave: 1}}, Pending: &Pending{Kind: PendingApproval}})
	if err != nil {
		t.Fatal(err)
	}
	// No exit code is invented for a check that did not run to its end,
	// and the plan card names no commands of its own.
	for _, want := range []string{`"exit":null`, `"pending":{"kind":"approval"}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %s", data, want)
		}
	}
	data, err = json.Marshal(Record{ID: "x"})
	if err != nil || !strings.Contains(string(data), `"pending":null`) {
		t.Errorf("%s, %v", data, err)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		status          Status
		valid, terminal bool
	}{
		{Decomposing, true, false},
		{AwaitingApproval, true, false},
		{Ready, true, false},
		{Running, true, false},
		{Done, true, true},
		{Partial, true, true},
		{Blocked, true, true},
		{Declined, true, true},
		{Interrupted, true, false},
		{"failed", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if tt.status.Valid() != tt.valid || tt.status.Terminal() != tt.terminal {
			t.Errorf("%q: valid %v terminal %v", tt.status, tt.status.Valid(), tt.status.Terminal())
		}
	}
}

func TestNeedsPerson(t *testing.T) {
	tests := []struct {
		r    Record
		want bool
	}{
		{Record{Status: AwaitingApproval}, true},
		{Record{Status: Decomposing, Pending: &Pending{Kind: PendingCommand, Commands: []string{"go test ./..."}}}, true},
		{Record{Status: Running}, false},
		{Record{Status: Done}, false},
	}
	for _, tt := range tests {
		if got := tt.r.NeedsPerson(); got != tt.want {
			t.Errorf("%+v: %v", tt.r, got)
		}
	}
}

func TestNewTasks(t *testing.T) {
	d := calcPlan()
	v := Verify("p", d, workspace())
	got := NewTasks(v.Decomposition, v.Waves)
	want := []Task{
		{ID: "add-max", Goal: "Add Max to calc, beside Min.", Scope: []string{"calc/calc.go", "calc/calc_test.go", "calc/max.go"}, Wave: 1, TestFirst: true, Status: TaskPending},
		{ID: "use-max", Goal: "Print Max(2, 3) in main.", Scope: []string{"main.go"}, DependsOn: []string{"add-max"}, Wave: 2, Status: TaskPending},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tasks\n got %+v\nwant %+v", got, want)
	}
	if unplaced := NewTasks(v.Decomposition, nil); unplaced[0].Wave != 0 || unplaced[1].Wave != 0 {
		t.Fatalf("tasks in no wave: %+v", unplaced)
	}
	got[0].Scope[0] = "changed"
	if v.Decomposition.Tasks[0].Scope[0] != "calc/calc.go" {
		t.Fatal("the record's tasks share the decomposition's scope")
	}
}

func TestSkipDependents(t *testing.T) {
	r := Record{Tasks: []Task{
		{ID: "d", DependsOn: []string{"c"}, Status: TaskPending},
		{ID: "a", Status: TaskBlocked},
		{ID: "b", DependsOn: []string{"x", "a"}, Status: TaskPending},
		{ID: "c", DependsOn: []string{"b"}, Status: TaskPending},
		{ID: "x", Status: TaskDone},
		{ID: "e", DependsOn: []string{"x"}, Status: TaskPending},
		{ID: "f", DependsOn: []string{"a"}, Status: TaskDone},
	}}
	got := r.SkipDependents()
	if want := []string{"b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("skipped %v, want %v", got, want)
	}
	reasons := map[string]string{"b": "depends on a, which did not finish", "c": "depends on b, which did not finish", "d": "depends on c, which did not finish"}
	for _, task := range r.Tasks {
		want, skipped := reasons[task.ID]
		if skipped != (task.Status == TaskSkipped) || task.Reason != want {
			t.Errorf("%s: %s %q", task.ID, task.Status, task.Reason)
		}
	}
	if again := r.SkipDependents(); again != nil {
		t.Fatalf("skipped again: %v", again)
	}
}

func TestOutcome(t *testing.T) {
	done := []Task{{ID: "a", Wave: 1, Status: TaskDone}, {ID: "b", Wave: 2, Status: TaskDone}}
	green := func(w, round int) Sync { return Sync{Wave: w, Exit: exit(0), Round: round} }
	red := func(w, round int) Sync { return Sync{Wave: w, Exit: exit(1), Round: round} }
	tests := []struct {
		name  string
		tasks []Task
		syncs []Sync
		want  Status
	}{
		{"all green", done, []Sync{green(1, 0), green(2, 0)}, Done},
		{"green after a reconciliation", done, []Sync{red(1, 0), green(1, 1), green(2, 0)}, Done},
		{"red at the end", done, []Sync{green(1, 0), red(2, 0), red(2, 1), red(2, 2)}, Partial},
		{"green then red", done, []Sync{green(1, 0), green(2, 0), red(2, 1)}, Partial},
		{"a wave never synced", done, []Sync{green(1, 0)}, Partial},
		{"a sync that did not run", done, []Sync{green(1, 0), {Wave: 2}}, Partial},
		{"a task blocked", []Task{done[0], {ID: "b", Wave: 2, Status: TaskBlocked}}, []Sync{green(1, 0)}, Partial},
		{"a task skipped", []Task{done[0], {ID: "b", Wave: 2, Status: TaskSkipped}}, []Sync{green(1, 0)}, Partial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Record{Tasks: tt.tasks, Waves: 2, Syncs: tt.syncs}
			if got := r.Outcome(); got != tt.want {
				t.Fatalf("outcome %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFind(t *testing.T) {
	records := []Record{{ID: "a"}, {ID: "b", Status: Running}}
	if r, err := Find(records, "b"); err != nil || r.Status != Running {
		t.Fatalf("find b: %+v %v", r, err)
	}
	_, err := Find(records, "c")
	if !errors.Is(err, ErrNotFound) || err.Error() != "no such plan: c (axlr-tui plans lists the plans)" {
		t.Fatalf("find c: %v", err)
	}
	r := fullRecord()
	if task := r.Task("add-max"); task == nil || task.Session != "s-1" {
		t.Fatalf("task: %+v", task)
	}
	r.Task("add-max").Session = "s-2"
	if r.Tasks[0].Session != "s-2" || r.Task("nope") != nil {
		t.Fatal("Task does not point into the record")
	}
}

func TestID(t *testing.T) {
	random := [3]byte{0xa1, 0xb2, 0xc3}
	tests := []struct {
		brief, want string
	}{
		{"Add Max to calc and use it", "add-max-to-a1b2c3"},
		{"  fix   the\tbug ", "fix-the-bug-a1b2c3"},
		{"Añadir función: max", "aadir-funcin-max-a1b2c3"},
		{"¿¡ !! max", "max-a1b2c3"},
		{"", "plan-a1b2c3"},
		{"??? ...", "plan-a1b2c3"},
		{"refactor the-configuration-loader-and-its-validation module", "tionloaderanditsvalidation-module-a1b2c3"},
		{strings.Repeat("a", 60), strings.Repeat("a", 33) + "-a1b2c3"},
		{strings.Repeat("a", 33) + " b", strings.Repeat("a", 31) + "-b-a1b2c3"},
		{"x " + strings.Repeat("y", 33), strings.Repeat("y", 33) + "-a1b2c3"},
	}
	for _, tt := range tests {
		got := ID(tt.brief, random)
		if got != tt.want || !ValidID(got) {
			t.Errorf("ID(%q) = %q, want %q (valid %v)", tt.brief, got, tt.want, ValidID(got))
		}
	}
	if ID("add max", [3]byte{}) != "add-max-000000" {
		t.Errorf("zero random: %s", ID("add max", [3]byte{}))
	}
}

func FuzzID(f *testing.F) {
	f.Add("Add Max to calc", []byte{1, 2, 3})
	f.Add("", []byte{})
	f.Add(strings.Repeat("word ", 20), []byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, brief string, random []byte) {
		var r [3]byte
		copy(r[:], random)
		id := ID(brief, r)
		if !ValidID(id) {
			t.Fatalf("ID(%q) = %q, not a slug", brief, id)
		}
		if !strings.HasSuffix(id, "-"+hex.EncodeToString(r[:])) {
			t.Fatalf("ID(%q) = %q does not end in the random part", brief, id)
		}
	})
}
