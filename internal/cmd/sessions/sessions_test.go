package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

// fakeClient is axlrd as the listing sees it: it lists sessions and
// answers each record query from records, or refuses it with errs', and
// keeps the sessions it was asked about.
type fakeClient struct {
	sessions []client.SessionSummary
	records  map[string]workflows.SessionRecord
	errs     map[string]error
	asked    []string
	closed   bool
}

func (c *fakeClient) Close()                            { c.closed = true }
func (c *fakeClient) CheckWorker(context.Context) error { return nil }
func (c *fakeClient) Sessions(context.Context) ([]client.SessionSummary, error) {
	return c.sessions, nil
}
func (c *fakeClient) SessionRecord(_ context.Context, id string) (workflows.SessionRecord, error) {
	c.asked = append(c.asked, id)
	return c.records[id], c.errs[id]
}

const (
	s1 = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"
	s2 = "7d2e1b63-9c2f-4d2f-8e72-7a2d1c3b8f21"
	s3 = "8e3f2c74-ad30-4e30-9f83-8b3e2d4c9a32"
	s4 = "9f403d85-be41-4f41-a094-9c4f3e5dab43"
	s5 = "a0514e96-cf52-4052-b1a5-ad504f6ebc54"
)

var at = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// summaries are five sessions, newest first, as client.Sessions lists
// them: two whose records are open and closed, one that never had a
// prompt, one whose record query fails, and one whose workflow ended.
func summaries() []client.SessionSummary {
	sum := func(id, status string, h int) client.SessionSummary {
		return client.SessionSummary{SessionID: id, WorkflowID: "axlr-session-" + id, Status: status,
			Started: at.Add(time.Duration(-h) * time.Hour), Updated: at.Add(time.Duration(-h)*time.Hour + 30*time.Minute)}
	}
	return []client.SessionSummary{sum(s1, "running", 0), sum(s2, "continued as new", 1), sum(s3, "running", 2), sum(s4, "paused", 3), sum(s5, "completed", 4)}
}

func fake() *fakeClient {
	return &fakeClient{sessions: summaries(),
		records: map[string]workflows.SessionRecord{
			s1: {Instance: "axlr-session-" + s1, Iteration: 3, Claimed: true, Turns: 2},
			s2: {Instance: "axlr-session-" + s2 + "-2", Part: 2, Turns: 1001, Closed: true},
			s3: {},
		},
		errs: map[string]error{s4: errors.New("read the record of session " + s4 + ": query failed\nstack")},
	}
}

func TestNewCmdSessions(t *testing.T) {
	cmdtest.Group(t, func(f *factory.Factory) *cobra.Command { return NewCmdSessions(f, nil) }, "close", "show")
	flags := func(o ListOptions) ListOptions { return ListOptions{JSON: o.JSON} }
	cmdtest.Parse(t, NewCmdSessions, flags, []cmdtest.ParseCase[ListOptions]{
		{Name: "alone", Args: []string{}, Want: ListOptions{}},
		{Name: "json", Args: []string{"--json"}, Want: ListOptions{JSON: true}},
		{Name: "an unknown flag", Args: []string{"--all"}, Err: "flag provided but not defined: -all"},
	})
}

// TestListRun: one session a line, newest first, with its record's
// instance, turns and whether it is closed, then the workflow's status
// and when it last changed. Only the sessions whose workflow runs are
// asked for their record; a session that never had a prompt, one whose
// query failed (said on stderr, one line) and one whose workflow ended
// show "-".
func TestListRun(t *testing.T) {
	c := fake()
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](c)})
	})
	want := cmdtest.Ran{Stdout: "" +
		"SESSION                               INSTANCE                                             TURNS  RECORD  STATUS            UPDATED\n" +
		s1 + "  axlr-session-" + s1 + "    2      open    running           2026-12-01T12:30:00Z\n" +
		s2 + "  axlr-session-" + s2 + "-2  1001   closed  continued as new  2026-12-01T11:30:00Z\n" +
		s3 + "  -                                                    -      -       running           2026-12-01T10:30:00Z\n" +
		s4 + "  -                                                    -      -       paused            2026-12-01T09:30:00Z\n" +
		s5 + "  -                                                    -      -       completed         2026-12-01T08:30:00Z\n",
		Stderr: "axlr-tui: read the record of session " + s4 + ": query failed\n"}
	if got != want {
		t.Fatalf("ran\n%+v\nwant\n%+v", got, want)
	}
	if !slices.Equal(c.asked, []string{s1, s2, s3, s4}) || !c.closed {
		t.Errorf("asked the records of %q (closed %v), want the four open sessions'", c.asked, c.closed)
	}
}

// TestListRunUnreachable: once axlrd does not answer a record query, the
// sessions after it are not asked (each would wait the query's bound),
// and show "-".
func TestListRunUnreachable(t *testing.T) {
	c := fake()
	c.errs = map[string]error{s2: &client.UnreachableError{Address: "127.0.0.1:7233", Err: errors.New("no answer in 10s")}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](c)})
	})
	if !slices.Equal(c.asked, []string{s1, s2}) || got.Code != 0 {
		t.Fatalf("asked %q, ran %+v: want s1 and s2 asked, and exit 0", c.asked, got)
	}
	if want := "axlr-tui: " + c.errs[s2].Error() + "\n"; got.Stderr != want {
		t.Errorf("stderr %q, want %q", got.Stderr, want)
	}
}

// TestListRunJSON: --json prints one line, the array of the rows; it
// decodes to them, with the record's fields empty where it is not known.
func TestListRunJSON(t *testing.T) {
	if got, want := cmdtest.JSONFields(Row{}), []string{"session_id", "workflow_id", "status", "started", "updated", "instance", "turns", "closed"}; !slices.Equal(got, want) {
		t.Fatalf("row fields %q, want %q", got, want)
	}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](fake()), JSON: true})
	})
	var rows []Row
	if err := json.Unmarshal([]byte(got.Stdout), &rows); err != nil || got.Code != 0 {
		t.Fatalf("ran %+v: %v", got, err)
	}
	sum := summaries()
	want := make([]Row, len(sum))
	for i, s := range sum {
		want[i] = Row{SessionID: s.SessionID, WorkflowID: s.WorkflowID, Status: s.Status, Started: s.Started, Updated: s.Updated}
	}
	want[0].Instance, want[0].Turns = "axlr-session-"+s1, 2
	want[1].Instance, want[1].Turns, want[1].Closed = "axlr-session-"+s2+"-2", 1001, true
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("--json decodes to\n%+v\nwant\n%+v", rows, want)
	}
	if n := len(got.Stdout); got.Stdout[n-1] != '\n' || slices.Contains([]byte(got.Stdout[:n-1]), '\n') {
		t.Errorf("--json is not one line:\n%s", got.Stdout)
	}
}

// TestListRunEmpty: no sessions is said on stderr.
func TestListRunEmpty(t *testing.T) {
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](&fakeClient{})})
	})
	want := cmdtest.Ran{Stderr: "axlr-tui: no sessions on this host yet: a prompt starts one (axlr-tui exec \"<prompt>\", or the terminal UI)\n"}
	if got != want {
		t.Fatalf("ran %+v, want %+v", got, want)
	}
}
