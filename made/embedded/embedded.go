// Package embedded is the in-process MADE engine axlrd uses when no
// made-mcp is configured: it publishes definitions (package definition)
// and drives their instances with made-mcp 0.1.6's semantics and messages,
// so the conformance suite (package madetest) holds for it as for made-mcp.
//
// It owns its store and nothing else: a directory of JSON files written
// atomically (Open) for one host, or PostgreSQL tables (OpenDB) that the
// hosts of a cluster share, where every change to an instance is a
// compare-and-swap on its revision. It starts no process, runs no handler
// and enforces no timeout or backoff. Locking a directory to one process,
// retrying and running the steps are the caller's.
package embedded

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// Options configure the embedded engine.
type Options struct {
	// Now is the engine's clock. Default: time.Now.
	Now func() time.Time
	// NewID makes ceremony ids and default idempotency keys. Default: a
	// random lowercase UUID v4 (crypto/rand).
	NewID func() string
}

// Engine is the in-process ceremony engine axlrd uses when no made-mcp is
// configured. It speaks made-mcp 0.1.6's semantics and messages (claim
// is not idempotent, completion is not fenced, leases expire lazily and a
// late completion by the old owner is still accepted while the step is in
// progress, timeouts and backoff are stored but not enforced) plus the
// newer constructs described on definition.Definition, and it refuses
// definitions with unknown keys.
//
// Published definitions (their YAML and digest) and every instance live
// in its backend and survive a restart or a crash: each change is stored
// before the verb returns. A verb reads the instance, applies itself to a
// copy and stores the copy only if the instance's revision has not moved
// meanwhile; otherwise it starts again on what is stored now, so verbs on
// one instance apply one after another whichever process runs them. A
// directory must belong to one process (axlrd locks its state directory);
// a database may be shared.
type Engine struct {
	b     backend
	now   func() time.Time
	newID func() string

	mu     sync.Mutex
	defs   map[string]*published // published definitions read so far
	closed bool
}

// maxSwaps bounds how often a verb starts again after losing its
// instance's revision to another process.
const maxSwaps = 64

var _ made.Engine = (*Engine)(nil)

// Open opens (creating it, mode 0700) the engine's directory and
// reads what it holds.
func Open(dir string, opts Options) (*Engine, error) {
	b, err := openFileBackend(dir)
	if err != nil {
		return nil, fmt.Errorf("open embedded ceremony engine: %w", err)
	}
	return newEngine(context.Background(), b, opts)
}

// OpenDB opens the engine on a PostgreSQL database (a pgx database/sql
// pool, its search_path the engine's schema), creating its tables if need
// be. The pool stays the caller's to close.
func OpenDB(ctx context.Context, db *sql.DB, opts Options) (*Engine, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	b, err := openSQLBackend(ctx, db, now)
	if err != nil {
		return nil, fmt.Errorf("open the ceremony engine on its database: %w", err)
	}
	return newEngine(ctx, b, opts)
}

func newEngine(ctx context.Context, b backend, opts Options) (*Engine, error) {
	e := &Engine{b: b, now: opts.Now, newID: opts.NewID, defs: map[string]*published{}}
	if e.now == nil {
		e.now = time.Now
	}
	if e.newID == nil {
		e.newID = randomUUID
	}
	stored, err := b.definitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("open embedded ceremony engine: %w", err)
	}
	for _, d := range stored {
		e.defs[publishedKey(d.Name, d.Version)] = loadPublished(d)
	}
	return e, nil
}

// usable fails once the engine is closed.
func (e *Engine) usable() *made.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return newError(made.KindUnavailable, "%s", msgClosed)
	}
	return nil
}

// published returns the definition published as name@version: from what
// this engine read before, else from the backend (another host may have
// published it). ok is false when there is none.
func (e *Engine) published(ctx context.Context, name, version string) (*published, bool, *made.Error) {
	key := publishedKey(name, version)
	e.mu.Lock()
	p, ok := e.defs[key]
	e.mu.Unlock()
	if ok {
		return p, true, nil
	}
	d, ok, err := e.b.definition(ctx, name, version)
	if err != nil {
		return nil, false, storeFailed(err)
	}
	if !ok {
		return nil, false, nil
	}
	p = loadPublished(d)
	e.mu.Lock()
	e.defs[key] = p
	e.mu.Unlock()
	return p, true, nil
}

func storeFailed(err error) *made.Error {
	return newError(made.KindUnavailable, "%s%v", msgStoreFailed, err)
}

// Close ends the engine; later calls fail as unavailable. Everything is
// stored already.
func (e *Engine) Close() error {
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
func (e *Engine) Publish(ctx context.Context, definitionYAML []byte) (made.Published, error) {
	if err := ctx.Err(); err != nil {
		return made.Published{}, err
	}
	if _, err := required("definition_yaml", string(definitionYAML)); err != nil {
		return made.Published{}, err
	}
	def, err := definition.Parse(definitionYAML)
	if err != nil {
		return made.Published{}, prefixed(prefixParse, asError(err))
	}
	if f, blocked := definition.FirstError(definition.Validate(def)); blocked {
		return made.Published{}, newError(made.KindNotPublishable, "%s%s", prefixNotPublishable, f.Message)
	}
	digest := definition.Digest(def)
	if err := e.usable(); err != nil {
		return made.Published{}, err
	}
	conflict := func(had string) error {
		return &made.ConflictError{Ceremony: def.Name, Version: def.Version, PublishedDigest: had, OfferedDigest: digest}
	}
	already := made.Published{Outcome: "already_published", Ceremony: def.Name, Version: def.Version, Digest: digest}
	p, ok, merr := e.published(ctx, def.Name, def.Version)
	switch {
	case merr != nil:
		return made.Published{}, prefixed(prefixPublication, merr)
	case ok && p.digest != digest:
		return made.Published{}, conflict(p.digest)
	case ok:
		return already, nil
	}
	sd := storedDefinition{Name: def.Name, Version: def.Version, Digest: digest, YAML: string(definitionYAML)}
	had, err := e.b.addDefinition(ctx, sd)
	if err != nil {
		return made.Published{}, newError(made.KindUnavailable, "%s%v", prefixPublication, err)
	}
	e.mu.Lock()
	e.defs[publishedKey(def.Name, def.Version)] = loadPublished(had)
	e.mu.Unlock()
	if had.Digest != digest { // another host published it first
		return made.Published{}, conflict(had.Digest)
	}
	if had.YAML != sd.YAML {
		return already, nil
	}
	return made.Published{Outcome: "published", Ceremony: def.Name, Version: def.Version, Digest: digest}, nil
}

func asError(err error) *made.Error {
	if e, ok := err.(*made.Error); ok {
		return e
	}
	return &made.Error{Kind: made.KindInvalid, Message: err.Error()}
}

// StartPublished opens an instance of a published definition
// (made_start_published_ceremony).
func (e *Engine) StartPublished(ctx context.Context, req made.StartRequest) (made.Instance, error) {
	if err := ctx.Err(); err != nil {
		return made.Instance{}, err
	}
	a, aerr := startArgs(req)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	if err := e.usable(); err != nil {
		return made.Instance{}, err
	}
	id := a.id
	if id == "" {
		id = e.newID()
	}
	p, ok, merr := e.published(ctx, a.name, a.version)
	switch {
	case merr != nil:
		return made.Instance{}, prefixed(prefixStart, merr)
	case !ok:
		return made.Instance{}, newError(made.KindNotFound, "%s%s", prefixStart, msgPublishedNotFound)
	case p.broken != nil:
		return made.Instance{}, prefixed(prefixStart, p.broken)
	}
	in := newInstance(id, p, a.context, actor{ID: a.actorID, Kind: req.ActorKind}, e.now())
	b, err := json.Marshal(in)
	if err != nil {
		return made.Instance{}, prefixed(prefixStart, storeFailed(err))
	}
	created, err := e.b.create(ctx, id, b)
	switch {
	case err != nil:
		return made.Instance{}, prefixed(prefixStart, storeFailed(err))
	case !created:
		return made.Instance{}, newError(made.KindExists, "%s%s", prefixStart, msgInstanceExists)
	}
	return project(in, p), nil
}

type startArguments struct {
	id, name, version, actorID string
	context                    map[string]any
}

func startArgs(req made.StartRequest) (startArguments, *made.Error) {
	var a startArguments
	var err *made.Error
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
	if a.name, err = checked("ceremony", req.Ceremony, func(v string) (string, error) { return definition.CheckID("ceremony_name", v, 128) }); err != nil {
		return a, err
	}
	if a.version, err = checked("version", req.Version, definition.CheckVersion); err != nil {
		return a, err
	}
	if a.actorID, err = required("actor_id", req.ActorID); err != nil {
		return a, err
	}
	return a, actorKind("actor_kind", req.ActorKind)
}

// Get returns an instance (made_get_ceremony_instance).
func (e *Engine) Get(ctx context.Context, id string) (made.Instance, error) {
	if err := ctx.Err(); err != nil {
		return made.Instance{}, err
	}
	id, aerr := ceremonyID(id)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	if err := e.usable(); err != nil {
		return made.Instance{}, err
	}
	in, p, _, err := e.load(ctx, id)
	if err != nil {
		return made.Instance{}, err
	}
	return project(in, p), nil
}

// List returns every instance by id (made_list_ceremony_instances); one
// whose definition cannot be loaded carries the reason instead.
func (e *Engine) List(ctx context.Context) ([]made.ListEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := e.usable(); err != nil {
		return nil, err
	}
	all, err := e.b.instances(ctx)
	if err != nil {
		return nil, storeFailed(err)
	}
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]made.ListEntry, 0, len(ids))
	for _, id := range ids {
		in, p, err := e.decode(ctx, all[id])
		if err != nil {
			out = append(out, made.ListEntry{CeremonyID: id, Reason: err.Message})
			continue
		}
		proj := project(in, p)
		out = append(out, made.ListEntry{CeremonyID: id, Instance: &proj})
	}
	return out, nil
}

// Claim takes a step's lease (made_claim_ceremony_step).
func (e *Engine) Claim(ctx context.Context, req made.ClaimRequest) (made.Instance, error) {
	if err := ctx.Err(); err != nil {
		return made.Instance{}, err
	}
	id, a, aerr := e.checkClaim(req)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	return e.mutate(ctx, id, func(in *instanceState, p *published, now time.Time) *made.Error {
		return in.claim(p, a, now)
	})
}

func (e *Engine) checkClaim(req made.ClaimRequest) (string, claimArgs, *made.Error) {
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
	if a.owner, err = checked("lease_owner_id", a.owner, func(v string) (string, error) { return definition.CheckText("lease_owner_id", v, 0) }); err != nil {
		return "", a, err
	}
	if a.key, err = checked("idempotency_key", a.key, func(v string) (string, error) { return definition.CheckText("idempotency_key", v, 0) }); err != nil {
		return "", a, err
	}
	a.ttl, err = leaseTTL(req.LeaseTTL)
	return id, a, err
}

// Complete records a claimed step's result (made_complete_ceremony_step).
func (e *Engine) Complete(ctx context.Context, req made.CompleteRequest) (made.Instance, error) {
	if err := ctx.Err(); err != nil {
		return made.Instance{}, err
	}
	status, output, message, aerr := stepResult(req)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	id, aerr := ceremonyID(req.CeremonyID)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	step, aerr := checked("step_id", req.StepID, stepIDArg)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	if aerr := actorKind("actor_kind", req.ActorKind); aerr != nil {
		return made.Instance{}, aerr
	}
	return e.mutate(ctx, id, func(in *instanceState, p *published, _ time.Time) *made.Error {
		return in.complete(p, step, status, output, message)
	})
}

// ApplyTransition fires a trigger whose guards hold
// (made_apply_ceremony_transition).
func (e *Engine) ApplyTransition(ctx context.Context, req made.TransitionRequest) (made.Instance, error) {
	if err := ctx.Err(); err != nil {
		return made.Instance{}, err
	}
	id, aerr := ceremonyID(req.CeremonyID)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	trigger, aerr := checked("trigger", req.Trigger, triggerArg)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	if aerr := actorKind("actor_kind", req.ActorKind); aerr != nil {
		return made.Instance{}, aerr
	}
	return e.mutate(ctx, id, func(in *instanceState, p *published, now time.Time) *made.Error {
		return in.transition(p, trigger, req.ActorKind, now)
	})
}

// ApproveGuard grants a human guard (made_approve_ceremony_guard).
func (e *Engine) ApproveGuard(ctx context.Context, req made.ApproveRequest) (made.Instance, error) {
	if err := ctx.Err(); err != nil {
		return made.Instance{}, err
	}
	id, a, aerr := guardArgs(req.CeremonyID, req.GuardName, req.RoleID, req.RoleKind)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	return e.mutate(ctx, id, func(in *instanceState, p *published, now time.Time) *made.Error {
		return in.approve(p, a, now)
	})
}

// DeferGuard records why a human guard is not granted yet
// (made_defer_ceremony_guard).
func (e *Engine) DeferGuard(ctx context.Context, req made.DeferRequest) (made.Instance, error) {
	if err := ctx.Err(); err != nil {
		return made.Instance{}, err
	}
	statement, reason, when, aerr := deferralContent(req)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	id, a, aerr := guardArgs(req.CeremonyID, req.GuardName, req.RoleID, req.RoleKind)
	if aerr != nil {
		return made.Instance{}, aerr
	}
	return e.mutate(ctx, id, func(in *instanceState, p *published, now time.Time) *made.Error {
		return in.deferGuard(p, a, deferral{Statement: statement, Reason: reason, ReconsiderWhen: when, At: now})
	})
}

func guardArgs(ceremony, guard, role string, kind made.ActorKind) (string, approveArgs, *made.Error) {
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

// mutate runs one verb on a copy of the instance and stores the result
// if the instance is still at the revision read, else runs it again on
// what is stored now; a verb that fails changes nothing.
func (e *Engine) mutate(ctx context.Context, id string, verb func(*instanceState, *published, time.Time) *made.Error) (made.Instance, error) {
	if err := e.usable(); err != nil {
		return made.Instance{}, err
	}
	for range maxSwaps {
		in, p, rev, err := e.load(ctx, id)
		if err != nil {
			return made.Instance{}, err
		}
		now := e.now()
		if err := verb(in, p, now); err != nil {
			return made.Instance{}, err
		}
		in.UpdatedAt = now
		b, jerr := json.Marshal(in)
		if jerr != nil {
			return made.Instance{}, storeFailed(jerr)
		}
		swapped, serr := e.b.swap(ctx, id, b, rev)
		if serr != nil {
			return made.Instance{}, storeFailed(serr)
		}
		if swapped {
			return project(in, p), nil
		}
		if err := ctx.Err(); err != nil {
			return made.Instance{}, err
		}
	}
	return made.Instance{}, newError(made.KindUnavailable, "%sceremony instance %s changed %d times while a verb applied; try again", msgStoreFailed, id, maxSwaps)
}

// load reads an instance, its definition and its revision.
func (e *Engine) load(ctx context.Context, id string) (*instanceState, *published, int64, *made.Error) {
	b, rev, ok, err := e.b.instance(ctx, id)
	if err != nil {
		return nil, nil, 0, newError(made.KindUnavailable, "%s%s%v", prefixLoadInstance, msgStoreFailed, err)
	}
	if !ok {
		return nil, nil, 0, newError(made.KindNotFound, "%s%s", prefixLoadInstance, msgInstanceNotFound)
	}
	in, p, merr := e.decode(ctx, b)
	return in, p, rev, merr
}

// decode reads a stored instance and finds its definition.
func (e *Engine) decode(ctx context.Context, b []byte) (*instanceState, *published, *made.Error) {
	var in instanceState
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, nil, newError(made.KindUnavailable, "%s%s%v", prefixLoadInstance, msgStoreFailed, err)
	}
	p, ok, err := e.published(ctx, in.Name, in.Version)
	switch {
	case err != nil:
		return nil, nil, prefixed(prefixLoadDefinition, err)
	case !ok:
		return nil, nil, newError(made.KindNotFound, "%s%s", prefixLoadDefinition, msgPublishedNotFound)
	case p.broken != nil || p.digest != in.Digest:
		return nil, nil, newError(made.KindConflict, "%s%s", prefixLoadDefinition, msgDigestMismatch)
	}
	return &in, p, nil
}
