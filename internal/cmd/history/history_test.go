package history

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"

func TestFields(t *testing.T) {
	if got := cmdtest.JSONFields(client.Trajectory{}); !slices.Equal(got, TrajectoryFields) {
		t.Errorf("trajectory fields are %q, declared %q", got, TrajectoryFields)
	}
	if got := cmdtest.JSONFields(client.Step{}); !slices.Equal(got, StepFields) {
		t.Errorf("step fields are %q, declared %q", got, StepFields)
	}
}

func TestNewCmdHistory(t *testing.T) {
	tests := []struct {
		name string
		args []string
		id   string
		json bool
		err  string
	}{
		{"session id", []string{sid}, sid, false, ""},
		{"workflow id", []string{"axlr-session-" + sid, "--json"}, "axlr-session-" + sid, true, ""},
		{"task workflow id", []string{"--json", "axlr-task-" + sid}, "axlr-task-" + sid, true, ""},
		{"no id", []string{}, "", false, "usage: axlr-tui history ID [--json] (a session id or a workflow id)"},
		{"neither", []string{"S"}, "", false, `"S" is neither a session id (a lowercase UUID) nor a workflow id (axlr-…)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := factory.Test()
			var got *HistoryOptions
			cmd := NewCmdHistory(&factory.Factory{IOStreams: ios}, func(_ context.Context, o *HistoryOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			_, err := cmd.ExecuteC()
			if tt.err != "" {
				var fe *cmdutil.FlagError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got.ID != tt.id || got.JSON != tt.json || got.Now == nil {
				t.Fatalf("options %+v, %v", got, err)
			}
		})
	}
}

type fakeClient struct {
	trajectory *client.Trajectory
	err        error
	asked      string
}

func (f *fakeClient) History(_ context.Context, id string) (*client.Trajectory, error) {
	f.asked = id
	return f.trajectory, f.err
}

func (f *fakeClient) Close() {}

func ms(n int) *client.Duration {
	d := client.Duration(time.Duration(n) * time.Millisecond)
	return &d
}

var (
	start      = time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)
	trajectory = &client.Trajectory{
		WorkflowID: "axlr-session-" + sid,
		Runs:       []string{"run-1", "run-2"},
		Steps: []client.Step{
			{Time: start, RunID: "run-1", Kind: "workflow", Name: "started", Detail: "first run", Outcome: "axlr-host-h"},
			{Time: start.Add(10 * time.Millisecond), RunID: "run-1", Kind: "update", Name: "execute", Detail: `"create notes.md" approve none`, Outcome: "accepted"},
			{Time: start.Add(15 * time.Millisecond), RunID: "run-1", Kind: "local_activity", Name: "BeginTurn", Detail: "model m", Duration: ms(5), Outcome: "revision 3"},
			{Time: start.Add(20 * time.Millisecond), RunID: "run-1", Kind: "activity", Name: "ModelRequest", Detail: "m at revision 3", Attempt: 2, Duration: ms(1250),
				Outcome: "failed", Error: "provider: 500\nretrying"},
			{Time: start.Add(2 * time.Second), RunID: "run-1", Kind: "workflow", Name: "continued as new", Outcome: "run-2"},
			{Time: start.Add(3 * time.Second), RunID: "run-2", Kind: "update", Name: "decide", Detail: "approve exec-1", Outcome: "accepted"},
			{Time: start.Add(4 * time.Second), RunID: "run-2", Kind: "activity", Name: "ToolCall", Detail: "local_exec call exec-1 · approve", Attempt: 1, Duration: ms(40),
				Outcome: "completed: exit code 0"},
		},
	}
)

func TestHistoryRun(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		name   string
		json   bool
		tty    bool
		fake   fakeClient
		code   int
		stdout string
		golden bool
		stderr string
	}{
		{name: "json", json: true, fake: fakeClient{trajectory: trajectory}, golden: true},
		{name: "pipe", fake: fakeClient{trajectory: trajectory}, stdout: "" +
			"2026-03-02T09:15:00.000Z\tworkflow started\tfirst run\t-\t-\taxlr-host-h\n" +
			"2026-03-02T09:15:00.010Z\tupdate execute\t\"create notes.md\" approve none\t-\t-\taccepted\n" +
			"2026-03-02T09:15:00.015Z\tlocal_activity BeginTurn\tmodel m\t-\t5ms\trevision 3\n" +
			"2026-03-02T09:15:00.020Z\tactivity ModelRequest\tm at revision 3\t2\t1.25s\tfailed: provider: 500\n" +
			"2026-03-02T09:15:02.000Z\tworkflow continued as new\t\t-\t-\trun-2\n" +
			"2026-03-02T09:15:03.000Z\tupdate decide\tapprove exec-1\t-\t-\taccepted\n" +
			"2026-03-02T09:15:04.000Z\tactivity ToolCall\tlocal_exec call exec-1 · approve\t1\t40ms\tcompleted: exit code 0\n"},
		{name: "terminal", tty: true, fake: fakeClient{trajectory: trajectory}, stdout: "" +
			"workflow axlr-session-" + sid + " · 2 run(s) · started 5 minutes ago\n" +
			"TIME          STEP                       DETAIL                            ATTEMPT  TOOK   OUTCOME\n" +
			"10:15:00.000  workflow started           first run                         -        -      axlr-host-h\n" +
			"10:15:00.010  update execute             \"create notes.md\" approve none    -        -      accepted\n" +
			"10:15:00.015  local_activity BeginTurn   model m                           -        5ms    revision 3\n" +
			"10:15:00.020  activity ModelRequest      m at revision 3                   2        1.25s  failed: provider: 500\n" +
			"10:15:02.000  workflow continued as new                                    -        -      run-2\n" +
			"10:15:03.000  update decide              approve exec-1                    -        -      accepted\n" +
			"10:15:04.000  activity ToolCall          local_exec call exec-1 · approve  1        40ms   completed: exit code 0\n"},
		{name: "no session", fake: fakeClient{err: &client.NotFoundError{SessionID: sid}}, code: 1, stderr: "axlr-tui: no session " + sid + " in axlrd\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, stdout, stderr := factory.Test()
			ios.SetStdoutTTY(tt.tty)
			fake := &tt.fake
			opts := &HistoryOptions{IO: ios, ID: sid, JSON: tt.json,
				Now:    func() time.Time { return start.Add(5*time.Minute + 30*time.Second).In(cet) },
				Client: func(context.Context) (Client, error) { return fake, nil }}
			code := cmdutil.ExitCode(historyRun(context.Background(), opts), stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if tt.golden {
				cmdtest.Golden(t, stdout.Bytes(), *update)
			} else if stdout.String() != tt.stdout {
				t.Errorf("stdout\n%s\nwant\n%s", stdout, tt.stdout)
			}
			if stderr.String() != tt.stderr || fake.asked != sid {
				t.Errorf("stderr %q, want %q; asked for %q", stderr, tt.stderr, fake.asked)
			}
		})
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "less than a minute ago"},
		{59 * time.Second, "less than a minute ago"},
		{90 * time.Second, "about 1 minute ago"},
		{59 * time.Minute, "59 minutes ago"},
		{90 * time.Minute, "about 1 hour ago"},
		{23 * time.Hour, "23 hours ago"},
		{47 * time.Hour, "about 1 day ago"},
		{72 * time.Hour, "3 days ago"},
	} {
		if got := ago(now, now.Add(-tt.d)); got != tt.want {
			t.Errorf("ago(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
