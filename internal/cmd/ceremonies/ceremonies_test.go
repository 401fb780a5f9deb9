package ceremonies

import (
	"context"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

type fakeClient struct{ defs []workflows.DefinitionSummary }

func (c *fakeClient) Close()                            {}
func (c *fakeClient) CheckWorker(context.Context) error { return nil }
func (c *fakeClient) Definitions(context.Context) ([]workflows.DefinitionSummary, error) {
	return c.defs, nil
}

// TestList: one definition a line, with its versions, what starts it and
// its description; --json the array.
func TestList(t *testing.T) {
	c := &fakeClient{defs: []workflows.DefinitionSummary{
		{Name: "axlr_debug", Versions: []string{"2.0", "2.1"}, Description: "Reproduce a failure.", Starts: "/debug mode", BuiltIn: true},
		{Name: "team_note", Versions: []string{"1.0"}, Description: "Draft a note.", Starts: "/ceremony team_note"},
	}}
	ios, _, out, _ := factory.Test()
	opts := &ListOptions{IO: ios, Client: func(context.Context) (Client, error) { return c, nil }}
	if err := listRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	want := "NAME        VERSIONS  STARTS               DESCRIPTION\n" +
		"axlr_debug  2.0, 2.1  /debug mode          Reproduce a failure.\n" +
		"team_note   1.0       /ceremony team_note  Draft a note.\n"
	if out.String() != want {
		t.Errorf("listed\n%s\nwant\n%s", out, want)
	}
	out.Reset()
	opts.JSON = true
	if err := listRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), `[{"name":"axlr_debug","versions":["2.0","2.1"],"description":"Reproduce a failure.","starts":"/debug mode","built_in":true}`) {
		t.Errorf("--json printed %s", out)
	}
}
