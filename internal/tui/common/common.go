// Package common holds what the TUI's components share: their size, their
// styles (plain when colour is off, as NO_COLOR asks) and the text helpers
// that fit a line to a width. It does no I/O.
package common

import (
	"strings"

	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Styles are the few looks the components use.
type Styles struct {
	Title    lipgloss.Style
	Selected lipgloss.Style
	Dim      lipgloss.Style
	Error    lipgloss.Style
	Key      lipgloss.Style
	Border   lipgloss.Style
}

// NewStyles returns the styles, coloured when color is true and plain
// (no escape sequences at all) otherwise.
func NewStyles(color bool) Styles {
	plain := lipgloss.NewStyle()
	if !color {
		return Styles{Title: plain, Selected: plain, Dim: plain, Error: plain, Key: plain, Border: plain}
	}
	return Styles{
		Title:    plain.Bold(true).Foreground(lipgloss.Color("12")),
		Selected: plain.Reverse(true),
		Dim:      plain.Foreground(lipgloss.Color("8")),
		Error:    plain.Foreground(lipgloss.Color("9")),
		Key:      plain.Bold(true),
		Border:   plain.Foreground(lipgloss.Color("12")),
	}
}

// Common is embedded by every component: the size it draws in and its
// styles.
type Common struct {
	Width, Height int
	// Color is false under NO_COLOR: Styles are plain.
	Color  bool
	Styles Styles
}

// New returns a Common of the size, coloured or not.
func New(width, height int, color bool) Common {
	return Common{Width: width, Height: height, Color: color, Styles: NewStyles(color)}
}

// Input returns a one-line text input without a prompt, plain when colour
// is off (the virtual cursor in reverse video, uncoloured).
func (c Common) Input(placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = placeholder
	if !c.Color {
		st := in.Styles()
		st.Focused, st.Blurred = textinput.StyleState{}, textinput.StyleState{}
		st.Cursor.Color = nil
		in.SetStyles(st)
	}
	return in
}

// SetSize sets the size the component draws in.
func (c *Common) SetSize(width, height int) { c.Width, c.Height = width, height }

// Fit cuts s to width cells (with "…" when cut) and pads it with spaces to
// exactly width.
func Fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	s = ansi.Truncate(s, width, "…")
	if w := ansi.StringWidth(s); w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}

// Cut cuts s to width cells, with "…" when cut, without padding.
func Cut(s string, width int) string {
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}

// OneLine joins s's lines with spaces, for a cell of a table.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Or returns s, or dash when s is empty.
func Or(s, dash string) string {
	if s == "" {
		return dash
	}
	return s
}
