package policy

import (
	"path"
	"slices"
	"strings"
)

// Mode is a work mode: a policy over the tools the model is offered and
// what its calls may do, enforced here like the execution's policy. It is
// not a ceremony: the ceremony modes (debug, delivery) work as normal.
type Mode string

// The work modes.
const (
	Normal Mode = "normal"
	// Review reads and reports: it never changes a file (the write tools
	// are not offered) and asks before every command.
	Review Mode = "review"
	// Writer writes documents only, and asks before every command.
	Writer Mode = "writer"
	// Research writes documents only, asks before every command, and is
	// where the web tools matter.
	Research Mode = "research"
)

// Modes lists the work modes.
var Modes = []Mode{Normal, Review, Writer, Research}

// WorkMode is the work mode of a session mode: a ceremony's mode, or an
// empty one, works as normal.
func WorkMode(mode string) Mode {
	if m := Mode(mode); slices.Contains(Modes, m) {
		return m
	}
	return Normal
}

// OfferedInMode reports whether a mode offers a tool: review leaves the
// write tools out of the tool list.
func OfferedInMode(m Mode, tool string) bool {
	return !(m == Review && ClassOf(tool) == ClassWrite)
}

// ModeForbidden reports whether a mode refuses a call, with the reason the
// model reads: review changes no file; writer and research write only
// documents.
func ModeForbidden(m Mode, c Call) (bool, string) {
	if ClassOf(c.Tool) != ClassWrite {
		return false, ""
	}
	switch m {
	case Review:
		return true, "review mode does not change files"
	case Writer, Research:
		if v, ok := c.Args["path"]; !ok || v.Truncated || !ModeDocument(v.Text) {
			return true, string(m) + " mode writes only documents (.md, .mdx, .txt, .rst, or a file under docs/)"
		}
	}
	return false, ""
}

// modeAsks reports whether a mode asks before a call under any approval:
// every command in review, writer and research.
func modeAsks(m Mode, c Call) bool {
	return m != Normal && ClassOf(c.Tool) == ClassExec
}

// ModeDocument reports whether a workspace path is a document the writer
// and research modes may write. The path is cleaned first: docs/../main.go
// is main.go, not a document.
func ModeDocument(p string) bool {
	p = path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return false
	}
	if strings.HasPrefix(p, "docs/") {
		return true
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".mdx", ".txt", ".rst":
		return true
	}
	return false
}
