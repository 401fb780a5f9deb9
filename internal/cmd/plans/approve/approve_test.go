package approve

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

func TestNewCmdApprove(t *testing.T) {
	cmdtest.Parse(t, NewCmdApprove, func(o ApproveOptions) ApproveOptions { return ApproveOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[ApproveOptions]{
		{Name: "id", Args: []string{"card", "--json"}, Want: ApproveOptions{ID: "card", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui plans approve ID [--json]"},
	})
}

// TestApproveRun: approving the plan's commands is the commands' Update
// (shared's TestDecide covers the rest).
func TestApproveRun(t *testing.T) {
	fake := &cmdtest.Plans{Records: cmdtest.PlanRecords()}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return approveRun(context.Background(), &ApproveOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: "cmds"})
	})
	want := workflows.PlanDecision{Plan: "cmds", Kind: workflows.PlanDecideCommands, Decision: workflows.PlanApprove}
	if got.Code != 0 || len(fake.Decisions) != 1 || fake.Decisions[0] != want || !fake.Closed {
		t.Fatalf("ran %+v, decided %+v", got, fake.Decisions)
	}
}
