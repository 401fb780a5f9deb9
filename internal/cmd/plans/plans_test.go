package plans

import (
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
)

func TestNewCmdPlans(t *testing.T) {
	cmdtest.Group(t, NewCmdPlans, "approve", "decline", "list", "new", "recover", "return", "show", "watch")
}
