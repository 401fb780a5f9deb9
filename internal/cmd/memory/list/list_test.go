package list

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

// fakeClient is axlrd as list sees it: it answers every read with res,
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

func TestNewCmdList(t *testing.T) {
	flags := func(o ListOptions) ListOptions {
		return ListOptions{About: o.About, Kind: o.Kind, Limit: o.Limit, JSON: o.JSON}
	}
	cmdtest.Parse(t, NewCmdList, flags, []cmdtest.ParseCase[ListOptions]{
		{Name: "about", Args: []string{"repo:o/r"}, Want: ListOptions{About: "repo:o/r", Limit: 50}},
		{Name: "kind, limit and json", Args: []string{"repo:o/r", "--kind", "error_path", "--limit", "500", "--json"},
			Want: ListOptions{About: "repo:o/r", Kind: kmp.KindErrorPath, Limit: 500, JSON: true}},
		{Name: "the least limit", Args: []string{"ws:s1", "--limit", "1"}, Want: ListOptions{About: "ws:s1", Limit: 1}},
		{Name: "an unknown kind", Args: []string{"repo:o/r", "--kind", "cause"},
			Err: `--kind "cause": one of turn, observation, decision, feedback, semantic_delta, constraint, preference, derived_value, error_path, success_path`},
		{Name: "limit above the most", Args: []string{"repo:o/r", "--limit", "501"}, Err: "--limit is 501: between 1 and 500"},
		{Name: "limit zero", Args: []string{"repo:o/r", "--limit", "0"}, Err: "--limit is 0: between 1 and 500"},
		{Name: "no about", Args: []string{}, Err: "usage: axlr-tui memory list ABOUT [--kind KIND] [--limit N] [--json]"},
		{Name: "two abouts", Args: []string{"repo:o/r", "ws:s1"}, Err: "usage: axlr-tui memory list ABOUT [--kind KIND] [--limit N] [--json]"},
		{Name: "empty about", Args: []string{""}, Err: "memory list: ABOUT is empty"},
	})
}

// listing is a listing as it reaches the command: decoded from JSON, the
// metadata as encoding/json reads it.
func listing(t *testing.T) *kmp.ListResult {
	t.Helper()
	var l kmp.ListResult
	err := json.Unmarshal([]byte(`{"entries": [
		{"ref": "repo:o/r:entry:12", "kind": "error_path", "text": "the parser drops the version field\nbecause the schema renamed it to schema_version in the last release of the spec",
		 "metadata": {"about": "repo:o/r", "actor": "axlr", "observed_at": "2026-12-01T12:30:05.123456789Z", "sequence": 12}},
		{"ref": "repo:o/r:entry:11", "kind": "decision", "text": "Improve: add a changelog entry — done when: CHANGELOG.md names the flag",
		 "metadata": {"about": "repo:o/r", "observed_at": "2026-12-01T13:30:00+01:00", "sequence": 11}},
		{"ref": "repo:o/r:entry:10", "kind": "observation", "text": "ça dépend: l’entrée «héritée» reste là où elle était, même après la migration—élevée",
		 "metadata": {"observed_at": "yesterday"}},
		{"ref": "repo:o/r:entry:9", "kind": "turn", "text": "hello", "metadata": {}}
	], "page": {"offset": 0, "returned": 4, "total": 12, "has_more": true}}`), &l)
	if err != nil {
		t.Fatal(err)
	}
	return &l
}

// TestListRun: a table of the entries as the memory lists them, newest
// first: ref, kind, when observed (RFC 3339 in UTC; as it is when it is
// none), the text on one line cut to 80 characters on a rune boundary,
// then how many of the about's it lists. It asks for the about, the kind
// and the limit. An empty listing says so on stderr.
func TestListRun(t *testing.T) {
	tests := []struct {
		name string
		kind string
		res  *kmp.ListResult
		ran  cmdtest.Ran
	}{
		{name: "entries", res: listing(t), ran: cmdtest.Ran{Stdout: "" +
			"REF                KIND         OBSERVED              SUMMARY\n" +
			"repo:o/r:entry:12  error_path   2026-12-01T12:30:05Z  the parser drops the version field because the schema renamed it to schema_vers…\n" +
			"repo:o/r:entry:11  decision     2026-12-01T12:30:00Z  Improve: add a changelog entry — done when: CHANGELOG.md names the flag\n" +
			"repo:o/r:entry:10  observation  yesterday             ça dépend: l’entrée «héritée» reste là où elle était, même après la migration—é…\n" +
			"repo:o/r:entry:9   turn         -                     hello\n" +
			"4 of 12 memories\n"}},
		{name: "none of a kind", kind: kmp.KindConstraint, res: &kmp.ListResult{Entries: []kmp.Object{}},
			ran: cmdtest.Ran{Stderr: "axlr-tui: no constraint memories about repo:o/r\n"}},
		{name: "none", res: &kmp.ListResult{Entries: []kmp.Object{}}, ran: cmdtest.Ran{Stderr: "axlr-tui: no memories about repo:o/r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{res: workflows.MemoryReadResult{List: tt.res}}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](fake), About: "repo:o/r", Kind: tt.kind, Limit: 4})
			})
			if got != tt.ran || !fake.closed {
				t.Fatalf("ran %+v, want %+v (closed %v)", got, tt.ran, fake.closed)
			}
			want := []workflows.MemoryReadInput{{Op: workflows.MemoryList, About: "repo:o/r", Kind: tt.kind, Limit: 4}}
			if !reflect.DeepEqual(fake.asked, want) {
				t.Errorf("asked %+v, want %+v", fake.asked, want)
			}
		})
	}
}

// TestCut: a text of 80 characters is kept; one longer ends in "…" at
// the 80th, never inside a rune.
func TestCut(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{strings.Repeat("é", 80), strings.Repeat("é", 80)},
		{strings.Repeat("é", 81), strings.Repeat("é", 79) + "…"},
		{"  two\tlines\n here ", "two lines here"},
	} {
		if got := cut(tt.in, 80); got != tt.want {
			t.Errorf("cut(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestListRunJSON: --json prints the listing itself, indented: it
// decodes to the listing axlrd returned.
func TestListRunJSON(t *testing.T) {
	fake := &fakeClient{res: workflows.MemoryReadResult{List: listing(t)}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](fake), About: "repo:o/r", Limit: 50, JSON: true})
	})
	var l kmp.ListResult
	if err := json.Unmarshal([]byte(got.Stdout), &l); err != nil || got.Code != 0 || got.Stderr != "" {
		t.Fatalf("ran %+v: %v", got, err)
	}
	if !reflect.DeepEqual(&l, listing(t)) {
		t.Errorf("--json decodes to\n%+v\nwant\n%+v", l, listing(t))
	}
	if !strings.HasPrefix(got.Stdout, "{\n  \"entries\": [\n    {\n      \"ref\": \"repo:o/r:entry:12\"") {
		t.Errorf("--json is not the indented listing:\n%s", got.Stdout)
	}
}

// TestListRunRefused: the memory's refusal is printed in its words and
// exits 1.
func TestListRunRefused(t *testing.T) {
	fake := &fakeClient{err: &client.RefusedError{Message: "not_found: no memory about repo:x"}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return listRun(context.Background(), &ListOptions{IO: ios, Client: cmdtest.Dial[Client](fake), About: "repo:x", Limit: 50})
	})
	if want := (cmdtest.Ran{Code: cmdutil.ExitFailed, Stderr: "axlr-tui: not_found: no memory about repo:x\n"}); got != want {
		t.Fatalf("ran %+v, want %+v", got, want)
	}
}
