// Package tuitest holds what the TUI components' tests share: golden
// views under testdata/ and key presses built as a terminal sends them.
package tuitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// Golden compares got with testdata/<test name>.golden (a subtest's file is
// testdata/<Test>/<case>.golden). With update it writes got there first,
// for review.
func Golden(t *testing.T, got string, update bool) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden")
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (go test -update writes it): %v", err)
	}
	if got != string(want) {
		t.Errorf("view differs from %s (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// Key is the press of a named key ("enter", "esc", "up", "pgdown", "home", "tab",
// "ctrl+c", "shift+enter") or of a printable one ("a").
func Key(name string) tea.KeyPressMsg {
	special := map[string]tea.Key{
		"enter":       {Code: tea.KeyEnter},
		"shift+enter": {Code: tea.KeyEnter, Mod: tea.ModShift},
		"esc":         {Code: tea.KeyEscape},
		"up":          {Code: tea.KeyUp},
		"down":        {Code: tea.KeyDown},
		"pgup":        {Code: tea.KeyPgUp},
		"pgdown":      {Code: tea.KeyPgDown},
		"home":        {Code: tea.KeyHome},
		"end":         {Code: tea.KeyEnd},
		"tab":         {Code: tea.KeyTab},
		"backspace":   {Code: tea.KeyBackspace},
		"ctrl+c":      {Code: 'c', Mod: tea.ModCtrl},
	}
	if k, ok := special[name]; ok {
		return tea.KeyPressMsg(k)
	}
	r := []rune(name)
	return tea.KeyPressMsg(tea.Key{Code: r[0], Text: name})
}

// Type is the presses of each character of s.
func Type(s string) []tea.Msg {
	var msgs []tea.Msg
	for _, r := range s {
		msgs = append(msgs, Key(string(r)))
	}
	return msgs
}

// Line is a view's n-th line from 0, or from the end when n is negative
// (-1 the last), without its padding.
func Line(view string, n int) string {
	lines := strings.Split(view, "\n")
	if n < 0 {
		n += len(lines)
	}
	return strings.TrimRight(lines[n], " ")
}

// Updater is a component's model: Update returns the model itself.
type Updater[M any] interface {
	Update(tea.Msg) (M, tea.Cmd)
}

// Press hands m the presses of the named keys (as Key names them) in
// order: the model after the last and the command it returned.
func Press[M Updater[M]](m M, keys ...string) (M, tea.Cmd) {
	var cmd tea.Cmd
	for _, k := range keys {
		m, cmd = m.Update(Key(k))
	}
	return m, cmd
}
