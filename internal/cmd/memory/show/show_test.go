package show

import (
	"context"
	"encoding/json"
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

// fakeClient is axlrd as show sees it: it answers every read with res,
// or refuses it with err, and keeps what it was asked.
type fakeClient struct {
	res    workflows.MemoryReadResult
	err    error
	asked  []workflows.MemoryReadInput
	closed bool
}

func (c *fakeClient) Close()                            { c.closed = true }
func (c *fakeClient) CheckWorker(context.Context) error { return nil }
func (c *fakeClient) Memory(_ context.Context, in workflows.MemoryReadInput) (workflows.MemoryReadResult, error) {
	c.asked = append(c.asked, in)
	return c.res, c.err
}

func TestNewCmdShow(t *testing.T) {
	flags := func(o ShowOptions) ShowOptions { return ShowOptions{Ref: o.Ref, About: o.About, JSON: o.JSON} }
	const usage = "usage: axlr-tui memory show REF [--about ABOUT] [--json]"
	cmdtest.Parse(t, NewCmdShow, flags, []cmdtest.ParseCase[ShowOptions]{
		{Name: "ref", Args: []string{"repo:o/r:entry:12"}, Want: ShowOptions{Ref: "repo:o/r:entry:12"}},
		{Name: "about and json", Args: []string{"--about", "repo:o/r", "repo:o/r:entry:12", "--json"},
			Want: ShowOptions{Ref: "repo:o/r:entry:12", About: "repo:o/r", JSON: true}},
		{Name: "no ref", Args: []string{}, Err: usage},
		{Name: "two refs", Args: []string{"a:entry:1", "a:entry:2"}, Err: usage},
		{Name: "empty ref", Args: []string{""}, Err: "memory show: REF is empty"},
		{Name: "about without a value", Args: []string{"a:entry:1", "--about"}, Err: "flag needs an argument: --about"},
	})
}

// entry is an entry as it reaches the command: decoded from JSON, its
// labels as encoding/json reads them (one a scalar, as a memory may
// write it).
func entry(t *testing.T) *kmp.InspectResult {
	t.Helper()
	var r kmp.InspectResult
	err := json.Unmarshal([]byte(`{"summary": "error_path repo:o/r:entry:12 about repo:o/r",
		"object": {"ref": "repo:o/r:entry:12", "kind": "error_path", "text": "the parser drops the version field\nsince the schema renamed it",
			"metadata": {"about": "repo:o/r", "actor": "axlr", "source_kind": "agent", "observed_at": "2026-12-01T12:30:05.123456789Z", "sequence": 12,
				"labels": {"kind": ["repair"], "job": ["20261201-1200-parse-fails", "20261130-0900-parse-fails"], "ceremony": "axlr_repair"}}},
		"links": {"incoming": [{"ref": "repo:o/r:entry:14", "rel": "verified_by", "why": "the fix passed go test ./..."}],
			"outgoing": [{"ref": "repo:o/r:entry:9", "rel": "contains"}, {"ref": "repo:o/r:entry:11", "rel": "supports", "why": "the brief names the parser"}]},
		"evidence": ["reproduction: go test ./parse exited 1\ntail: --- FAIL: TestParse"]}`), &r)
	if err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestShowRun: the entry's ref, kind, about, actor, observed_at and
// labels (key=value, sorted), its text, its evidence, then the links to
// and from it; a field of several lines goes on under its first, and an
// empty one is left out. It asks for the ref within the about.
func TestShowRun(t *testing.T) {
	bare := &kmp.InspectResult{Object: kmp.Object{Ref: "ws:s1:entry:1", Kind: kmp.KindTurn, Text: "hello", Metadata: map[string]any{"about": "ws:s1"}},
		Links: kmp.Links{Incoming: []kmp.LinkedRef{}, Outgoing: []kmp.LinkedRef{}}, Evidence: []string{}}
	tests := []struct {
		name  string
		about string
		res   *kmp.InspectResult
		ran   cmdtest.Ran
	}{
		{name: "labels and links", about: "repo:o/r", res: entry(t), ran: cmdtest.Ran{Stdout: "" +
			"ref:         repo:o/r:entry:12\n" +
			"kind:        error_path\n" +
			"about:       repo:o/r\n" +
			"actor:       axlr\n" +
			"observed_at: 2026-12-01T12:30:05.123456789Z\n" +
			"labels:      ceremony=axlr_repair, job=20261130-0900-parse-fails, job=20261201-1200-parse-fails, kind=repair\n" +
			"text:        the parser drops the version field\n" +
			"             since the schema renamed it\n" +
			"evidence:    reproduction: go test ./parse exited 1\n" +
			"             tail: --- FAIL: TestParse\n" +
			"incoming:    verified_by repo:o/r:entry:14 — the fix passed go test ./...\n" +
			"outgoing:    contains repo:o/r:entry:9\n" +
			"             supports repo:o/r:entry:11 — the brief names the parser\n"}},
		{name: "no labels, evidence or links", res: bare, ran: cmdtest.Ran{Stdout: "" +
			"ref:         ws:s1:entry:1\n" +
			"kind:        turn\n" +
			"about:       ws:s1\n" +
			"text:        hello\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{res: workflows.MemoryReadResult{Show: tt.res}}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](fake), Ref: tt.res.Object.Ref, About: tt.about})
			})
			if got != tt.ran || !fake.closed {
				t.Fatalf("ran %+v, want %+v (closed %v)", got, tt.ran, fake.closed)
			}
			want := []workflows.MemoryReadInput{{Op: workflows.MemoryShow, Ref: tt.res.Object.Ref, About: tt.about}}
			if !reflect.DeepEqual(fake.asked, want) {
				t.Errorf("asked %+v, want %+v", fake.asked, want)
			}
		})
	}
}

// TestShowRunJSON: --json prints the entry itself, indented: it decodes
// to the entry axlrd returned.
func TestShowRunJSON(t *testing.T) {
	fake := &fakeClient{res: workflows.MemoryReadResult{Show: entry(t)}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](fake), Ref: "repo:o/r:entry:12", JSON: true})
	})
	var r kmp.InspectResult
	if err := json.Unmarshal([]byte(got.Stdout), &r); err != nil || got.Code != 0 || got.Stderr != "" {
		t.Fatalf("ran %+v: %v", got, err)
	}
	if !reflect.DeepEqual(&r, entry(t)) {
		t.Errorf("--json decodes to\n%+v\nwant\n%+v", r, entry(t))
	}
	if !strings.HasPrefix(got.Stdout, "{\n  \"summary\": \"error_path repo:o/r:entry:12 about repo:o/r\",\n  \"object\": {") {
		t.Errorf("--json is not the indented entry:\n%s", got.Stdout)
	}
}

// TestShowRunRefused: the memory's refusal of a ref it does not hold is
// printed in its words and exits 1.
func TestShowRunRefused(t *testing.T) {
	fake := &fakeClient{err: &client.RefusedError{Message: "not_found: no entry repo:o/r:entry:99 about repo:o/r"}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](fake), Ref: "repo:o/r:entry:99", About: "repo:o/r"})
	})
	if want := (cmdtest.Ran{Code: cmdutil.ExitFailed, Stderr: "axlr-tui: not_found: no entry repo:o/r:entry:99 about repo:o/r\n"}); got != want {
		t.Fatalf("ran %+v, want %+v", got, want)
	}
}
