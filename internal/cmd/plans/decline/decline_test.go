package decline

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

func TestNewCmdDecline(t *testing.T) {
	cmdtest.Parse(t, NewCmdDecline, func(o DeclineOptions) DeclineOptions { return DeclineOptions{ID: o.ID, Reason: o.Reason, JSON: o.JSON} }, []cmdtest.ParseCase[DeclineOptions]{
		{Name: "reason", Args: []string{"card", "--reason", "split add-flag", "--json"}, Want: DeclineOptions{ID: "card", Reason: "split add-flag", JSON: true}},
		{Name: "no reason", Args: []string{"card"}, Err: "plans decline needs --reason TEXT: the planner and the record keep it"},
		{Name: "no id", Args: []string{"--reason", "x"}, Err: "usage: axlr-tui plans decline ID --reason TEXT [--json]"},
	})
}

// TestDeclineRun: decline sends the card's decision with its reason (shared's
// TestDecide covers the rest).
func TestDeclineRun(t *testing.T) {
	fake := &cmdtest.Plans{Records: cmdtest.PlanRecords()}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return declineRun(context.Background(), &DeclineOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: "card", Reason: "no"})
	})
	want := workflows.PlanDecision{Plan: "card", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanDecline, Reason: "no"}
	if got.Code != 0 || len(fake.Decisions) != 1 || fake.Decisions[0] != want || !fake.Closed {
		t.Fatalf("ran %+v, decided %+v", got, fake.Decisions)
	}
}
