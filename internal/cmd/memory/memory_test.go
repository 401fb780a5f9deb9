package memory

import (
	"errors"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

// TestNewCmdMemory: memory groups wake, list and show; alone it prints
// its help on stderr and is a usage error.
func TestNewCmdMemory(t *testing.T) {
	cmdtest.Group(t, NewCmdMemory, "list", "show", "wake")
	ios, _, out, errOut := factory.Test()
	err := cmdtest.Execute(NewCmdMemory(&factory.Factory{IOStreams: ios}))
	if !errors.As(err, new(*cmdutil.FlagError)) || err.Error() != "memory needs a verb: wake, list or show" {
		t.Fatalf("memory alone: %v, want a usage error naming the verbs", err)
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), `  axlr-tui memory wake ABOUT "<intent>" [--bytes N] [--json]`) {
		t.Errorf("memory alone printed %q on stdout and %q on stderr, want its help on stderr", out, errOut)
	}
}
