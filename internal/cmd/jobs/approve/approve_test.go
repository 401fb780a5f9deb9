package approve

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

func TestNewCmdApprove(t *testing.T) {
	cmdtest.Parse(t, NewCmdApprove, func(o ApproveOptions) ApproveOptions { return ApproveOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[ApproveOptions]{
		{Name: "id", Args: []string{"j"}, Want: ApproveOptions{ID: "j"}},
		{Name: "json", Args: []string{"j", "--json"}, Want: ApproveOptions{ID: "j", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui jobs approve ID [--json]"},
		{Name: "a reason", Args: []string{"j", "--reason", "x"}, Err: "flag provided but not defined: -reason"},
	})
}

// TestApproveRun: approve takes the check command that waits (shared's
// TestDecide covers the rest) and prints the record with --json.
func TestApproveRun(t *testing.T) {
	fake := &cmdtest.Jobs{Records: []domain.Record{cmdtest.WaitingCheck}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return approveRun(context.Background(), &ApproveOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: cmdtest.WaitingCheck.ID, JSON: true})
	})
	after := cmdtest.WaitingCheck
	after.Pending, after.Status = nil, domain.Running
	want := workflows.JobDecision{Job: after.ID, Kind: domain.PendingCheck, Approve: true}
	if got != (cmdtest.Ran{Stdout: cmdtest.JSON(t, after) + "\n"}) || len(fake.Decisions) != 1 || fake.Decisions[0] != want || !fake.Closed {
		t.Fatalf("ran %+v, decided %+v", got, fake.Decisions)
	}
}
