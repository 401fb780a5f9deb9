package show

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
)

func TestNewCmdShow(t *testing.T) {
	cmdtest.Parse(t, NewCmdShow, func(o ShowOptions) ShowOptions { return ShowOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[ShowOptions]{
		{Name: "id", Args: []string{"done", "--json"}, Want: ShowOptions{ID: "done", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui plans show ID [--json]"},
	})
}

// TestShowRun: a plan's fields, each task with its session and changed
// files, the questions its workers asked, and each sync.
func TestShowRun(t *testing.T) {
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](&cmdtest.Plans{Records: cmdtest.PlanRecords()}), ID: "done"})
	})
	want := cmdtest.Ran{Stdout: "" +
		"id:       done\nstatus:   done\nroot:     /w\ntasks:\n" +
		"  wave 1  add-flag  done  s-1  main.go, main_test.go\n" +
		"question from add-flag: Should --flag be documented in the man page too?\n" +
		"sync wave 1 round 1: go test ./...: exit 0\n"}
	if got != want {
		t.Fatalf("ran %+v, want %+v", got, want)
	}
}

// TestShowRunBlockedTask: a task that did not finish shows its reason, the
// scope files put back as they were when its worker started, and the files
// it created, left in place.
func TestShowRunBlockedTask(t *testing.T) {
	rec := domain.Record{ID: "partial", Status: domain.Partial, Root: "/w", Waves: 1, Reason: "task add-max is blocked: green round 3 of 3",
		Tasks: []domain.Task{
			{ID: "add-max", Wave: 1, Status: domain.TaskBlocked, Session: "s-1", Reason: "green round 3 of 3: the unit check go test ./... exited 1",
				Changed: []string{"max.go"}, Restored: []string{"calc.go"}, Created: []string{"max.go", "max_test.go"}},
			{ID: "add-double", Wave: 1, Status: domain.TaskDone, Session: "s-2", Changed: []string{"double.go"}},
		}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](&cmdtest.Plans{Records: []domain.Record{rec}}), ID: "partial"})
	})
	want := cmdtest.Ran{Stdout: "" +
		"id:       partial\nstatus:   partial\nroot:     /w\nreason:   task add-max is blocked: green round 3 of 3\ntasks:\n" +
		"  wave 1  add-max     blocked  s-1  green round 3 of 3: the unit check go test ./... exited 1\n" +
		"  wave 1  add-double  done     s-2  double.go\n" +
		"restored for add-max, as they were when its worker started: calc.go\n" +
		"created by add-max, left in place: max.go, max_test.go\n"}
	if got != want {
		t.Fatalf("ran %+v, want %+v", got, want)
	}
}
