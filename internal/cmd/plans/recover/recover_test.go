package recover

import (
	"context"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
)

func TestNewCmdRecover(t *testing.T) {
	cmdtest.Parse(t, NewCmdRecover, func(o RecoverOptions) RecoverOptions { return RecoverOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[RecoverOptions]{
		{Name: "id", Args: []string{"p", "--json"}, Want: RecoverOptions{ID: "p", JSON: true}},
		{Name: "a model", Args: []string{"p", "--model", "m"}, Err: "flag provided but not defined: -model"},
	})
}

// TestRecoverRun: an interrupted plan runs again; a done one is refused.
func TestRecoverRun(t *testing.T) {
	records := append(cmdtest.PlanRecords(), domain.Record{ID: "p", Status: domain.Interrupted})
	for _, tt := range []struct {
		id  string
		ran cmdtest.Ran
	}{
		{"p", cmdtest.Ran{Stdout: "recovered plan p: it runs again from where it stood (axlr-tui plans watch p follows it)\n"}},
		{"done", cmdtest.Ran{Code: 1, Stderr: "axlr-tui: plan done is done: only an interrupted plan is recovered\n"}},
	} {
		got := cmdtest.Run(func(ios *factory.IOStreams) error {
			return recoverRun(context.Background(), &RecoverOptions{IO: ios, Client: cmdtest.Dial[Client](&cmdtest.Plans{Records: records}), ID: tt.id})
		})
		if got != tt.ran {
			t.Errorf("%s: ran %+v, want %+v", tt.id, got, tt.ran)
		}
	}
}
