package recover

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
)

func TestNewCmdRecover(t *testing.T) {
	cmdtest.Parse(t, NewCmdRecover, func(o RecoverOptions) RecoverOptions { return RecoverOptions{ID: o.ID, Model: o.Model, JSON: o.JSON} }, []cmdtest.ParseCase[RecoverOptions]{
		{Name: "id", Args: []string{"i"}, Want: RecoverOptions{ID: "i"}},
		{Name: "model", Args: []string{"i", "--model", "m2", "--json"}, Want: RecoverOptions{ID: "i", Model: "m2", JSON: true}},
		{Name: "no id", Args: []string{"--model", "m2"}, Err: "usage: axlr-tui jobs recover ID [--model NAME] [--json]"},
	})
}

// TestRecoverRun: an interrupted job runs again with the model asked
// for; a running one is refused in the registry's words.
func TestRecoverRun(t *testing.T) {
	records := append(cmdtest.JobRecords(), domain.Record{ID: "i", Status: domain.Interrupted, Session: "s1", Clone: "/c/i"})
	tests := []struct {
		name string
		id   string
		ran  cmdtest.Ran
	}{
		{name: "interrupted", id: "i", ran: cmdtest.Ran{Stdout: "recovered job i: it goes on in session s1 and clone /c/i from what MADE and the forge recorded (axlr-tui jobs watch i follows it)\n"}},
		{name: "running", id: records[0].ID, ran: cmdtest.Ran{Code: 1,
			Stderr: "axlr-tui: repair 20261201-1200-the-watch-never-settles is awaiting_merge; only an interrupted job is recovered\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &cmdtest.Jobs{Records: records}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return recoverRun(context.Background(), &RecoverOptions{IO: ios, Client: cmdtest.Dial[Client](fake), ID: tt.id, Model: "m2"})
			})
			if got != tt.ran || len(fake.Recovered) != 1 || fake.Recovered[0] != tt.id+" m2" {
				t.Fatalf("ran %+v, want %+v; recovered %v", got, tt.ran, fake.Recovered)
			}
		})
	}
}
