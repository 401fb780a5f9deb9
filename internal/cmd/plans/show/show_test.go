package show

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
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
