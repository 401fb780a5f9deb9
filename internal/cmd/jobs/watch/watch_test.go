package watch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
)

func TestNewCmdWatch(t *testing.T) {
	cmdtest.Parse(t, NewCmdWatch, func(o WatchOptions) WatchOptions { return WatchOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[WatchOptions]{
		{Name: "id", Args: []string{"j"}, Want: WatchOptions{ID: "j"}},
		{Name: "json", Args: []string{"j", "--json"}, Want: WatchOptions{ID: "j", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui jobs watch ID [--json]"},
	})
}

// TestWatchRun: the watch prints the job, follows it and ends with its
// code: 3 while it waits for the person, 0 merged; a job whose workflow is
// gone ends as its record says, and one that never ended is the error.
func TestWatchRun(t *testing.T) {
	merged := domain.Record{ID: "d", Kind: domain.Repair, Status: domain.Completed, Repository: "o/r", PullRequest: 7, URL: "https://x/pull/7", MergeSHA: "0123456789abcdef"}
	gone := errors.New("no workflow")
	tests := []struct {
		name string
		fake *cmdtest.Jobs
		id   string
		json bool
		ran  cmdtest.Ran
	}{
		{name: "waits for the check", id: cmdtest.WaitingCheck.ID,
			fake: &cmdtest.Jobs{Records: []domain.Record{cmdtest.WaitingCheck}, End: client.JobEnd{Record: cmdtest.WaitingCheck}},
			ran: cmdtest.Ran{Code: 3, Stdout: "job 20261201-1200-parse-fails waits for your approval of its check command: go test ./...\n",
				Stderr: "axlr-tui: job 20261201-1200-parse-fails (repair of ): awaiting_approval\n" +
					"axlr-tui: axlr-tui jobs approve 20261201-1200-parse-fails runs it; axlr-tui jobs deny 20261201-1200-parse-fails --reason TEXT sends the model back\n"}},
		{name: "workflow gone, job merged", id: "d", fake: &cmdtest.Jobs{Records: []domain.Record{merged}, NowErr: gone},
			ran: cmdtest.Ran{Stdout: "job d completed: pull request #7 https://x/pull/7 merged as 0123456789ab\n"}},
		{name: "workflow gone, job merged, json", id: "d", json: true, fake: &cmdtest.Jobs{Records: []domain.Record{merged}, NowErr: gone},
			ran: cmdtest.Ran{Stdout: `{"type":"job","job":` + cmdtest.JSON(t, merged) + "}\n" +
				`{"type":"result","result":{"schema":"` + contract.Schema + `","status":"completed","session_id":"","sessions":null,"answer":"","tool_calls":[],"usage":` +
				cmdtest.JSON(t, contract.Usage{}) + `,"artifacts":[],"job":` + cmdtest.JSON(t, merged) + "}}\n"}},
		{name: "workflow gone, job not ended", id: cmdtest.WaitingCheck.ID, fake: &cmdtest.Jobs{Records: []domain.Record{cmdtest.WaitingCheck}, NowErr: gone},
			ran: cmdtest.Ran{Code: 1, Stderr: "axlr-tui: no workflow\n"}},
		{name: "no worker", id: "d", fake: &cmdtest.Jobs{WorkerErr: &client.NoWorkerError{TaskQueue: "axlr-host-h"}},
			ran: cmdtest.Ran{Code: 4, Stderr: "axlr-tui: no axlrd worker serves this host (task queue axlr-host-h): start axlrd on this machine, with the same AXLR_HOST_ID if you set it\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return watchRun(context.Background(), &WatchOptions{IO: ios, Client: cmdtest.Dial[Client](tt.fake), Now: time.Now, ID: tt.id, JSON: tt.json})
			})
			if got != tt.ran {
				t.Fatalf("ran\n%+v\nwant\n%+v", got, tt.ran)
			}
			if !tt.fake.Closed {
				t.Error("the client was not closed")
			}
		})
	}
}
