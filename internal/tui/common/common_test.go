package common

import (
	"strings"
	"testing"
)

// Under NO_COLOR an input is plain: no escape sequence but the cursor's
// reverse video.
func TestNoColorInput(t *testing.T) {
	in := New(80, 24, false).Input("why")
	in.Focus()
	view := in.View()
	plain := strings.ReplaceAll(strings.ReplaceAll(view, "\x1b[7m", ""), "\x1b[m", "")
	if strings.Contains(plain, "\x1b[") {
		t.Errorf("escape sequences under NO_COLOR: %q", view)
	}
}
