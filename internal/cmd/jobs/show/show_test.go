package show

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

func TestNewCmdShow(t *testing.T) {
	cmdtest.Parse(t, NewCmdShow, func(o ShowOptions) ShowOptions { return ShowOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[ShowOptions]{
		{Name: "id", Args: []string{"j"}, Want: ShowOptions{ID: "j"}},
		{Name: "json", Args: []string{"--json", "j"}, Want: ShowOptions{ID: "j", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui jobs show ID [--json]"},
		{Name: "two ids", Args: []string{"a", "b"}, Err: "usage: axlr-tui jobs show ID [--json]"},
	})
}

// TestShowRun: show prints one record's fields, and the activities the
// job tries again against the clock; --json the record; an unknown id
// says how to list them.
func TestShowRun(t *testing.T) {
	records := cmdtest.JobRecords()
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	retries := map[string][]client.Retry{records[1].ID: {{Activity: workflows.ActivityForgePrepare, Attempt: 3, MaxAttempts: 6, Next: now.Add(4 * time.Second),
		Failure: "clone http://127.0.0.1:1/o/r.git: dial tcp 127.0.0.1:1: connect: connection refused"}}}
	tests := []struct {
		name string
		id   string
		ran  cmdtest.Ran
	}{
		{name: "show", id: records[0].ID, ran: cmdtest.Ran{Stdout: "" +
			"id:           20261201-1200-the-watch-never-settles\n" +
			"kind:         repair\n" +
			"status:       awaiting_merge\n" +
			"repository:   underpass-ai/axlr\n" +
			"step:         decide\n" +
			"pull request: #12 https://github.com/underpass-ai/axlr/pull/12\n" +
			"head:         abc123\n" +
			"queue:        #2 queued: queued\n" +
			"recovery:     recovery 1 continued instance axlr-s1-1764590400 at watch\n" +
			"attempt:      1\n" +
			"created:      2026-12-01T12:00:00Z\n" +
			"updated:      2026-12-01T13:00:00Z\n" +
			"brief:        the watch never settles\n"}},
		{name: "a job whose clone is tried again", id: records[1].ID, ran: cmdtest.Ran{Stdout: "" +
			"id:           20261201-1100-add-a-changelog-entry\n" +
			"kind:         improve\n" +
			"status:       preparing\n" +
			"created:      2026-12-01T11:00:00Z\n" +
			"updated:      2026-12-01T11:00:00Z\n" +
			"retrying:     forge.Prepare, attempt 3 of 6 in 4s; the last failed: clone http://127.0.0.1:1/o/r.git: dial tcp 127.0.0.1:1: connect: connection refused\n"}},
		{name: "unknown", id: "nope", ran: cmdtest.Ran{Code: 1, Stderr: "axlr-tui: no such job: nope (axlr-tui jobs lists the jobs)\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &cmdtest.Jobs{Records: records, Retries: retries}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](fake), Now: func() time.Time { return now }, ID: tt.id})
			})
			if got != tt.ran {
				t.Fatalf("ran %+v, want %+v", got, tt.ran)
			}
		})
	}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](&cmdtest.Jobs{Records: records}), ID: records[0].ID, JSON: true})
	})
	var rec domain.Record
	if err := json.Unmarshal([]byte(got.Stdout), &rec); err != nil || rec.ID != records[0].ID || rec.Queue.Position != 2 {
		t.Fatalf("--json %q: %v", got.Stdout, err)
	}
}
