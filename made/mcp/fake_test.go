package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/underpass-ai/axlr/made"
)

// blockedID is an instance id whose Get waits until its caller gives up.
const blockedID = "blocked"

// fake is a map-based made.Engine just rich enough for protocol
// tests: every verb records the request it was handed, and answers with
// made-mcp's messages for the failures the tests provoke.
type fake struct {
	mu        sync.Mutex
	digests   map[string]string // "name@version" → digest
	instances map[string]made.Instance
	// unreadable are instances List reports as not rehydratable, by id.
	unreadable map[string]string
	requests   []any
	// fail, when set, is every verb's answer.
	fail   error
	nextID int
}

func newFake() *fake {
	return &fake{
		digests:    map[string]string{},
		instances:  map[string]made.Instance{},
		unreadable: map[string]string{},
	}
}

// publishRequest records what Publish was handed.
type publishRequest struct{ YAML string }

// getRequest records what Get was handed.
type getRequest struct{ CeremonyID string }

// listRequest records a List.
type listRequest struct{}

func (f *fake) received() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fake) begin(req any) error {
	f.requests = append(f.requests, req)
	return f.fail
}

func (f *fake) Publish(_ context.Context, definitionYAML []byte) (made.Published, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(publishRequest{YAML: string(definitionYAML)}); err != nil {
		return made.Published{}, err
	}
	var id struct {
		Name    string `yaml:"name"`
		Version string `yaml:"version"`
	}
	if err := yaml.Unmarshal(definitionYAML, &id); err != nil {
		return made.Published{}, &made.Error{Kind: made.KindNotPublishable, Message: "ceremony draft could not be parsed: invariant violated: invalid ceremony yaml"}
	}
	sum := sha256.Sum256(definitionYAML)
	digest := hex.EncodeToString(sum[:])
	key := id.Name + "@" + id.Version
	stored, ok := f.digests[key]
	switch {
	case !ok:
		f.digests[key] = digest
		return made.Published{Outcome: "published", Ceremony: id.Name, Version: id.Version, Digest: digest}, nil
	case stored == digest:
		return made.Published{Outcome: "already_published", Ceremony: id.Name, Version: id.Version, Digest: digest}, nil
	default:
		return made.Published{}, &made.ConflictError{Ceremony: id.Name, Version: id.Version, PublishedDigest: stored, OfferedDigest: digest}
	}
}

func (f *fake) StartPublished(_ context.Context, req made.StartRequest) (made.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(req); err != nil {
		return made.Instance{}, err
	}
	digest, ok := f.digests[req.Ceremony+"@"+req.Version]
	if !ok {
		return made.Instance{}, &made.Error{Kind: made.KindNotFound, Message: "failed to start published ceremony: not found: published_ceremony_definition"}
	}
	id := req.CeremonyID
	if id == "" {
		f.nextID++
		id = fmt.Sprintf("generated-%d", f.nextID)
	}
	if _, exists := f.instances[id]; exists {
		return made.Instance{}, &made.Error{Kind: made.KindExists, Message: "failed to start published ceremony: already exists: ceremony_instance"}
	}
	next := "draft"
	in := made.Instance{
		CeremonyID:            id,
		DefinitionName:        req.Ceremony,
		DefinitionVersion:     req.Version,
		BoundDefinitionDigest: &digest,
		CurrentState:          "DRAFTING",
		NextStepID:            &next,
		Transitions: []made.Transition{
			{Trigger: "submit", ToState: "REVIEWING", Guards: []made.GuardStatus{{Name: "draft_done", Kind: "automated"}}},
			{Trigger: "cancel", ToState: "CANCELLED", Enabled: true},
		},
		Steps:   []made.Step{{StepID: "draft", StateID: "DRAFTING", Status: made.StepPending, Attempt: 1, Iteration: 1}},
		Context: req.Context,
	}
	f.instances[id] = in
	return clone(in), nil
}

func (f *fake) Get(ctx context.Context, ceremonyID string) (made.Instance, error) {
	if ceremonyID == blockedID {
		<-ctx.Done()
		return made.Instance{}, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(getRequest{CeremonyID: ceremonyID}); err != nil {
		return made.Instance{}, err
	}
	in, ok := f.instances[ceremonyID]
	if !ok {
		return made.Instance{}, &made.Error{Kind: made.KindNotFound, Message: "failed to load ceremony instance: not found: ceremony_instance"}
	}
	return clone(in), nil
}

func (f *fake) List(context.Context) ([]made.ListEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(listRequest{}); err != nil {
		return nil, err
	}
	var entries []made.ListEntry
	for id, in := range f.instances {
		c := clone(in)
		entries = append(entries, made.ListEntry{CeremonyID: id, Instance: &c})
	}
	for id, reason := range f.unreadable {
		entries = append(entries, made.ListEntry{CeremonyID: id, Reason: reason})
	}
	slices.SortFunc(entries, func(a, b made.ListEntry) int { return strings.Compare(a.CeremonyID, b.CeremonyID) })
	return entries, nil
}

func (f *fake) Claim(_ context.Context, req made.ClaimRequest) (made.Instance, error) {
	return f.mutate(req, req.CeremonyID, func(in *made.Instance) error {
		s := stepOf(in, req.StepID)
		if s == nil {
			return &made.Error{Kind: made.KindNoRole, Message: "ceremony step has no authorized role: invariant violated: no ceremony role can execute step"}
		}
		if s.Status == made.StepInProgress {
			return &made.Error{Kind: made.KindLeaseActive, Message: "failed to claim ceremony step: invariant violated: step lease is still active"}
		}
		s.Status = made.StepInProgress
		return nil
	})
}

func (f *fake) Complete(_ context.Context, req made.CompleteRequest) (made.Instance, error) {
	return f.mutate(req, req.CeremonyID, func(in *made.Instance) error {
		s := stepOf(in, req.StepID)
		if s == nil || s.Status != made.StepInProgress {
			return &made.Error{Kind: made.KindNotInProgress, Message: "failed to complete ceremony step: invariant violated: step result requires an in-progress step"}
		}
		s.Status, s.Output, s.Error = req.Status, req.Output, nil
		if req.Error != "" {
			s.Error = &req.Error
		}
		if req.Status == made.StepCompleted {
			in.NextStepID = nil
			in.Transitions[0].Enabled = true
			in.Transitions[0].Guards[0].Satisfied = true
		}
		return nil
	})
}

func (f *fake) ApplyTransition(_ context.Context, req made.TransitionRequest) (made.Instance, error) {
	return f.mutate(req, req.CeremonyID, func(in *made.Instance) error {
		for _, t := range in.Transitions {
			if t.Trigger != req.Trigger {
				continue
			}
			if !t.Enabled {
				return &made.Error{Kind: made.KindGuardsNotSatisfied, Message: "failed to apply ceremony transition: invariant violated: ceremony transition guards are not satisfied"}
			}
			in.CurrentState = t.ToState
			in.Transitions = nil
			in.TransitionCount++
			in.StateIterations = map[string]int{t.ToState: 1}
			in.Completed = t.ToState == "CANCELLED"
			return nil
		}
		return &made.Error{Kind: made.KindWrongState, Message: "failed to apply ceremony transition: invalid state transition `ceremony_instance.current_state` -> `transition_trigger`"}
	})
}

func (f *fake) ApproveGuard(_ context.Context, req made.ApproveRequest) (made.Instance, error) {
	return f.mutate(req, req.CeremonyID, func(in *made.Instance) error {
		if in.Context == nil {
			in.Context = map[string]any{}
		}
		in.Context[req.GuardName] = true
		return nil
	})
}

func (f *fake) DeferGuard(_ context.Context, req made.DeferRequest) (made.Instance, error) {
	return f.mutate(req, req.CeremonyID, func(in *made.Instance) error {
		in.GuardDeferrals = append(in.GuardDeferrals, made.GuardDeferral{
			GuardName:      req.GuardName,
			Statement:      req.Statement,
			Reason:         req.Reason,
			ReconsiderWhen: req.ReconsiderWhen,
			DeferredAt:     "2026-06-06 12:00:00.0 +00:00:00",
		})
		return nil
	})
}

func (f *fake) mutate(req any, id string, change func(*made.Instance) error) (made.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(req); err != nil {
		return made.Instance{}, err
	}
	stored, ok := f.instances[id]
	if !ok {
		return made.Instance{}, &made.Error{Kind: made.KindNotFound, Message: "failed to load ceremony instance: not found: ceremony_instance"}
	}
	in := clone(stored)
	if err := change(&in); err != nil {
		return made.Instance{}, err
	}
	f.instances[id] = in
	return clone(in), nil
}

func stepOf(in *made.Instance, id string) *made.Step {
	for i := range in.Steps {
		if in.Steps[i].StepID == id {
			return &in.Steps[i]
		}
	}
	return nil
}

// clone deep-copies an instance, so what the fake hands out never aliases
// what it keeps.
func clone(in made.Instance) made.Instance {
	raw, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("clone instance %s: %v", in.CeremonyID, err))
	}
	var out made.Instance
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(fmt.Sprintf("clone instance %s: %v", in.CeremonyID, err))
	}
	return out
}
