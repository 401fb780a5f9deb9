package list

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
)

func TestNewCmdList(t *testing.T) {
	cmdtest.Parse(t, NewCmdList, func(o ListOptions) ListOptions { return ListOptions{JSON: o.JSON} }, []cmdtest.ParseCase[ListOptions]{
		{Name: "table", Args: []string{}},
		{Name: "json", Args: []string{"--json"}, Want: ListOptions{JSON: true}},
		{Name: "an argument", Args: []string{"x"}, Err: "usage: axlr-tui jobs list [--json]"},
	})
}

// TestListRun: the list is a table of every job, newest first as the
// registry gives them; --json prints the records on one line; no job yet
// says how to start one.
func TestListRun(t *testing.T) {
	tests := []struct {
		name    string
		records []domain.Record
		ran     cmdtest.Ran
	}{
		{name: "list", records: cmdtest.JobRecords(), ran: cmdtest.Ran{Stdout: "" +
			"ID                                     KIND     STATUS          STEP    PULL REQUEST  QUEUE      UPDATED\n" +
			"20261201-1200-the-watch-never-settles  repair   awaiting_merge  decide  #12           #2 queued  2026-12-01T13:00:00Z\n" +
			"20261201-1100-add-a-changelog-entry    improve  preparing       -       -             -          2026-12-01T11:00:00Z\n"}},
		{name: "none yet", ran: cmdtest.Ran{Stderr: "axlr-tui: no jobs yet; start one with --repair \"<failure brief>\" or --improve \"<improvement brief>\"\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &cmdtest.Jobs{Records: tt.records}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](fake)})
			})
			if got != tt.ran || !fake.Closed {
				t.Fatalf("ran %+v, want %+v (closed %v)", got, tt.ran, fake.Closed)
			}
		})
	}
}

// TestListRunJSON: --json prints the records as one line, the job
// record's JSON (its field names are pinned in package jobs).
func TestListRunJSON(t *testing.T) {
	fake := &cmdtest.Jobs{Records: cmdtest.JobRecords()}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](fake), JSON: true})
	})
	var recs []map[string]any
	if err := json.Unmarshal([]byte(got.Stdout), &recs); err != nil || len(recs) != 2 || strings.Count(got.Stdout, "\n") != 1 {
		t.Fatalf("output %q: %v", got.Stdout, err)
	}
	if recs[0]["id"] != fake.Records[0].ID || recs[0]["pull_request"] != float64(12) {
		t.Fatalf("first record %v", recs[0])
	}
}
