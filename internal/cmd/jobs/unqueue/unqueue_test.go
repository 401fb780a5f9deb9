package unqueue

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

func TestNewCmdUnqueue(t *testing.T) {
	cmdtest.Parse(t, NewCmdUnqueue, func(o UnqueueOptions) UnqueueOptions { return UnqueueOptions{ID: o.ID, Reason: o.Reason, JSON: o.JSON} }, []cmdtest.ParseCase[UnqueueOptions]{
		{Name: "id", Args: []string{"j"}, Want: UnqueueOptions{ID: "j"}},
		{Name: "reason", Args: []string{"j", "--reason", "not yet", "--json"}, Want: UnqueueOptions{ID: "j", Reason: "not yet", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui jobs unqueue ID [--reason TEXT] [--json]"},
	})
}

// TestUnqueueRun: the job is taken off with the reason, and said to wait
// for its merge decision.
func TestUnqueueRun(t *testing.T) {
	fake := &cmdtest.Jobs{}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return unqueueRun(context.Background(), &UnqueueOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: "j", Reason: "not yet"})
	})
	want := cmdtest.Ran{Stdout: "took job j off the merge queue of underpass-ai/axlr (main); it waits for your merge decision\n"}
	if got != want || len(fake.Unqueued) != 1 || fake.Unqueued[0] != "j: not yet" {
		t.Fatalf("ran %+v; unqueued %v", got, fake.Unqueued)
	}
}
