package jobs

import (
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
)

func TestNewCmdJobs(t *testing.T) {
	cmdtest.Group(t, NewCmdJobs, "approve", "decline", "deny", "improve", "install", "list", "queue", "recover", "repair", "show", "unqueue", "watch")
}
