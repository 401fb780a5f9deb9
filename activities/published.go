package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
	"github.com/underpass-ai/axlr/workflows"
)

// A person's definition runs from axlrd's kept copy of it, the bytes
// PublishDefinition published: the copy is published again (the same
// bytes are a no-op for MADE, and a MADE that lost them gets them back),
// and its steps' prompts are what the model is given.

// startPublished opens an instance of a person's definition: the newest
// kept version when none is named, the brief as every required input the
// context does not fill.
func (a *Ceremony) startPublished(ctx context.Context, in workflows.CeremonyStartInput) (workflows.CeremonyStartResult, error) {
	def, yaml, err := a.keptDefinition(in.Definition, in.Version)
	if err != nil {
		return workflows.CeremonyStartResult{}, err
	}
	if _, err := a.Made.Publish(ctx, yaml); err != nil {
		var conflict *made.ConflictError
		if errors.As(err, &conflict) {
			return workflows.CeremonyStartResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"%s %s is published in MADE with digest %s, not the %s axlrd kept: publish yours as a new version", def.Name, def.Version, conflict.PublishedDigest, conflict.OfferedDigest),
				workflows.ErrTypeMadeRefused, err)
		}
		return workflows.CeremonyStartResult{}, madeError("publish "+def.Name+" "+def.Version, err)
	}
	ctxIn := map[string]any{}
	for k, v := range in.Context {
		ctxIn[k] = v
	}
	for _, input := range def.Inputs {
		if input.Name == "memory_about" && in.MemoryAbout != "" {
			ctxIn[input.Name] = in.MemoryAbout
		}
	}
	for _, input := range def.Inputs {
		if _, ok := ctxIn[input.Name]; input.Required && !ok {
			ctxIn[input.Name] = in.Brief
		}
	}
	return a.open(ctx, publishedResult(def), in.InstanceID, ctxIn)
}

// publishedResult is what the driver keeps of a person's definition: each
// step's config.prompt with how to hand it back, its iterations at most,
// the step timeout, the role that grants each human guard, and whether
// it has the cancel trigger.
func publishedResult(def *definition.Definition) workflows.CeremonyStartResult {
	res := workflows.CeremonyStartResult{
		Definition: def.Name, Version: def.Version, Instructions: map[string]string{},
		StepTimeout: def.StepTimeout, Limits: map[string]int{}, Approvers: map[string]string{},
	}
	if res.StepTimeout <= 0 {
		res.StepTimeout = workflows.DefaultStepTimeout
	}
	for _, st := range def.Steps {
		prompt, _ := st.Config["prompt"].(string)
		if strings.TrimSpace(prompt) == "" {
			prompt = fmt.Sprintf("Do step %s of %s (its definition gives no prompt).", st.ID, def.Name)
		}
		res.Instructions[st.ID] = strings.TrimSpace(prompt) + "\n\n" + ceremonies.HandBackPrompt
		res.Limits[st.ID] = 1
		if st.Repeat != nil {
			res.Limits[st.ID] = st.Repeat.MaxIterations
		}
	}
	for _, g := range def.Guards {
		if !g.IsHuman() {
			continue
		}
		if role, ok := approver(def, g.Name); ok {
			res.Approvers[g.Name] = role
		}
	}
	res.Cancel = slices.ContainsFunc(def.Transitions, func(t definition.Transition) bool { return t.Trigger == ceremonies.CancelTrigger })
	return res
}

// approver is the role that may grant a human guard: the first declared
// role allowed a transition the guard guards, as MADE requires of a
// grant.
func approver(def *definition.Definition, guard string) (string, bool) {
	for _, r := range def.Roles {
		for _, t := range def.Transitions {
			if slices.Contains(t.Guards, guard) && r.Allows(definition.RoleAction{Kind: definition.ActionTransition, Value: t.Trigger}) {
				return r.ID, true
			}
		}
	}
	return "", false
}

// keptDefinition reads axlrd's copy of a person's definition: the version
// named, or the newest kept one. A name or version that is not kept is
// refused with what is.
func (a *Ceremony) keptDefinition(name, version string) (*definition.Definition, []byte, error) {
	refuse := func(msg string) error {
		return temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeBadRequest, nil)
	}
	if a.Definitions == "" {
		return nil, nil, refuse("axlrd keeps no published definitions (no definitions directory)")
	}
	versions := a.keptVersions(name)
	if len(versions) == 0 {
		kept := a.keptNames()
		if len(kept) == 0 {
			return nil, nil, refuse(fmt.Sprintf("no definition %s is published: publish it first (axlr-tui ceremonies publish FILE.yaml); none is published yet", name))
		}
		return nil, nil, refuse(fmt.Sprintf("no definition %s is published: publish it first (axlr-tui ceremonies publish FILE.yaml); published: %s", name, strings.Join(kept, ", ")))
	}
	if version == "" {
		version = versions[len(versions)-1]
	}
	if !slices.Contains(versions, version) {
		return nil, nil, refuse(fmt.Sprintf("%s has no published version %s: it has %s", name, version, strings.Join(versions, ", ")))
	}
	yaml, err := os.ReadFile(filepath.Join(a.Definitions, name+"@"+version+".yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("read the kept definition %s %s: %w", name, version, err)
	}
	def, err := definition.Parse(yaml)
	if err != nil {
		return nil, nil, refuse(fmt.Sprintf("the kept definition %s %s does not parse: %v", name, version, err))
	}
	return def, yaml, nil
}

// keptVersions are the kept versions of a person's definition, oldest
// first.
func (a *Ceremony) keptVersions(name string) []string {
	var out []string
	for _, f := range a.keptFiles() {
		n, v, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "@")
		if n == name {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, compareVersions)
	return out
}

// keptNames are the names of the person's kept definitions.
func (a *Ceremony) keptNames() []string {
	var out []string
	for _, f := range a.keptFiles() {
		n, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "@")
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (a *Ceremony) keptFiles() []string {
	// The directory's name has no pattern characters of its own to err on.
	files, _ := filepath.Glob(filepath.Join(a.Definitions, "*@*.yaml"))
	slices.Sort(files)
	return files
}

// Read reads where an instance stands, for a ceremony that waits on
// something outside AXLR.
func (a *Ceremony) Read(ctx context.Context, in workflows.ReadInstanceInput) (workflows.InstanceView, error) {
	inst, err := a.Made.Get(ctx, in.InstanceID)
	if err != nil {
		return workflows.InstanceView{}, madeError("read "+in.InstanceID, err)
	}
	v := view(inst)
	v.Action = "read " + in.InstanceID + " in " + inst.CurrentState
	return v, nil
}
