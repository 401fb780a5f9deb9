package close

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"

// closing is the closing execution axlrd admits.
var closing = client.Execution{WorkflowID: "axlr-session-" + sid, ExecutionID: "x-close", SessionID: sid}

// fakeClient is axlrd as close sees it: it admits the close as closing
// (or refuses it with closeErr), tells the watch one event and ends it
// with res (or, under block, tells none and ends with its context), and answers the record
// query with rec. It keeps what it was asked, in order.
type fakeClient struct {
	closeErr error
	res      *contract.Result
	block    bool
	rec      workflows.SessionRecord
	asked    []string
	closed   bool
}

func (c *fakeClient) Close()                            { c.closed = true }
func (c *fakeClient) CheckWorker(context.Context) error { return nil }
func (c *fakeClient) CloseSession(_ context.Context, id, reason string) (client.Execution, error) {
	c.asked = append(c.asked, "close "+id+" "+reason)
	if c.closeErr != nil {
		return client.Execution{}, c.closeErr
	}
	return closing, nil
}
func (c *fakeClient) Watch(ctx context.Context, ex client.Execution, w client.Watcher) (*contract.Result, error) {
	c.asked = append(c.asked, "watch "+ex.ExecutionID)
	if c.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	w.Event(contract.Event{Type: contract.EventSession, SessionID: ex.SessionID})
	return c.res, nil
}
func (c *fakeClient) SessionRecord(_ context.Context, id string) (workflows.SessionRecord, error) {
	c.asked = append(c.asked, "record "+id)
	return c.rec, nil
}

func TestNewCmdClose(t *testing.T) {
	flags := func(o CloseOptions) CloseOptions { return CloseOptions{SessionID: o.SessionID, Reason: o.Reason} }
	cmdtest.Parse(t, NewCmdClose, flags, []cmdtest.ParseCase[CloseOptions]{
		{Name: "id", Args: []string{sid}, Want: CloseOptions{SessionID: sid}},
		{Name: "reason", Args: []string{sid, "--reason", "the parser is fixed"}, Want: CloseOptions{SessionID: sid, Reason: "the parser is fixed"}},
		{Name: "no id", Args: []string{}, Err: Usage},
		{Name: "two ids", Args: []string{sid, sid}, Err: Usage},
		{Name: "not a session id", Args: []string{"S1"}, Err: `sessions close: "S1" is not a session id (a lowercase UUID`},
		{Name: "reason without a value", Args: []string{sid, "--reason"}, Err: "flag needs an argument: --reason"},
	})
}

// TestCloseRun: the close is asked with the reason, its execution waited
// for (its progress on stderr), then the record read says where it
// stands; a session that never had a prompt closes with no record.
func TestCloseRun(t *testing.T) {
	done := &contract.Result{Status: contract.Completed, SessionID: sid}
	for _, tt := range []struct {
		name string
		rec  workflows.SessionRecord
		want string
	}{
		{"turns", workflows.SessionRecord{Instance: "axlr-session-" + sid, Turns: 3, Closed: true}, "session " + sid + " closed: axlr-session-" + sid + ", 3 turns\n"},
		{"one turn", workflows.SessionRecord{Instance: "axlr-session-" + sid, Turns: 1, Closed: true}, "session " + sid + " closed: axlr-session-" + sid + ", 1 turn\n"},
		{"no record", workflows.SessionRecord{}, "session " + sid + " closed: it never had a prompt, so it has no record\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{res: done, rec: tt.rec}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return closeRun(context.Background(), &CloseOptions{IO: ios, Client: cmdtest.Dial[Client](fake), SessionID: sid, Reason: "done"})
			})
			if want := (cmdtest.Ran{Stdout: tt.want, Stderr: "· session " + sid + "\n"}); got != want {
				t.Fatalf("ran %+v, want %+v", got, want)
			}
			if want := []string{"close " + sid + " done", "watch x-close", "record " + sid}; !slices.Equal(fake.asked, want) || !fake.closed {
				t.Errorf("asked %q (closed %v), want %q", fake.asked, fake.closed, want)
			}
		})
	}
}

// TestCloseRunRefused: a busy session's refusal, and a closed one's, are
// printed in axlrd's words and exit 1, nothing waited for; axlrd gone
// exits 4; a closing execution that did not complete exits 1 naming it.
func TestCloseRunRefused(t *testing.T) {
	unreachable := &client.UnreachableError{Address: "127.0.0.1:7233", Err: errors.New("connection refused")}
	for _, tt := range []struct {
		name  string
		fake  *fakeClient
		want  cmdtest.Ran
		asked []string
	}{
		{"busy", &fakeClient{closeErr: &client.RefusedError{Message: "session " + sid + " is running execution e2: wait for it to end or interrupt it"}},
			cmdtest.Ran{Code: cmdutil.ExitFailed, Stderr: "axlr-tui: session " + sid + " is running execution e2: wait for it to end or interrupt it\n"},
			[]string{"close " + sid + " "}},
		{"closed already", &fakeClient{closeErr: &client.RefusedError{Message: "close: session " + sid + " is closed already (axlr-session-" + sid + ")"}},
			cmdtest.Ran{Code: cmdutil.ExitFailed, Stderr: "axlr-tui: close: session " + sid + " is closed already (axlr-session-" + sid + ")\n"},
			[]string{"close " + sid + " "}},
		{"unreachable", &fakeClient{closeErr: unreachable},
			cmdtest.Ran{Code: cmdutil.ExitUnreachable, Stderr: "axlr-tui: " + unreachable.Error() + "\n"},
			[]string{"close " + sid + " "}},
		{"the closing execution failed", &fakeClient{res: &contract.Result{Status: contract.Failed, Error: "memory write failed"}},
			cmdtest.Ran{Code: cmdutil.ExitFailed, Stderr: "· session " + sid + "\naxlr-tui: close session " + sid + ": the closing execution x-close ended failed: memory write failed\n"},
			[]string{"close " + sid + " ", "watch x-close"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return closeRun(context.Background(), &CloseOptions{IO: ios, Client: cmdtest.Dial[Client](tt.fake), SessionID: sid})
			})
			if got != tt.want || !slices.Equal(tt.fake.asked, tt.asked) {
				t.Fatalf("ran %+v, asked %q; want %+v, %q", got, tt.fake.asked, tt.want, tt.asked)
			}
		})
	}
}

// TestCloseRunCtrlC: the first Ctrl+C says the close goes on, the second
// leaves the wait (exit 130) without reading the record.
func TestCloseRunCtrlC(t *testing.T) {
	interrupts := make(chan os.Signal, 2)
	interrupts <- os.Interrupt
	interrupts <- os.Interrupt
	fake := &fakeClient{block: true}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return closeRun(context.Background(), &CloseOptions{IO: ios, Client: cmdtest.Dial[Client](fake), Interrupts: interrupts, SessionID: sid})
	})
	want := cmdtest.Ran{Code: cmdutil.ExitSignal, Stderr: Notice + "\naxlr-tui: " + cmdutil.ErrLeft.Error() + "\n"}
	if got != want || !slices.Equal(fake.asked, []string{"close " + sid + " ", "watch x-close"}) {
		t.Fatalf("ran %+v, asked %q; want %+v", got, fake.asked, want)
	}
}
