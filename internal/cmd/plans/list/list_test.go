package list

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
)

func TestNewCmdList(t *testing.T) {
	cmdtest.Parse(t, NewCmdList, func(o ListOptions) ListOptions { return ListOptions{JSON: o.JSON} }, []cmdtest.ParseCase[ListOptions]{
		{Name: "json", Args: []string{"--json"}, Want: ListOptions{JSON: true}},
		{Name: "an argument", Args: []string{"card"}, Err: "usage: axlr-tui plans list [--json]"},
	})
}

// TestListRun: a table of every plan with its tasks done and waves; none
// yet says how to start one.
func TestListRun(t *testing.T) {
	for _, tt := range []struct {
		records []domain.Record
		ran     cmdtest.Ran
	}{
		{cmdtest.PlanRecords(), cmdtest.Ran{Stdout: "" +
			"ID    STATUS             TASKS  WAVES  UPDATED\n" +
			"card  awaiting_approval  0/2    2      2026-12-01T12:00:00Z\n" +
			"cmds  awaiting_approval  0/0    0      2026-12-01T12:00:00Z\n" +
			"done  done               1/1    1      2026-12-01T12:00:00Z\n"}},
		{nil, cmdtest.Ran{Stderr: "axlr-tui: no plans yet; start one with --plan \"<brief>\"\n"}},
	} {
		got := cmdtest.Run(func(ios *factory.IOStreams) error {
			return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](&cmdtest.Plans{Records: tt.records})})
		})
		if got != tt.ran {
			t.Errorf("ran %+v, want %+v", got, tt.ran)
		}
	}
}
