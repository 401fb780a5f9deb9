package returnplan

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

func TestNewCmdReturn(t *testing.T) {
	cmdtest.Parse(t, NewCmdReturn, func(o ReturnOptions) ReturnOptions { return ReturnOptions{ID: o.ID, Reason: o.Reason, JSON: o.JSON} }, []cmdtest.ParseCase[ReturnOptions]{
		{Name: "reason", Args: []string{"card", "--reason", "split add-flag", "--json"}, Want: ReturnOptions{ID: "card", Reason: "split add-flag", JSON: true}},
		{Name: "no reason", Args: []string{"card"}, Err: "plans return needs --reason TEXT: the planner and the record keep it"},
		{Name: "no id", Args: []string{"--reason", "x"}, Err: "usage: axlr-tui plans return ID --reason TEXT [--json]"},
	})
}

// TestReturnRun: return sends the card's decision with its reason (shared's
// TestDecide covers the rest).
func TestReturnRun(t *testing.T) {
	fake := &cmdtest.Plans{Records: cmdtest.PlanRecords()}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return returnRun(context.Background(), &ReturnOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: "card", Reason: "no"})
	})
	want := workflows.PlanDecision{Plan: "card", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanReturn, Reason: "no"}
	if got.Code != 0 || len(fake.Decisions) != 1 || fake.Decisions[0] != want || !fake.Closed {
		t.Fatalf("ran %+v, decided %+v", got, fake.Decisions)
	}
}
