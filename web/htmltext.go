package web

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped elements hold no readable text.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true,
	atom.Canvas: true, atom.Select: true,
}

// blocks end a line; paragraphs end a paragraph (a blank line).
var (
	paragraphs = map[atom.Atom]bool{
		atom.P: true, atom.Pre: true, atom.Blockquote: true, atom.Table: true,
		atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Hr: true, atom.Figure: true,
		atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	}
	blocks = map[atom.Atom]bool{
		atom.Address: true, atom.Article: true, atom.Aside: true, atom.Caption: true,
		atom.Center: true, atom.Dd: true, atom.Details: true, atom.Dialog: true,
		atom.Div: true, atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true,
		atom.Footer: true, atom.Form: true, atom.Header: true, atom.Hgroup: true,
		atom.Li: true, atom.Main: true, atom.Nav: true, atom.Section: true,
		atom.Summary: true, atom.Tr: true,
	}
	headings = map[atom.Atom]int{atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6}
)

// htmlText reduces an HTML document to readable text: scripts, styles and
// other non-text elements dropped, whitespace collapsed outside <pre>, one
// line per block, a blank line between paragraphs, headings as "# ", list
// items as "- ", table cells separated by " | ", and links to http(s) URLs
// as [text](absolute URL), resolved against base. It also returns the
// document's title. Malformed markup is read as a browser would tokenize it.
func htmlText(doc []byte, base *url.URL) (title, text string) {
	z := html.NewTokenizer(bytes.NewReader(doc))
	var (
		w         textWriter
		skip      atom.Atom // the skipped element being passed over, or 0
		skipDepth int
		inTitle   bool
		titleText strings.Builder
	)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		var tag atom.Atom
		var attrs map[string]string
		if tt == html.StartTagToken || tt == html.EndTagToken || tt == html.SelfClosingTagToken {
			name, hasAttr := z.TagName()
			tag = atom.Lookup(name)
			for hasAttr && tt != html.EndTagToken {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if attrs == nil {
					attrs = map[string]string{}
				}
				attrs[string(k)] = string(v)
			}
		}
		if skip != 0 {
			switch {
			case tt == html.StartTagToken && tag == skip:
				skipDepth++
			case tt == html.EndTagToken && tag == skip:
				if skipDepth--; skipDepth == 0 {
					skip = 0
				}
			}
			continue
		}
		switch tt {
		case html.TextToken:
			if inTitle {
				titleText.Write(z.Text())
				continue
			}
			w.text(string(z.Text()))
		case html.StartTagToken, html.SelfClosingTagToken:
			if tag == atom.Title && tt == html.StartTagToken {
				inTitle = true
				continue
			}
			if skipped[tag] {
				if tt == html.StartTagToken {
					skip, skipDepth = tag, 1
				}
				continue
			}
			w.start(tag, attrs, base)
		case html.EndTagToken:
			if tag == atom.Title {
				inTitle = false
				continue
			}
			w.end(tag)
		}
	}
	return strings.Join(strings.Fields(titleText.String()), " "), strings.TrimSpace(string(w.buf))
}

// textWriter accumulates text, owing newlines and spaces until the next
// visible text so that none trail.
type textWriter struct {
	buf     []byte
	newline int  // newlines owed before the next text, at most 2
	space   bool // a space owed before the next text
	pre     int  // depth of <pre>
	cells   int  // cells written in the current table row
	link    *link
}

type link struct {
	href  string
	start int // offset of the link's text in buf; -1 before its text
}

func (w *textWriter) start(tag atom.Atom, attrs map[string]string, base *url.URL) {
	switch {
	case tag == atom.Br:
		w.newline = min(w.newline+1, 2)
	case paragraphs[tag]:
		w.owe(2)
	case blocks[tag]:
		w.owe(1)
	}
	switch tag {
	case atom.Pre:
		w.pre++
	case atom.Li:
		w.emit("- ")
	case atom.Tr:
		w.cells = 0
	case atom.Td, atom.Th:
		if w.cells > 0 {
			w.emit(" | ")
		}
		w.cells++
	case atom.Img:
		if alt := strings.TrimSpace(attrs["alt"]); alt != "" {
			w.text(alt)
		}
	case atom.A:
		if href, ok := linkTarget(attrs["href"], base); ok && w.link == nil {
			w.link = &link{href: href, start: -1}
		}
	}
	if n := headings[tag]; n > 0 {
		w.emit(strings.Repeat("#", n) + " ")
	}
}

func (w *textWriter) end(tag atom.Atom) {
	switch {
	case paragraphs[tag]:
		w.owe(2)
	case blocks[tag]:
		w.owe(1)
	}
	switch tag {
	case atom.Pre:
		w.pre = max(w.pre-1, 0)
	case atom.A:
		if l := w.link; l != nil && l.start >= 0 {
			w.buf = slices.Insert(w.buf, l.start, '[')
			w.buf = append(w.buf, "]("...)
			w.buf = append(w.buf, l.href...)
			w.buf = append(w.buf, ')')
		}
		w.link = nil
	}
}

// linkTarget returns the absolute http(s) URL of an href, and false for
// another scheme or a link within the same page.
func linkTarget(href string, base *url.URL) (string, bool) {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return "", false
	}
	u, err := url.Parse(href)
	if err != nil {
		return "", false
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return u.String(), true
}

func (w *textWriter) owe(n int) { w.newline = max(w.newline, n) }

// text writes a text node: as it is inside <pre>, else with its whitespace
// collapsed to single spaces.
func (w *textWriter) text(s string) {
	if w.pre > 0 {
		if s != "" {
			w.emit(s)
		}
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		if s != "" {
			w.space = true
		}
		return
	}
	if r, _ := utf8.DecodeRuneInString(s); unicode.IsSpace(r) {
		w.space = true
	}
	for i, word := range words {
		if i > 0 {
			w.space = true
		}
		w.emit(word)
	}
	if r, _ := utf8.DecodeLastRuneInString(s); unicode.IsSpace(r) {
		w.space = true
	}
}

// emit writes visible text after the newlines or the space owed.
func (w *textWriter) emit(s string) {
	switch {
	case len(w.buf) == 0:
	case w.newline > 0:
		w.buf = bytes.TrimRight(w.buf, " \t")
		for range w.newline {
			w.buf = append(w.buf, '\n')
		}
	case w.space:
		if c := w.buf[len(w.buf)-1]; c != ' ' && c != '\n' {
			w.buf = append(w.buf, ' ')
		}
	}
	w.newline, w.space = 0, false
	if w.link != nil && w.link.start < 0 {
		w.link.start = len(w.buf)
	}
	w.buf = append(w.buf, s...)
}

// plainText strips the markup of a snippet that a search service returns
// with HTML (<strong>, entities) and collapses its whitespace.
func plainText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return strings.Join(strings.Fields(s), " ")
	}
	_, text := htmlText([]byte(s), nil)
	return strings.Join(strings.Fields(text), " ")
}
