package queue

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

func TestNewCmdQueue(t *testing.T) {
	cmdtest.Parse(t, NewCmdQueue, func(o QueueOptions) QueueOptions { return QueueOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[QueueOptions]{
		{Name: "id", Args: []string{"j"}, Want: QueueOptions{ID: "j"}},
		{Name: "json", Args: []string{"j", "--json"}, Want: QueueOptions{ID: "j", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui jobs queue ID [--json]"},
	})
}

// TestQueueRun: a job that waits for its merge is queued, and its place
// said; any other is refused.
func TestQueueRun(t *testing.T) {
	records := cmdtest.JobRecords()
	tests := []struct {
		name string
		id   string
		ran  cmdtest.Ran
	}{
		{name: "waits for its merge", id: records[0].ID, ran: cmdtest.Ran{Stdout: "queued job 20261201-1200-the-watch-never-settles: #2 in the merge queue of underpass-ai/axlr (main)\n"}},
		{name: "prepares", id: records[1].ID, ran: cmdtest.Ran{Code: 1,
			Stderr: "axlr-tui: job 20261201-1100-add-a-changelog-entry is preparing: only a job that waits for its merge decision is queued\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return queueRun(context.Background(), &QueueOptions{IO: ios, Client: cmdtest.Dial[Client](&cmdtest.Jobs{Records: records}), ID: tt.id})
			})
			if got != tt.ran {
				t.Fatalf("ran %+v, want %+v", got, tt.ran)
			}
		})
	}
}
