package wake

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/workflows"
)

// fakeClient is axlrd as wake sees it: it answers every read with res,
// or refuses it with err, and keeps what it was asked.
type fakeClient struct {
	res       workflows.MemoryReadResult
	err       error
	workerErr error
	asked     []workflows.MemoryReadInput
	closed    bool
}

func (c *fakeClient) Close()                            { c.closed = true }
func (c *fakeClient) CheckWorker(context.Context) error { return c.workerErr }
func (c *fakeClient) Memory(_ context.Context, in workflows.MemoryReadInput) (workflows.MemoryReadResult, error) {
	c.asked = append(c.asked, in)
	return c.res, c.err
}

func TestNewCmdWake(t *testing.T) {
	flags := func(o WakeOptions) WakeOptions {
		return WakeOptions{About: o.About, Intent: o.Intent, Bytes: o.Bytes, JSON: o.JSON}
	}
	const usage = `usage: axlr-tui memory wake ABOUT "<intent>" [--bytes N] [--json]`
	cmdtest.Parse(t, NewCmdWake, flags, []cmdtest.ParseCase[WakeOptions]{
		{Name: "about and intent", Args: []string{"repo:o/r", "the build fails"}, Want: WakeOptions{About: "repo:o/r", Intent: "the build fails", Bytes: 2048}},
		{Name: "bytes and json", Args: []string{"--bytes", "512", "--json", "ws:s1", "resume"}, Want: WakeOptions{About: "ws:s1", Intent: "resume", Bytes: 512, JSON: true}},
		{Name: "bytes below the least", Args: []string{"repo:o/r", "x", "--bytes", "511"}, Err: "--bytes is 511: at least 512"},
		{Name: "bytes not a number", Args: []string{"repo:o/r", "x", "--bytes", "many"}, Err: `invalid argument "many" for "--bytes" flag`},
		{Name: "no intent", Args: []string{"repo:o/r"}, Err: usage},
		{Name: "three arguments", Args: []string{"repo:o/r", "x", "y"}, Err: usage},
		{Name: "empty about", Args: []string{" ", "x"}, Err: "memory wake: ABOUT is empty"},
		{Name: "unknown flag", Args: []string{"repo:o/r", "x", "--kind", "turn"}, Err: "flag provided but not defined: -kind"},
	})
}

// wakeResult is a wake with lines in every section but the open loops,
// two causes (one without a because) and a warning.
func wakeResult(hasMore bool) *kmp.WakeResult {
	return &kmp.WakeResult{
		Summary: "recalled 5 memories about repo:o/r",
		Wake: kmp.Wake{
			Objective:    "the build fails",
			CurrentState: []string{"repo:o/r:entry:7 main fails to build since the parser change", "repo:o/r:entry:6 CI runs go test ./..."},
			CausalSpine: []kmp.Cause{
				{Claim: "the parser drops the version field", Because: "the schema renamed it", EvidenceRef: "repo:o/r:entry:4"},
				{Claim: "the fixture is stale", EvidenceRef: "repo:o/r:entry:3"},
			},
			NextActions: []string{"repo:o/r:entry:5 regenerate the fixtures"},
			Guardrails:  []string{"repo:o/r:entry:2 never edit generated files by hand"},
		},
		Proof:    kmp.Proof{Evidence: []string{"repo:o/r:entry:4"}, MatchedTerms: []string{"build"}, Confidence: "medium"},
		Warnings: []string{"2 memories left out of the budget"},
		Projection: kmp.Projection{Contract: "wake.v1", Budget: kmp.ProjectionBudget{MaxBytes: 2048, UsedBytes: 391},
			Page: kmp.Page{Returned: 5, Total: 7, HasMore: hasMore}},
	}
}

// TestWakeRun: the wake's summary, each section that has lines under its
// heading (a cause as kmp reads it), and what it used of the budget, with
// a hint when the memory left some out; its warnings go on stderr. It asks
// for the about, the intent and the budget.
func TestWakeRun(t *testing.T) {
	const sections = "recalled 5 memories about repo:o/r\n" +
		"\n" +
		"current state:\n" +
		"  repo:o/r:entry:7 main fails to build since the parser change\n" +
		"  repo:o/r:entry:6 CI runs go test ./...\n" +
		"\n" +
		"causes:\n" +
		"  repo:o/r:entry:4 the parser drops the version field — because the schema renamed it\n" +
		"  repo:o/r:entry:3 the fixture is stale\n" +
		"\n" +
		"next actions:\n" +
		"  repo:o/r:entry:5 regenerate the fixtures\n" +
		"\n" +
		"guardrails:\n" +
		"  repo:o/r:entry:2 never edit generated files by hand\n" +
		"\n"
	tests := []struct {
		name string
		res  *kmp.WakeResult
		ran  cmdtest.Ran
	}{
		{name: "all returned", res: wakeResult(false), ran: cmdtest.Ran{
			Stdout: sections + "391 of 2048 bytes; 5 of 7 memories\n",
			Stderr: "warning: 2 memories left out of the budget\n"}},
		{name: "more left out", res: wakeResult(true), ran: cmdtest.Ran{
			Stdout: sections + "391 of 2048 bytes; 5 of 7 memories (more left out: raise --bytes)\n",
			Stderr: "warning: 2 memories left out of the budget\n"}},
		{name: "nothing recalled", res: &kmp.WakeResult{Summary: "no memory about ws:s1 matches the intent",
			Projection: kmp.Projection{Budget: kmp.ProjectionBudget{MaxBytes: 512}}}, ran: cmdtest.Ran{
			Stdout: "no memory about ws:s1 matches the intent\n\n0 of 512 bytes; 0 of 0 memories\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{res: workflows.MemoryReadResult{Wake: tt.res}}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return wakeRun(context.Background(), &WakeOptions{IO: ios, Client: cmdtest.Dial[Client](fake), About: "repo:o/r", Intent: "the build fails", Bytes: 2048})
			})
			if got != tt.ran || !fake.closed {
				t.Fatalf("ran %+v, want %+v (closed %v)", got, tt.ran, fake.closed)
			}
			want := []workflows.MemoryReadInput{{Op: workflows.MemoryWake, About: "repo:o/r", Intent: "the build fails", MaxBytes: 2048}}
			if !reflect.DeepEqual(fake.asked, want) {
				t.Errorf("asked %+v, want %+v", fake.asked, want)
			}
		})
	}
}

// TestWakeRunJSON: --json prints the wake itself, indented, and nothing
// on stderr: it decodes to the wake axlrd returned.
func TestWakeRunJSON(t *testing.T) {
	fake := &fakeClient{res: workflows.MemoryReadResult{Wake: wakeResult(true)}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return wakeRun(context.Background(), &WakeOptions{IO: ios, Client: cmdtest.Dial[Client](fake), About: "repo:o/r", Intent: "x", Bytes: 2048, JSON: true})
	})
	var w kmp.WakeResult
	if err := json.Unmarshal([]byte(got.Stdout), &w); err != nil || got.Code != 0 || got.Stderr != "" {
		t.Fatalf("ran %+v: %v", got, err)
	}
	if !reflect.DeepEqual(&w, wakeResult(true)) {
		t.Errorf("--json decodes to\n%+v\nwant\n%+v", w, wakeResult(true))
	}
	if !strings.HasPrefix(got.Stdout, "{\n  \"summary\": \"recalled 5 memories about repo:o/r\",\n  \"wake\": {\n    \"objective\"") {
		t.Errorf("--json is not the indented wake:\n%s", got.Stdout)
	}
}

// TestWakeRunFailed: the memory's refusal is printed in its words and
// exits 1; axlrd unreachable, or no worker on this host, exits 4 without
// asking for the wake.
func TestWakeRunFailed(t *testing.T) {
	unreachable := &client.UnreachableError{Address: "127.0.0.1:1", Err: errors.New("connection refused")}
	noWorker := &client.NoWorkerError{TaskQueue: "axlr-host-h"}
	tests := []struct {
		name  string
		fake  *fakeClient
		dial  error
		code  int
		err   string
		asked int
	}{
		{name: "no memory about it", fake: &fakeClient{err: &client.RefusedError{Message: "not_found: no memory about repo:x"}},
			code: cmdutil.ExitFailed, err: "not_found: no memory about repo:x", asked: 1},
		{name: "axlrd unreachable", fake: &fakeClient{}, dial: unreachable, code: cmdutil.ExitUnreachable, err: unreachable.Error()},
		{name: "no worker", fake: &fakeClient{workerErr: noWorker}, code: cmdutil.ExitUnreachable, err: noWorker.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dial := cmdtest.Dial[Client](tt.fake)
			if tt.dial != nil {
				dial = func(context.Context) (Client, error) { return nil, tt.dial }
			}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return wakeRun(context.Background(), &WakeOptions{IO: ios, Client: dial, About: "repo:x", Intent: "x", Bytes: 2048})
			})
			want := cmdtest.Ran{Code: tt.code, Stderr: "axlr-tui: " + tt.err + "\n"}
			if got != want || len(tt.fake.asked) != tt.asked {
				t.Fatalf("ran %+v, want %+v (asked %d times)", got, want, len(tt.fake.asked))
			}
		})
	}
}
