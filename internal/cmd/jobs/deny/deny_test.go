package deny

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

func TestNewCmdDeny(t *testing.T) {
	cmdtest.Parse(t, NewCmdDeny, func(o DenyOptions) DenyOptions { return DenyOptions{ID: o.ID, Reason: o.Reason, JSON: o.JSON} }, []cmdtest.ParseCase[DenyOptions]{
		{Name: "reason", Args: []string{"j", "--reason", "not that"}, Want: DenyOptions{ID: "j", Reason: "not that"}},
		{Name: "json", Args: []string{"--json", "j", "--reason=x"}, Want: DenyOptions{ID: "j", Reason: "x", JSON: true}},
		{Name: "no reason", Args: []string{"j"}, Err: "jobs deny needs --reason TEXT: the job's record and the model keep it"},
		{Name: "blank reason", Args: []string{"j", "--reason", " "}, Err: "jobs deny needs --reason TEXT"},
		{Name: "no id", Args: []string{"--reason", "x"}, Err: "usage: axlr-tui jobs deny ID --reason TEXT [--json]"},
	})
}

// TestDenyRun: deny sends its reason (shared's TestDecide covers the
// refusals).
func TestDenyRun(t *testing.T) {
	rec := cmdtest.WaitingCheck
	fake := &cmdtest.Jobs{Records: []domain.Record{rec}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return denyRun(context.Background(), &DenyOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: rec.ID, Reason: "no"})
	})
	want := workflows.JobDecision{Job: rec.ID, Kind: domain.PendingCheck, Reason: "no"}
	if got.Code != 0 || len(fake.Decisions) != 1 || fake.Decisions[0] != want || !fake.Closed {
		t.Fatalf("ran %+v, decided %+v", got, fake.Decisions)
	}
}
