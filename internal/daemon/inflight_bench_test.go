package daemon

import (
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
)

// BenchmarkInflightJournal is what the in-flight journal adds to each
// attempt of a regular activity: its file written, then removed.
func BenchmarkInflightJournal(b *testing.B) {
	j, err := openInflight(b.TempDir(), "id", zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	info := activity.Info{ActivityID: "7", Attempt: 1}
	info.WorkflowExecution.ID = "axlr-session-x"
	info.WorkflowExecution.RunID = "run"
	for b.Loop() {
		j.begin(info)()
	}
}
