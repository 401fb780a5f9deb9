package session

import (
	"strings"

	"charm.land/glamour/v2"
	"charm.land/glamour/v2/styles"
	"github.com/charmbracelet/x/ansi"
)

// renderer draws answers as Markdown, in colour or plain; it keeps
// glamour's renderer for the last width it drew at.
type renderer struct {
	color bool
	width int
	tr    *glamour.TermRenderer
}

// rendered is an answer as last drawn, with the text and width it was
// drawn from.
type rendered struct {
	text  string
	width int
	out   string
}

// answer returns e's text drawn as Markdown at width, reusing what was
// drawn last while neither the text nor the width changed. Text glamour
// fails on is drawn wrapped, as it is.
func (r *renderer) answer(e *entry, width int) string {
	if e.md.width == width && e.md.text == e.text {
		return e.md.out
	}
	out, err := r.render(e.text, width)
	if err != nil {
		out = ansi.Wrap(e.text, width, "")
	}
	e.md = rendered{text: e.text, width: width, out: out}
	return out
}

// render draws text as Markdown at width, without the blank lines glamour
// puts around it. Plain, it has no escape sequence at all.
func (r *renderer) render(text string, width int) (string, error) {
	if r.tr == nil || r.width != width {
		style := styles.DarkStyleConfig
		if !r.color {
			// Emphasis as plain text, not between the asterisks the
			// ASCII style keeps: with no escape sequence there is no
			// bold to show.
			style = styles.ASCIIStyleConfig
			style.Emph, style.Strong = style.Text, style.Text
		}
		tr, err := glamour.NewTermRenderer(glamour.WithStyles(style), glamour.WithWordWrap(width))
		if err != nil {
			return "", err
		}
		r.tr, r.width = tr, width
	}
	out, err := r.tr.Render(text)
	if err != nil {
		return "", err
	}
	if !r.color {
		// The ASCII style still links URLs with OSC 8.
		out = ansi.Strip(out)
	}
	// Narrower than its margins, glamour does not wrap at all.
	return trimBlank(ansi.Wrap(out, width, "")), nil
}

// trimBlank drops the blank lines before and after s's first and last
// lines with something on them.
func trimBlank(s string) string {
	lines := strings.Split(s, "\n")
	blank := func(l string) bool { return strings.TrimSpace(ansi.Strip(l)) == "" }
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}
