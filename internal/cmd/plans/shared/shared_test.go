package shared

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

func TestRecordFields(t *testing.T) {
	if got := cmdtest.JSONFields(domain.Record{}); !slices.Equal(got, RecordFields) {
		t.Errorf("plan record fields are %q, declared %q", got, RecordFields)
	}
}

// TestDecide: the decisions on a plan's card and on its commands, each
// mapped to the Update the plan takes; a plan that waits for nothing, or
// for its commands when its card is declined, is refused.
func TestDecide(t *testing.T) {
	tests := []struct {
		verb, id, reason string
		want             *workflows.PlanDecision
		ran              cmdtest.Ran
	}{
		{verb: "approve", id: "card", want: &workflows.PlanDecision{Plan: "card", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanApprove},
			ran: cmdtest.Ran{Stdout: "approved the plan card; it is running now (axlr-tui plans watch card follows it)\n"}},
		{verb: "return", id: "card", reason: "split add-flag",
			want: &workflows.PlanDecision{Plan: "card", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanReturn, Reason: "split add-flag"},
			ran:  cmdtest.Ran{Stdout: "returned the plan card; it is running now (axlr-tui plans watch card follows it)\n"}},
		{verb: "decline", id: "card", reason: "no", want: &workflows.PlanDecision{Plan: "card", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanDecline, Reason: "no"},
			ran: cmdtest.Ran{Stdout: "declined the plan card; it is running now (axlr-tui plans watch card follows it)\n"}},
		{verb: "approve", id: "cmds", want: &workflows.PlanDecision{Plan: "cmds", Kind: workflows.PlanDecideCommands, Decision: workflows.PlanApprove},
			ran: cmdtest.Ran{Stdout: "approved the plan's commands cmds; it is running now (axlr-tui plans watch cmds follows it)\n"}},
		{verb: "return", id: "cmds", reason: "not those", want: &workflows.PlanDecision{Plan: "cmds", Kind: workflows.PlanDecideCommands, Decision: workflows.PlanDeny, Reason: "not those"},
			ran: cmdtest.Ran{Stdout: "returned the plan's commands cmds; it is running now (axlr-tui plans watch cmds follows it)\n"}},
		{verb: "decline", id: "cmds", reason: "x", ran: cmdtest.Ran{Code: 1,
			Stderr: "axlr-tui: plan cmds waits for its commands, not its card: axlr-tui plans approve cmds runs them, axlr-tui plans return cmds --reason TEXT sends the planner back\n"}},
		{verb: "approve", id: "done", ran: cmdtest.Ran{Code: 1, Stderr: "axlr-tui: plan done waits for no decision: it is done\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.verb+" "+tt.id, func(t *testing.T) {
			fake := &cmdtest.Plans{Records: cmdtest.PlanRecords()}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return Decide(context.Background(), fake, ios.Out, false, tt.verb, tt.id, tt.reason)
			})
			if got != tt.ran {
				t.Fatalf("ran %+v, want %+v", got, tt.ran)
			}
			switch {
			case tt.want == nil && len(fake.Decisions) != 0:
				t.Fatalf("decided %+v", fake.Decisions)
			case tt.want != nil && (len(fake.Decisions) != 1 || fake.Decisions[0] != *tt.want):
				t.Fatalf("decided %+v, want %+v", fake.Decisions, *tt.want)
			}
		})
	}
}

// TestFollowInterrupt: the first Ctrl+C interrupts the plan and the watch
// goes on; the second leaves with 130.
func TestFollowInterrupt(t *testing.T) {
	fake := &cmdtest.Plans{Block: true, Watched: make(chan struct{})}
	sig := make(chan os.Signal, 2)
	go func() {
		<-fake.Watched
		sig <- os.Interrupt
		sig <- os.Interrupt
	}()
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return Follow(context.Background(), FollowOptions{IO: ios, Interrupts: sig}, fake, cmdtest.PlanRecords()[0])
	})
	if got.Code != 130 || !strings.Contains(got.Stderr, "axlr-tui: interrupting plan card (Ctrl+C again") || len(fake.Interrupted) != 1 {
		t.Fatalf("ran %+v, interrupted %v", got, fake.Interrupted)
	}
}
