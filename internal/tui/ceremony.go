package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/workflows"
)

// /ceremony lists the definitions axlrd runs; /ceremony NAME [VERSION]
// [brief] chooses a published one for the next prompt (the brief, when
// given, is that prompt); /ceremony publish FILE publishes one.

// definitionsMsg carries the listing, or what a publication did.
type definitionsMsg struct {
	text string
	err  error
}

// versionArg is a version as a person types it after the name.
var versionArg = regexp.MustCompile(`^[0-9][A-Za-z0-9._-]*$`)

func (m Model) ceremony(args string) (tea.Model, tea.Cmd) {
	fields := strings.Fields(args)
	switch {
	case len(fields) == 0:
		return m, func() tea.Msg {
			defs, err := m.client.Definitions(m.ctx)
			return definitionsMsg{text: definitionList(defs), err: err}
		}
	case fields[0] == "publish":
		if len(fields) != 2 {
			return m.note("/ceremony publish FILE.yaml: name one file")
		}
		return m, m.publish(fields[1])
	}
	ref := fields[0]
	rest := strings.TrimSpace(strings.TrimPrefix(args, fields[0]))
	if len(fields) > 1 && versionArg.MatchString(fields[1]) && !strings.Contains(ref, "@") {
		ref += "@" + fields[1]
		rest = strings.TrimSpace(strings.TrimPrefix(rest, fields[1]))
	}
	if _, _, err := ceremonies.ParseRef(ref); err != nil {
		return m.note("/ceremony: " + err.Error())
	}
	m.mode, m.chosen = ceremonies.ModeCeremony, ref
	m.showMode()
	if rest != "" {
		return m.start(rest)
	}
	return m.note(fmt.Sprintf("the next prompt runs %s in ceremony mode, as its brief", ref))
}

// publish reads a definition file (relative to the workspace) and has
// axlrd publish it.
func (m Model) publish(file string) tea.Cmd {
	if !filepath.IsAbs(file) {
		file = filepath.Join(m.opts.Root, file)
	}
	return func() tea.Msg {
		b, err := os.ReadFile(file)
		if err != nil {
			return definitionsMsg{err: fmt.Errorf("/ceremony publish: %w", err)}
		}
		if len(b) > workflows.MaxDefinitionBytes {
			return definitionsMsg{err: fmt.Errorf("/ceremony publish: %s is %d bytes: at most %d", file, len(b), workflows.MaxDefinitionBytes)}
		}
		res, err := m.client.PublishDefinition(m.ctx, b)
		if err != nil {
			return definitionsMsg{err: fmt.Errorf("/ceremony publish %s: %w", file, err)}
		}
		text := fmt.Sprintf("%s %s published; digest %s. /ceremony %s runs it.", res.Name, res.Version, res.Digest, res.Name)
		if res.Outcome != "published" {
			text = fmt.Sprintf("%s %s was published already with these bytes: nothing changed; digest %s", res.Name, res.Version, res.Digest)
		}
		for _, w := range res.Warnings {
			text += "\nwarning: " + w
		}
		return definitionsMsg{text: text}
	}
}

// definitionList is what /ceremony shows: each definition, its versions,
// what starts it and the newest version's description.
func definitionList(defs []workflows.DefinitionSummary) string {
	var b strings.Builder
	b.WriteString("the definitions axlrd runs:\n")
	for _, d := range defs {
		fmt.Fprintf(&b, "  %s %s · %s", d.Name, strings.Join(d.Versions, ", "), d.Starts)
		if d.Description != "" {
			b.WriteString(" · " + d.Description)
		}
		b.WriteString("\n")
	}
	b.WriteString("/ceremony NAME [VERSION] [brief] runs one you published; /ceremony publish FILE publishes one.")
	return b.String()
}
