package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
	"github.com/underpass-ai/axlr/workflows"
)

// PublishDefinition validates a person's definition (ceremonies.
// ValidateYAML: errors that name the line), publishes it to MADE and keeps
// axlrd's copy under a.Definitions, which is what ListDefinitions reads.
// The same bytes again are already_published and change nothing; other
// bytes under a published name and version are refused.
func (a *Ceremony) PublishDefinition(ctx context.Context, in workflows.PublishDefinitionInput) (workflows.PublishDefinitionResult, error) {
	refuse := func(msg string) error {
		return temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeBadRequest, nil)
	}
	if len(in.YAML) > workflows.MaxDefinitionBytes {
		return workflows.PublishDefinitionResult{}, refuse(fmt.Sprintf("the definition is %d bytes: at most %d", len(in.YAML), workflows.MaxDefinitionBytes))
	}
	def, warnings, err := ValidateYAML([]byte(in.YAML))
	if err != nil {
		return workflows.PublishDefinitionResult{}, refuse(err.Error())
	}
	pub, err := a.Made.Publish(ctx, []byte(in.YAML))
	var conflict *made.ConflictError
	switch {
	case errors.As(err, &conflict):
		return workflows.PublishDefinitionResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s %s is published already with other bytes (digest %s; these are %s): publish them as a new version",
			def.Name, def.Version, conflict.PublishedDigest, conflict.OfferedDigest), workflows.ErrTypeMadeRefused, err)
	case err != nil:
		return workflows.PublishDefinitionResult{}, madeError("publish "+def.Name+" "+def.Version, err)
	}
	if err := a.keepDefinition(def, in.YAML); err != nil {
		return workflows.PublishDefinitionResult{}, err
	}
	return workflows.PublishDefinitionResult{Outcome: pub.Outcome, Name: def.Name, Version: def.Version, Digest: pub.Digest, Warnings: warnings}, nil
}

// keepDefinition writes axlrd's copy of a published definition whole
// (writeWhole); a copy already there is the same bytes, since MADE
// refuses others.
func (a *Ceremony) keepDefinition(def *definition.Definition, yaml string) error {
	if a.Definitions == "" {
		return errors.New("keep the definition: axlrd has no definitions directory")
	}
	path := filepath.Join(a.Definitions, def.Name+"@"+def.Version+".yaml")
	if b, err := os.ReadFile(path); err == nil && string(b) == yaml {
		return nil
	}
	if err := writeWhole(path, []byte(yaml)); err != nil {
		return fmt.Errorf("keep the definition: %w", err)
	}
	return nil
}

// ListDefinitions lists axlrd's own definitions, then the person's
// published ones (axlrd's copies), each by name with its versions, the
// newest one's description and what starts it.
func (a *Ceremony) ListDefinitions(_ context.Context, _ workflows.ListDefinitionsInput) ([]workflows.DefinitionSummary, error) {
	var out []workflows.DefinitionSummary
	add := func(def *definition.Definition, starts string, builtIn bool) {
		i := slices.IndexFunc(out, func(s workflows.DefinitionSummary) bool { return s.Name == def.Name })
		if i < 0 {
			out = append(out, workflows.DefinitionSummary{Name: def.Name, Starts: starts, BuiltIn: builtIn})
			i = len(out) - 1
		}
		s := &out[i]
		s.Versions = append(s.Versions, def.Version)
		slices.SortFunc(s.Versions, compareVersions)
		if s.Versions[len(s.Versions)-1] == def.Version {
			s.Description = def.Description
		}
	}
	for _, d := range ceremonies.All() {
		y, err := d.YAML()
		if err != nil {
			return nil, err
		}
		def, err := definition.Parse(y)
		if err != nil {
			return nil, fmt.Errorf("pinned definition %s %s: %w", d.Name, d.Version, err)
		}
		add(def, startsBuiltIn(d), true)
	}
	if a.Definitions == "" {
		return out, nil
	}
	for _, f := range a.keptFiles() {
		y, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read the published definition %s: %w", f, err)
		}
		def, err := definition.Parse(y)
		if err != nil {
			a.Log.Warn().Err(err).Str("file", f).Msg("a kept definition does not parse: not listed")
			continue
		}
		add(def, "/ceremony "+def.Name, false)
	}
	return out, nil
}

// startsBuiltIn says what runs one of axlrd's own definitions.
func startsBuiltIn(d ceremonies.Definition) string {
	switch {
	case d.Record:
		return "every session (its record)"
	case d.Job:
		return "/" + d.Mode + " jobs"
	case d.Plan:
		return "/plan (" + d.Mode + ")"
	}
	return "/" + d.Mode + " mode"
}

// compareVersions orders versions by their dot-separated parts, numbers as
// numbers: 1.2 before 1.10.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(pa), len(pb)) {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}
