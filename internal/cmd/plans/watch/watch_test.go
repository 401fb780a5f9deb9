package watch

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
)

func TestNewCmdWatch(t *testing.T) {
	cmdtest.Parse(t, NewCmdWatch, func(o WatchOptions) WatchOptions { return WatchOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[WatchOptions]{
		{Name: "id", Args: []string{"card"}, Want: WatchOptions{ID: "card"}},
		{Name: "json", Args: []string{"--json", "card"}, Want: WatchOptions{ID: "card", JSON: true}},
		{Name: "two ids", Args: []string{"a", "b"}, Err: "usage: axlr-tui plans watch ID [--json]"},
	})
}

// TestWatchRun: the plan is followed to where it stands; its card waits
// (exit 3), or it is done (0).
func TestWatchRun(t *testing.T) {
	records := cmdtest.PlanRecords()
	for _, tt := range []struct {
		id  string
		ran cmdtest.Ran
	}{
		{"card", cmdtest.Ran{Code: 3, Stdout: "plan card waits for your approval: 2 tasks in 2 waves (axlr-tui plans show card)\n",
			Stderr: "axlr-tui: plan card: awaiting_approval\n· session s1\naxlr-tui: axlr-tui plans approve|return|decline card\n"}},
		{"done", cmdtest.Ran{Stdout: "plan done done: 1/1 tasks\n", Stderr: "axlr-tui: plan done: done\n· session s1\n"}},
		{"nope", cmdtest.Ran{Code: 1, Stderr: "axlr-tui: no such plan: nope (axlr-tui plans lists the plans)\n"}},
	} {
		rec, _ := domain.Find(records, tt.id)
		fake := &cmdtest.Plans{Records: records, End: client.PlanEnd{Record: rec}}
		got := cmdtest.Run(func(ios *factory.IOStreams) error {
			return watchRun(context.Background(), &WatchOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: tt.id})
		})
		if got != tt.ran {
			t.Errorf("%s: ran\n%+v\nwant\n%+v", tt.id, got, tt.ran)
		}
	}
}
