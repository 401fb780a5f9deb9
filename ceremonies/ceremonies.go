// Package ceremonies holds the AXLR definitions axlr drives in MADE — the
// YAML, embedded, with each definition's semantic digest pinned in code —
// and what the driver needs to know of each step: the fields the model hands
// back, how they are checked, and what AXLR runs and records itself.
//
// A definition whose published digest differs from its pin must not be
// started: the driver stops that ceremony's start with both digests, and the
// others still work. TestPins checks every pin against its YAML.
package ceremonies

import (
	"embed"
	"fmt"
	"slices"
	"sort"
)

//go:embed *.yaml
var files embed.FS

// Definition is a pinned AXLR definition.
type Definition struct {
	// Name and Version as published in MADE.
	Name    string
	Version string
	// Mode is the work mode that runs it (debug, delivery).
	Mode string
	// Digest is the pinned semantic digest.
	Digest string
	// BriefInput is the input the person's prompt fills.
	BriefInput string
	// File is the embedded YAML's name.
	File string
}

// definitions are the pinned definitions, by mode.
var definitions = []Definition{
	{Name: "axlr_debug", Version: "2.0", Mode: "debug", BriefInput: "failure_brief", File: "axlr_debug-2.0.yaml",
		Digest: "dd10c78c432d8c3bfcc8ed0f7af93a3aeebc2be0dadb0c708ad8dc76ca14873c"},
	{Name: "axlr_delivery", Version: "2.0", Mode: "delivery", BriefInput: "task_brief", File: "axlr_delivery-2.0.yaml",
		Digest: "c1ba37bc3ed4af191456695b0cbaaff5f5745e495e0bcfdc594e8c7f9bbac8c1"},
}

// All returns the pinned definitions.
func All() []Definition { return slices.Clone(definitions) }

// ForMode returns the definition a work mode runs.
func ForMode(mode string) (Definition, bool) {
	for _, d := range definitions {
		if d.Mode == mode {
			return d, true
		}
	}
	return Definition{}, false
}

// Modes lists the work modes that run a ceremony, sorted.
func Modes() []string {
	var out []string
	for _, d := range definitions {
		out = append(out, d.Mode)
	}
	sort.Strings(out)
	return out
}

// YAML returns a definition's embedded YAML.
func (d Definition) YAML() ([]byte, error) {
	b, err := files.ReadFile(d.File)
	if err != nil {
		return nil, fmt.Errorf("ceremony %s %s: %w", d.Name, d.Version, err)
	}
	return b, nil
}
