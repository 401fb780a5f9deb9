package launch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

func TestNewCmdNew(t *testing.T) {
	flags := func(o NewOptions) NewOptions {
		return NewOptions{Brief: o.Brief, Model: o.Model, Root: o.Root, JSON: o.JSON, Detach: o.Detach}
	}
	cmdtest.Parse(t, NewCmdNew, flags, []cmdtest.ParseCase[NewOptions]{
		{Name: "brief", Args: []string{"add a flag"}, Want: NewOptions{Brief: "add a flag"}},
		{Name: "every flag", Args: []string{"--model", "m", "add a flag", "--root", "/w", "--json", "--detach"},
			Want: NewOptions{Brief: "add a flag", Model: "m", Root: "/w", JSON: true, Detach: true}},
		{Name: "no brief", Args: []string{" "}, Err: "plans new needs a brief: the change to plan"},
		{Name: "brief too long", Args: []string{strings.Repeat("x", MaxBrief+1)}, Err: "plans new: the brief is 8193 bytes, over the limit of 8192"},
		{Name: "stray argument", Args: []string{"a", "b"}, Err: `unexpected argument "b"`},
	})
}

// TestNewRun: the plan starts in the current directory and is followed to
// its card (exit 3), with --json the plan line, the events and the result
// with the plan; --detach returns its id; a root that is no directory is
// a usage error.
func TestNewRun(t *testing.T) {
	dir := t.TempDir()
	run := func(fake *cmdtest.Plans, opts NewOptions) cmdtest.Ran {
		return cmdtest.Run(func(ios *factory.IOStreams) error {
			opts.IO, opts.Client, opts.Getwd = ios, cmdtest.Dial[Client](fake), func() (string, error) { return dir, nil }
			return newRun(context.Background(), &opts)
		})
	}
	fake := &cmdtest.Plans{End: client.PlanEnd{Record: cmdtest.PlanRecords()[0]}}
	got := run(fake, NewOptions{Brief: "add a flag", Model: "m", JSON: true})
	lines := strings.Split(strings.TrimSpace(got.Stdout), "\n")
	if got.Code != 3 || len(lines) != 3 || len(fake.Launched) != 1 || fake.Launched[0] != (client.PlanLaunch{Brief: "add a flag", Root: dir, Model: "m"}) {
		t.Fatalf("ran %+v, launched %+v", got, fake.Launched)
	}
	var last struct {
		Type   string         `json:"type"`
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil || last.Result["status"] != "needs_decision" || last.Result["plan"] == nil {
		t.Fatalf("result line %s: %v", lines[2], err)
	}
	if got := run(&cmdtest.Plans{}, NewOptions{Brief: "tidy up", Detach: true}); got != (cmdtest.Ran{Stdout: "add-a-flag-0a1b2c\n",
		Stderr: "axlr-tui: plan add-a-flag-0a1b2c started; axlr-tui plans watch add-a-flag-0a1b2c follows it\n"}) {
		t.Fatalf("detached: %+v", got)
	}
	if got := run(&cmdtest.Plans{}, NewOptions{Brief: "x", Root: "absent"}); got.Code != 2 || got.Stderr != "axlr-tui: root "+dir+"/absent is not a directory\n" {
		t.Fatalf("bad root: %+v", got)
	}
}
