package made

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"
)

// EmbeddedOptions configure the embedded engine.
type EmbeddedOptions struct {
	// Now is the engine's clock. Default: time.Now.
	Now func() time.Time
	// NewID makes ceremony ids and default idempotency keys. Default: a
	// random lowercase UUID v4 (crypto/rand).
	NewID func() string
}

// Embedded is the in-process ceremony engine axlrd uses when no made-mcp
// is configured. It speaks made-mcp 0.1.6's semantics and messages (claim
// is not idempotent, completion is not fenced, leases expire lazily and a
// late completion by the old owner is still accepted while the step is in
// progress, timeouts and backoff are stored but not enforced) plus the
// newer constructs described on Definition, and it refuses definitions
// with unknown keys.
//
// Published definitions (their YAML and digest) and every instance live
// in a directory and survive a restart or a crash: each change is written
// atomically before the verb returns. One mutex serialises the verbs; the
// directory must belong to one process (axlrd locks its state directory).
type Embedded struct {
	mu        sync.Mutex
	store     *store
	now       func() time.Time
	newID     func() string
	defs      map[string]*published
	instances map[string][]byte // ceremony id → stored JSON
	closed    bool
}

var _ Engine = (*Embedded)(nil)

// OpenEmbedded opens (creating it, mode 0700) the engine's directory and
// reads what it holds.
func OpenEmbedded(dir string, opts EmbeddedOptions) (*Embedded, error) {
	st, err := openStore(dir)
	if err != nil {
		return nil, fmt.Errorf("open embedded ceremony engine: %w", err)
	}
	e := &Embedded{store: st, now: opts.Now, newID: opts.NewID, defs: map[string]*published{}}
	if e.now == nil {
		e.now = time.Now
	}
	if e.newID == nil {
		e.newID = randomUUID
	}
	stored, err := st.readDefinitions()
	if err != nil {
		return nil, fmt.Errorf("open embedded ceremony engine: %w", err)
	}
	for _, d := range stored {
		e.defs[publishedKey(d.Name, d.Version)] = loadPublished(d)
	}
	if e.instances, err = st.readInstances(); err != nil {
		return nil, fmt.Errorf("open embedded ceremony engine: %w", err)
	}
	return e, nil
}

// Close ends the engine; later calls fail as unavailable. Everything is on
// disk already.
func (e *Embedded) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}

// randomUUID is a random lowercase UUID v4.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (it crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Publish stores a definition (made_publish_ceremony_definition).
func (e *Embedded) Publish(ctx context.Context, definitionYAML []byte) (Published, error) {
	if err := ctx.Err(); err != nil {
		return Published{}, err
	}
	if _, err := required("definition_yaml", string(definitionYAML)); err != nil {
		return Published{}, err
	}
	def, err := Parse(definitionYAML)
	if err != nil {
		return Published{}, prefixed(prefixParse, asError(err))
	}
	if f, blocked := FirstError(Validate(def)); blocked {
		return Published{}, newError(KindNotPublishable, "%s%s", prefixNotPublishable, f.Message)
	}
	digest := Digest(def)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Published{}, newError(KindUnavailable, "%s", msgClosed)
	}
	key := publishedKey(def.Name, def.Version)
	if p, ok := e.defs[key]; ok {
		if p.digest != digest {
			return Published{}, &ConflictError{Ceremony: def.Name, Version: def.Version, PublishedDigest: p.digest, OfferedDigest: digest}
		}
		return Published{Outcome: "already_published", Ceremony: def.Name, Version: def.Version, Digest: digest}, nil
	}
	sd := storedDefinition{Name: def.Name, Version: def.Version, Digest: digest, YAML: string(definitionYAML)}
	if err := e.store.writeDefinition(sd); err != nil {
		return Published{}, newError(KindUnavailable, "%s%v", prefixPublication, err)
	}
	e.defs[key] = newPublished(def, digest, sd.YAML)
	return Published{Outcome: "published", Ceremony: def.Name, Version: def.Version, Digest: digest}, nil
}

func asError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return &Error{Kind: KindInvalid, Message: err.Error()}
}

// StartPublished opens an instance of a published definition
// (made_start_published_ceremony).
func (e *Embedded) StartPublished(ctx context.Context, req StartRequest) (Instance, error) {
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	a, aerr := startArgs(req)
	if aerr != nil {
		return Instance{}, aerr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Instance{}, newError(KindUnavailable, "%s", msgClosed)
	}
	id := a.id
	if id == "" {
		id = e.newID()
	}
	p, ok := e.defs[publishedKey(a.name, a.version)]
	switch {
	case !ok:
		return Instance{}, newError(KindNotFound, "%s%s", prefixStart, msgPublishedNotFound)
	case p.broken != nil:
		return Instance{}, prefixed(prefixStart, p.broken)
	}
	if _, exists := e.instances[id]; exists {
		return Instance{}, newError(KindExists, "%s%s", prefixStart, msgInstanceExists)
	}
	in := newInstance(id, p, a.context, actor{ID: a.actorID, Kind: req.ActorKind}, e.now())
	if err := e.save(in); err != nil {
		return Instance{}, prefixed(prefixStart, err)
	}
	return project(in, p), nil
}

type startArguments struct {
	id, name, version, actorID string
	context                    map[string]any
}

func startArgs(req StartRequest) (startArguments, *Error) {
	var a startArguments
	var err *Error
	if a.id, err = optional("ceremony_id", req.CeremonyID); err != nil {
		return a, err
	}
	if a.id != "" {
		if a.id, err = ceremonyID(a.id); err != nil {
			return a, err
		}
	}
	if a.context, err = jsonObject("context", req.Context); err != nil {
		return a, err
	}
	if a.name, err = checked("ceremony", req.Ceremony, func(v string) (string, error) { return lowerID("ceremony_name", v, 128) }); err != nil {
		return a, err
	}
	if a.version, err = checked("version", req.Version, checkVersion); err != nil {
		return a, err
	}
	if a.actorID, err = required("actor_id", req.ActorID); err != nil {
		return a, err
	}
	return a, actorKind("actor_kind", req.ActorKind)
}

// Get returns an instance (made_get_ceremony_instance).
func (e *Embedded) Get(ctx context.Context, id string) (Instance, error) {
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	id, aerr := ceremonyID(id)
	if aerr != nil {
		return Instance{}, aerr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Instance{}, newError(KindUnavailable, "%s", msgClosed)
	}
	in, p, err := e.load(id)
	if err != nil {
		return Instance{}, err
	}
	return project(in, p), nil
}

// List returns every instance by id (made_list_ceremony_instances); one
// whose definition cannot be loaded carries the reason instead.
func (e *Embedded) List(ctx context.Context) ([]ListEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, newError(KindUnavailable, "%s", msgClosed)
	}
	ids := make([]string, 0, len(e.instances))
	for id := range e.instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]ListEntry, 0, len(ids))
	for _, id := range ids {
		in, p, err := e.load(id)
		if err != nil {
			out = append(out, ListEntry{CeremonyID: id, Reason: err.Message})
			continue
		}
		proj := project(in, p)
		out = append(out, ListEntry{CeremonyID: id, Instance: &proj})
	}
	return out, nil
}

// Claim takes a step's lease (made_claim_ceremony_step).
func (e *Embedded) Claim(ctx context.Context, req ClaimRequest) (Instance, error) {
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	id, a, aerr := e.checkClaim(req)
	if aerr != nil {
		return Instance{}, aerr
	}
	return e.mutate(id, func(in *instanceState, p *published, now time.Time) *Error {
		return in.claim(p, a, now)
	})
}

func (e *Embedded) checkClaim(req ClaimRequest) (string, claimArgs, *Error) {
	var a claimArgs
	id, err := ceremonyID(req.CeremonyID)
	if err != nil {
		return "", a, err
	}
	if a.step, err = checked("step_id", req.StepID, stepIDArg); err != nil {
		return "", a, err
	}
	if err = actorKind("actor_kind", req.ActorKind); err != nil {
		return "", a, err
	}
	a.owner, a.key = req.LeaseOwnerID, req.IdempotencyKey
	if a.owner == "" {
		a.owner = defaultLeaseOwner
	}
	if a.key == "" {
		a.key = "made-mcp-external-" + e.newID()
	}
	if a.owner, err = checked("lease_owner_id", a.owner, func(v string) (string, error) { return text("lease_owner_id", v, 0) }); err != nil {
		return "", a, err
	}
	if a.key, err = checked("idempotency_key", a.key, func(v string) (string, error) { return text("idempotency_key", v, 0) }); err != nil {
		return "", a, err
	}
	a.ttl, err = leaseTTL(req.LeaseTTL)
	return id, a, err
}

// Complete records a claimed step's result (made_complete_ceremony_step).
func (e *Embedded) Complete(ctx context.Context, req CompleteRequest) (Instance, error) {
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	status, output, message, aerr := stepResult(req)
	if aerr != nil {
		return Instance{}, aerr
	}
	id, aerr := ceremonyID(req.CeremonyID)
	if aerr != nil {
		return Instance{}, aerr
	}
	step, aerr := checked("step_id", req.StepID, stepIDArg)
	if aerr != nil {
		return Instance{}, aerr
	}
	if aerr := actorKind("actor_kind", req.ActorKind); aerr != nil {
		return Instance{}, aerr
	}
	return e.mutate(id, func(in *instanceState, p *published, _ time.Time) *Error {
		return in.complete(p, step, status, output, message)
	})
}

// ApplyTransition fires a trigger whose guards hold
// (made_apply_ceremony_transition).
func (e *Embedded) ApplyTransition(ctx context.Context, req TransitionRequest) (Instance, error) {
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	id, aerr := ceremonyID(req.CeremonyID)
	if aerr != nil {
		return Instance{}, aerr
	}
	trigger, aerr := checked("trigger", req.Trigger, triggerArg)
	if aerr != nil {
		return Instance{}, aerr
	}
	if aerr := actorKind("actor_kind", req.ActorKind); aerr != nil {
		return Instance{}, aerr
	}
	return e.mutate(id, func(in *instanceState, p *published, now time.Time) *Error {
		return in.transition(p, trigger, req.ActorKind, now)
	})
}

// ApproveGuard grants a human guard (made_approve_ceremony_guard).
func (e *Embedded) ApproveGuard(ctx context.Context, req ApproveRequest) (Instance, error) {
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	id, a, aerr := guardArgs(req.CeremonyID, req.GuardName, req.RoleID, req.RoleKind)
	if aerr != nil {
		return Instance{}, aerr
	}
	return e.mutate(id, func(in *instanceState, p *published, now time.Time) *Error {
		return in.approve(p, a, now)
	})
}

// DeferGuard records why a human guard is not granted yet
// (made_defer_ceremony_guard).
func (e *Embedded) DeferGuard(ctx context.Context, req DeferRequest) (Instance, error) {
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	statement, reason, when, aerr := deferralContent(req)
	if aerr != nil {
		return Instance{}, aerr
	}
	id, a, aerr := guardArgs(req.CeremonyID, req.GuardName, req.RoleID, req.RoleKind)
	if aerr != nil {
		return Instance{}, aerr
	}
	return e.mutate(id, func(in *instanceState, p *published, now time.Time) *Error {
		return in.deferGuard(p, a, deferral{Statement: statement, Reason: reason, ReconsiderWhen: when, At: now})
	})
}

func guardArgs(ceremony, guard, role string, kind ActorKind) (string, approveArgs, *Error) {
	a := approveArgs{kind: kind}
	id, err := ceremonyID(ceremony)
	if err != nil {
		return "", a, err
	}
	if a.guard, err = checked("guard_name", guard, guardNameArg); err != nil {
		return "", a, err
	}
	if a.role, err = checked("role_id", role, roleIDArg); err != nil {
		return "", a, err
	}
	return id, a, actorKind("role_kind", kind)
}

// mutate runs one verb on a copy of the instance and stores the result;
// a verb that fails changes nothing.
func (e *Embedded) mutate(id string, verb func(*instanceState, *published, time.Time) *Error) (Instance, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Instance{}, newError(KindUnavailable, "%s", msgClosed)
	}
	in, p, err := e.load(id)
	if err != nil {
		return Instance{}, err
	}
	now := e.now()
	if err := verb(in, p, now); err != nil {
		return Instance{}, err
	}
	in.UpdatedAt = now
	if err := e.save(in); err != nil {
		return Instance{}, err
	}
	return project(in, p), nil
}

// load reads an instance and its definition.
func (e *Embedded) load(id string) (*instanceState, *published, *Error) {
	b, ok := e.instances[id]
	if !ok {
		return nil, nil, newError(KindNotFound, "%s%s", prefixLoadInstance, msgInstanceNotFound)
	}
	var in instanceState
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, nil, newError(KindUnavailable, "%s%s%v", prefixLoadInstance, msgStoreFailed, err)
	}
	p, ok := e.defs[publishedKey(in.Name, in.Version)]
	switch {
	case !ok:
		return nil, nil, newError(KindNotFound, "%s%s", prefixLoadDefinition, msgPublishedNotFound)
	case p.broken != nil || p.digest != in.Digest:
		return nil, nil, newError(KindConflict, "%s%s", prefixLoadDefinition, msgDigestMismatch)
	}
	return &in, p, nil
}

// save writes an instance before the engine's memory holds it.
func (e *Embedded) save(in *instanceState) *Error {
	b, err := json.Marshal(in)
	if err == nil {
		err = e.store.writeInstance(in.ID, b)
	}
	if err != nil {
		return newError(KindUnavailable, "%s%v", msgStoreFailed, err)
	}
	e.instances[in.ID] = b
	return nil
}
