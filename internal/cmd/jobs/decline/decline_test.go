package decline

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

func TestNewCmdDecline(t *testing.T) {
	cmdtest.Parse(t, NewCmdDecline, func(o DeclineOptions) DeclineOptions { return DeclineOptions{ID: o.ID, Reason: o.Reason, JSON: o.JSON} }, []cmdtest.ParseCase[DeclineOptions]{
		{Name: "reason", Args: []string{"j", "--reason", "not that"}, Want: DeclineOptions{ID: "j", Reason: "not that"}},
		{Name: "json", Args: []string{"--json", "j", "--reason=x"}, Want: DeclineOptions{ID: "j", Reason: "x", JSON: true}},
		{Name: "no reason", Args: []string{"j"}, Err: "jobs decline needs --reason TEXT: the job's record and the model keep it"},
		{Name: "blank reason", Args: []string{"j", "--reason", " "}, Err: "jobs decline needs --reason TEXT"},
		{Name: "no id", Args: []string{"--reason", "x"}, Err: "usage: axlr-tui jobs decline ID --reason TEXT [--json]"},
	})
}

// TestDeclineRun: decline sends its reason (shared's TestDecide covers the
// refusals).
func TestDeclineRun(t *testing.T) {
	rec := domain.Record{ID: "m", Status: domain.AwaitingMerge, PullRequest: 9, Pending: &domain.Pending{Kind: domain.PendingMerge, PullRequest: 9}}
	fake := &cmdtest.Jobs{Records: []domain.Record{rec}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return declineRun(context.Background(), &DeclineOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: rec.ID, Reason: "no"})
	})
	want := workflows.JobDecision{Job: rec.ID, Kind: domain.PendingMerge, Reason: "no"}
	if got.Code != 0 || len(fake.Decisions) != 1 || fake.Decisions[0] != want || !fake.Closed {
		t.Fatalf("ran %+v, decided %+v", got, fake.Decisions)
	}
}
