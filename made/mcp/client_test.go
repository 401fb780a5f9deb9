package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/madetest"
	"github.com/underpass-ai/axlr/made/mcp"
)

// The test binary re-executes itself as a fake made-mcp when childEnv is
// set: "serve" serves madetest.NewServer(fake engine) over stdio (writing
// its pid to the file named by pidFileEnv), "exit" fails at startup the way
// made-mcp does without a store.
const (
	childEnv   = "AXLR_MADE_TEST_CHILD"
	pidFileEnv = "AXLR_MADE_TEST_PIDFILE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

func runChild(mode string) int {
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "MADE_MCP_REDB_PATH is required for the embedded backend")
		return 2
	}
	if path := os.Getenv(pidFileEnv); path != "" {
		if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := madetest.NewServer(newFake()).Run(context.Background(), &mcpsdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// wireCall is a tools/call as the server received it.
type wireCall struct {
	Tool      string
	Arguments map[string]any
}

type wireLog struct {
	mu    sync.Mutex
	calls []wireCall
}

func (l *wireLog) last() wireCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return wireCall{}
	}
	return l.calls[len(l.calls)-1]
}

func (l *wireLog) record(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if call, ok := req.(*mcpsdk.CallToolRequest); ok {
			var args map[string]any
			if err := json.Unmarshal(call.Params.Arguments, &args); err != nil {
				return nil, fmt.Errorf("record arguments of %s: %w", call.Params.Name, err)
			}
			l.mu.Lock()
			l.calls = append(l.calls, wireCall{Tool: call.Params.Name, Arguments: args})
			l.mu.Unlock()
		}
		return next(ctx, method, req)
	}
}

// serve serves s in memory and returns a client connected to it.
func serve(t *testing.T, s *mcpsdk.Server) *mcp.Client {
	t.Helper()
	serverEnd, clientEnd := mcpsdk.NewInMemoryTransports()
	session, err := s.Connect(context.Background(), serverEnd, nil)
	if err != nil {
		t.Fatalf("connect server: %v", err)
	}
	c, err := mcp.Connect(context.Background(), clientEnd)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		_ = session.Wait()
	})
	return c
}

// serveFake connects a client to madetest.NewServer(f), logging every
// tools/call the server receives.
func serveFake(t *testing.T, f *fake) (*mcp.Client, *wireLog) {
	t.Helper()
	log := &wireLog{}
	s := madetest.NewServer(f)
	s.AddReceivingMiddleware(log.record)
	return serve(t, s), log
}

const reviewYAML = `version: "1.0"
name: change_review
states: [{id: DRAFTING, initial: true}, {id: CANCELLED, terminal: true}]
`

func TestRoundTrip(t *testing.T) {
	f := newFake()
	c, log := serveFake(t, f)
	ctx := context.Background()
	var digest string

	steps := []struct {
		name   string
		call   func() (any, error)
		wire   wireCall
		engine any
		check  func(t *testing.T, got any)
	}{
		{
			name:   "publish",
			call:   func() (any, error) { return c.Publish(ctx, []byte(reviewYAML)) },
			wire:   wireCall{mcp.ToolPublishDefinition, map[string]any{"definition_yaml": reviewYAML}},
			engine: publishRequest{YAML: strings.TrimSpace(reviewYAML)},
			check: func(t *testing.T, got any) {
				p := got.(made.Published)
				digest = p.Digest
				want := made.Published{Outcome: "published", Ceremony: "change_review", Version: "1.0", Digest: p.Digest}
				if p != want || len(p.Digest) != 64 {
					t.Errorf("Publish = %+v, want %+v with a 64-hex digest", p, want)
				}
			},
		},
		{
			name:   "publish again",
			call:   func() (any, error) { return c.Publish(ctx, []byte(reviewYAML)) },
			wire:   wireCall{mcp.ToolPublishDefinition, map[string]any{"definition_yaml": reviewYAML}},
			engine: publishRequest{YAML: strings.TrimSpace(reviewYAML)},
			check: func(t *testing.T, got any) {
				if p := got.(made.Published); p.Outcome != "already_published" || p.Digest != digest {
					t.Errorf("Publish = %+v, want already_published with digest %s", p, digest)
				}
			},
		},
		{
			name: "start with id and context",
			call: func() (any, error) {
				return c.StartPublished(ctx, made.StartRequest{
					Ceremony: "change_review", Version: "1.0", CeremonyID: "cr-42",
					ActorID: "orchestrator", ActorKind: made.ActorService,
					Context: map[string]any{"change_ref": "PR-42", "priority": 2},
				})
			},
			wire: wireCall{mcp.ToolStartPublished, map[string]any{
				"ceremony": "change_review", "version": "1.0", "ceremony_id": "cr-42",
				"actor_id": "orchestrator", "actor_kind": "service",
				"context": map[string]any{"change_ref": "PR-42", "priority": float64(2)},
			}},
			engine: made.StartRequest{
				Ceremony: "change_review", Version: "1.0", CeremonyID: "cr-42",
				ActorID: "orchestrator", ActorKind: made.ActorService,
				Context: map[string]any{"change_ref": "PR-42", "priority": float64(2)},
			},
			check: func(t *testing.T, got any) {
				in := got.(made.Instance)
				if in.CeremonyID != "cr-42" || in.CurrentState != "DRAFTING" || in.BoundDefinitionDigest == nil || *in.BoundDefinitionDigest != digest {
					t.Errorf("StartPublished = %+v", in)
				}
				if in.NextStepID == nil || *in.NextStepID != "draft" || len(in.Transitions) != 2 || in.Context["change_ref"] != "PR-42" {
					t.Errorf("StartPublished projection = %+v", in)
				}
				if s, ok := in.Step("draft"); !ok || s.Status != made.StepPending || s.Attempt != 1 || s.Iteration != 1 || s.Error != nil {
					t.Errorf("step draft = %+v, %v", s, ok)
				}
			},
		},
		{
			name: "start with defaults omitted",
			call: func() (any, error) {
				return c.StartPublished(ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "cli", ActorKind: made.ActorHuman})
			},
			wire: wireCall{mcp.ToolStartPublished, map[string]any{
				"ceremony": "change_review", "version": "1.0", "actor_id": "cli", "actor_kind": "human",
			}},
			engine: made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "cli", ActorKind: made.ActorHuman},
			check: func(t *testing.T, got any) {
				if in := got.(made.Instance); in.CeremonyID != "generated-1" {
					t.Errorf("CeremonyID = %q, want the engine's generated-1", in.CeremonyID)
				}
			},
		},
		{
			name: "claim with owner, key and ttl",
			call: func() (any, error) {
				return c.Claim(ctx, made.ClaimRequest{
					CeremonyID: "cr-42", StepID: "draft", ActorKind: made.ActorAgent,
					LeaseOwnerID: "wf-cr-42", IdempotencyKey: "cr-42/draft/1", LeaseTTL: 10 * time.Minute,
				})
			},
			wire: wireCall{mcp.ToolClaimStep, map[string]any{
				"ceremony_id": "cr-42", "step_id": "draft", "actor_kind": "agent",
				"lease_owner_id": "wf-cr-42", "idempotency_key": "cr-42/draft/1", "lease_ttl_ms": float64(600000),
			}},
			engine: made.ClaimRequest{
				CeremonyID: "cr-42", StepID: "draft", ActorKind: made.ActorAgent,
				LeaseOwnerID: "wf-cr-42", IdempotencyKey: "cr-42/draft/1", LeaseTTL: 10 * time.Minute,
			},
			check: func(t *testing.T, got any) {
				in := got.(made.Instance)
				if s, _ := in.Step("draft"); s.Status != made.StepInProgress {
					t.Errorf("step draft status = %q, want in_progress", s.Status)
				}
			},
		},
		{
			name: "claim with defaults omitted",
			call: func() (any, error) {
				return c.Claim(ctx, made.ClaimRequest{CeremonyID: "generated-1", StepID: "draft", ActorKind: made.ActorAgent})
			},
			wire: wireCall{mcp.ToolClaimStep, map[string]any{
				"ceremony_id": "generated-1", "step_id": "draft", "actor_kind": "agent",
			}},
			engine: made.ClaimRequest{CeremonyID: "generated-1", StepID: "draft", ActorKind: made.ActorAgent},
		},
		{
			name: "complete failed",
			call: func() (any, error) {
				return c.Complete(ctx, made.CompleteRequest{
					CeremonyID: "generated-1", StepID: "draft", ActorKind: made.ActorAgent,
					Status: made.StepFailed, Error: "CI red",
				})
			},
			wire: wireCall{mcp.ToolCompleteStep, map[string]any{
				"ceremony_id": "generated-1", "step_id": "draft", "actor_kind": "agent",
				"status": "failed", "error": "CI red",
			}},
			engine: made.CompleteRequest{
				CeremonyID: "generated-1", StepID: "draft", ActorKind: made.ActorAgent,
				Status: made.StepFailed, Error: "CI red",
			},
			check: func(t *testing.T, got any) {
				in := got.(made.Instance)
				if s, _ := in.Step("draft"); s.Status != made.StepFailed || s.Error == nil || *s.Error != "CI red" {
					t.Errorf("step draft = %+v, want failed with error CI red", s)
				}
			},
		},
		{
			name: "complete with output",
			call: func() (any, error) {
				return c.Complete(ctx, made.CompleteRequest{
					CeremonyID: "cr-42", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted,
					Output: map[string]any{"summary": "draft ready", "artifact": "git://repo/pr/42"},
				})
			},
			wire: wireCall{mcp.ToolCompleteStep, map[string]any{
				"ceremony_id": "cr-42", "step_id": "draft", "actor_kind": "agent", "status": "completed",
				"output": map[string]any{"summary": "draft ready", "artifact": "git://repo/pr/42"},
			}},
			engine: made.CompleteRequest{
				CeremonyID: "cr-42", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted,
				Output: map[string]any{"summary": "draft ready", "artifact": "git://repo/pr/42"},
			},
			check: func(t *testing.T, got any) {
				in := got.(made.Instance)
				s, _ := in.Step("draft")
				if s.Status != made.StepCompleted || s.Output["artifact"] != "git://repo/pr/42" || in.NextStepID != nil {
					t.Errorf("after complete: step %+v, next %v", s, in.NextStepID)
				}
				if e := in.EnabledTransitions(); len(e) != 2 || e[0].Trigger != "submit" {
					t.Errorf("EnabledTransitions = %+v, want submit and cancel", e)
				}
			},
		},
		{
			name: "approve",
			call: func() (any, error) {
				return c.ApproveGuard(ctx, made.ApproveRequest{CeremonyID: "cr-42", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman})
			},
			wire: wireCall{mcp.ToolApproveGuard, map[string]any{
				"ceremony_id": "cr-42", "guard_name": "release_approved", "role_id": "REVIEWER", "role_kind": "human",
			}},
			engine: made.ApproveRequest{CeremonyID: "cr-42", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman},
			check: func(t *testing.T, got any) {
				if in := got.(made.Instance); in.Context["release_approved"] != true {
					t.Errorf("context = %v, want release_approved true", in.Context)
				}
			},
		},
		{
			name: "defer",
			call: func() (any, error) {
				return c.DeferGuard(ctx, made.DeferRequest{
					CeremonyID: "cr-42", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman,
					Statement: "not today", Reason: "waiting for legal", ReconsiderWhen: []string{"legal signs off"},
				})
			},
			wire: wireCall{mcp.ToolDeferGuard, map[string]any{
				"ceremony_id": "cr-42", "guard_name": "release_approved", "role_id": "REVIEWER", "role_kind": "human",
				"statement": "not today", "reason": "waiting for legal", "reconsider_when": []any{"legal signs off"},
			}},
			engine: made.DeferRequest{
				CeremonyID: "cr-42", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman,
				Statement: "not today", Reason: "waiting for legal", ReconsiderWhen: []string{"legal signs off"},
			},
			check: func(t *testing.T, got any) {
				in := got.(made.Instance)
				want := []made.GuardDeferral{{
					GuardName: "release_approved", Statement: "not today", Reason: "waiting for legal",
					ReconsiderWhen: []string{"legal signs off"}, DeferredAt: "2026-06-06 12:00:00.0 +00:00:00",
				}}
				if !reflect.DeepEqual(in.GuardDeferrals, want) {
					t.Errorf("GuardDeferrals = %+v, want %+v", in.GuardDeferrals, want)
				}
			},
		},
		{
			name: "apply",
			call: func() (any, error) {
				return c.ApplyTransition(ctx, made.TransitionRequest{CeremonyID: "cr-42", Trigger: "submit", ActorKind: made.ActorService})
			},
			wire: wireCall{mcp.ToolApplyTransition, map[string]any{
				"ceremony_id": "cr-42", "trigger": "submit", "actor_kind": "service",
			}},
			engine: made.TransitionRequest{CeremonyID: "cr-42", Trigger: "submit", ActorKind: made.ActorService},
			check: func(t *testing.T, got any) {
				in := got.(made.Instance)
				if in.CurrentState != "REVIEWING" || in.TransitionCount != 1 || !reflect.DeepEqual(in.StateIterations, map[string]int{"REVIEWING": 1}) {
					t.Errorf("after apply: state %q, transition_count %d, state_iterations %v", in.CurrentState, in.TransitionCount, in.StateIterations)
				}
			},
		},
		{
			name:   "get",
			call:   func() (any, error) { return c.Get(ctx, "cr-42") },
			wire:   wireCall{mcp.ToolGetInstance, map[string]any{"ceremony_id": "cr-42"}},
			engine: getRequest{CeremonyID: "cr-42"},
			check: func(t *testing.T, got any) {
				if in := got.(made.Instance); in.CurrentState != "REVIEWING" || in.Transitions == nil {
					t.Errorf("Get = state %q, transitions %v; want REVIEWING and an empty, non-nil list", in.CurrentState, in.Transitions)
				}
			},
		},
		{
			name: "list",
			call: func() (any, error) {
				f.mu.Lock()
				f.unreadable["cr-00"] = "failed to load ceremony definition: not found: ceremony_definition"
				f.mu.Unlock()
				return c.List(ctx)
			},
			wire:   wireCall{mcp.ToolListInstances, map[string]any{}},
			engine: listRequest{},
			check: func(t *testing.T, got any) {
				entries := got.([]made.ListEntry)
				var ids []string
				for _, e := range entries {
					ids = append(ids, e.CeremonyID)
				}
				if !reflect.DeepEqual(ids, []string{"cr-00", "cr-42", "generated-1"}) {
					t.Fatalf("List ids = %v", ids)
				}
				if entries[0].Instance != nil || entries[0].Reason != "failed to load ceremony definition: not found: ceremony_definition" {
					t.Errorf("unreadable entry = %+v", entries[0])
				}
				if entries[1].Instance == nil || entries[1].Instance.CurrentState != "REVIEWING" || entries[1].Reason != "" {
					t.Errorf("readable entry = %+v", entries[1])
				}
			},
		},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got, err := s.call()
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if w := log.last(); !reflect.DeepEqual(w, s.wire) {
				t.Errorf("wire call = %#v\nwant %#v", w, s.wire)
			}
			reqs := f.received()
			if len(reqs) == 0 || !reflect.DeepEqual(reqs[len(reqs)-1], s.engine) {
				t.Errorf("engine requests end with %#v\nwant %#v", reqs[len(reqs)-1:], s.engine)
			}
			if s.check != nil {
				s.check(t, got)
			}
		})
	}
}

func TestClaimLeaseTTL(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		wantMS  any // nil: omitted
		wantErr string
	}{
		{name: "zero is omitted", ttl: 0},
		{name: "milliseconds", ttl: 1500 * time.Millisecond, wantMS: float64(1500)},
		{name: "rounded up", ttl: 1500 * time.Microsecond, wantMS: float64(2)},
		{name: "negative refused", ttl: -time.Second, wantErr: "field `lease_ttl_ms` must be a non-negative integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.fail = &made.Error{Kind: made.KindNotFound, Message: "failed to load ceremony instance: not found: ceremony_instance"}
			c, log := serveFake(t, f)
			_, err := c.Claim(context.Background(), made.ClaimRequest{CeremonyID: "c", StepID: "s", ActorKind: made.ActorAgent, LeaseTTL: tt.ttl})
			if tt.wantErr != "" {
				if !errors.Is(err, made.ErrInvalid) || err.Error() != tt.wantErr {
					t.Fatalf("Claim error = %v, want invalid %q", err, tt.wantErr)
				}
				if w := log.last(); w.Tool != "" {
					t.Errorf("a refused claim reached made-mcp: %+v", w)
				}
				return
			}
			if !errors.Is(err, made.ErrNotFound) {
				t.Fatalf("Claim error = %v, want the engine's not found", err)
			}
			ms, present := log.last().Arguments["lease_ttl_ms"]
			if tt.wantMS == nil && present || tt.wantMS != nil && ms != tt.wantMS {
				t.Errorf("lease_ttl_ms = %v (present %v), want %v", ms, present, tt.wantMS)
			}
		})
	}
}

// TestErrorKinds sends every made-mcp error message of the reference (and
// the embedded engine's own limit and approval messages) through the server
// as an engine failure and checks the kind the client reads from it.
func TestErrorKinds(t *testing.T) {
	tests := []struct {
		message string
		kind    made.Kind
	}{
		{"tools/call.arguments must be an object", made.KindInvalid},
		{"missing required field `ceremony_id`", made.KindInvalid},
		{"field `ceremony_id` must be a string", made.KindInvalid},
		{"field `ceremony_id` must not be blank", made.KindInvalid},
		{"field `lease_ttl_ms` must be a non-negative integer", made.KindInvalid},
		{"`actor_kind` must be human, agent, service or engine, not robot", made.KindInvalid},
		{"field `step_id` contains invalid characters", made.KindInvalid},
		{"field `ceremony_id` exceeds maximum length: 300 > 256", made.KindInvalid},
		{"embedded backend: unsupported tool `made_run_ceremony`", made.KindInvalid},
		{"ceremony draft could not be parsed: invariant violated: invalid ceremony yaml", made.KindNotPublishable},
		{"ceremony draft is not publishable: not found: ceremony_transition.to_state", made.KindNotPublishable},
		{"publication failed: conflict: published_ceremony_definition was changed by someone else first", made.KindConflict},
		{"publication failed: storage unavailable", made.KindUnavailable},
		{"failed to start published ceremony: not found: published_ceremony_definition", made.KindNotFound},
		{"failed to start published ceremony: already exists: ceremony_instance", made.KindExists},
		{"failed to start published ceremony: invalid `context`: invalid type: string \"x\", expected a map", made.KindInvalid},
		{"failed to load ceremony instance: not found: ceremony_instance", made.KindNotFound},
		{"failed to load ceremony definition: not found: ceremony_definition", made.KindNotFound},
		{"failed to load ceremony definition: not found: published_ceremony_definition", made.KindNotFound},
		{"failed to load ceremony definition: invariant violated: the published definition no longer matches the digest this instance ran", made.KindConflict},
		{"ceremony step has no authorized role: invariant violated: no ceremony role can execute step", made.KindNoRole},
		{"failed to claim ceremony step: invariant violated: terminal ceremony instances cannot start steps", made.KindTerminal},
		{"failed to claim ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`", made.KindWrongState},
		{"failed to claim ceremony step: invariant violated: step lease is still active", made.KindLeaseActive},
		{"failed to claim ceremony step: invariant violated: step retry policy exhausted", made.KindRetryExhausted},
		{"failed to claim ceremony step: already exists: ceremony_instance.idempotency_key", made.KindExists},
		{"field `step_result.error_message` must not be empty", made.KindInvalid},
		{"invariant violated: only failed step results may carry an error message", made.KindInvalid},
		{"failed to complete ceremony step: invariant violated: step result requires an in-progress step", made.KindNotInProgress},
		{"failed to complete ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`", made.KindWrongState},
		{"failed to complete ceremony step: invariant violated: no ceremony role can execute step", made.KindNoRole},
		{"ceremony transition has no authorized role: invariant violated: no ceremony role can apply transition", made.KindNoRole},
		{"failed to apply ceremony transition: invariant violated: terminal ceremony instances cannot transition", made.KindTerminal},
		{"failed to apply ceremony transition: invalid state transition `ceremony_instance.current_state` -> `transition_trigger`", made.KindWrongState},
		{"failed to apply ceremony transition: invariant violated: ceremony transition guards are not satisfied", made.KindGuardsNotSatisfied},
		{"failed to apply ceremony transition: invariant violated: transition limit reached (20)", made.KindLimit},
		{"failed to apply ceremony transition: invariant violated: bounce limit reached (3)", made.KindLimit},
		{"ceremony guard was not found in the instance definition", made.KindGuard},
		{"only human approval guards can be approved explicitly", made.KindGuard},
		{"human guard is not required by a transition from the current state", made.KindGuard},
		{"failed to approve ceremony guard: not found: ceremony_role", made.KindNotFound},
		{"failed to approve ceremony guard: invariant violated: only a human can approve a human guard", made.KindGuard},
		{"failed to approve ceremony guard: invariant violated: ceremony role cannot apply a transition that requires this guard", made.KindGuard},
		{"failed to defer ceremony guard: not found: ceremony_guard", made.KindNotFound},
		{"failed to defer ceremony guard: invariant violated: only human approval guards can be deferred", made.KindGuard},
		{"failed to defer ceremony guard: invariant violated: approved human guards cannot be deferred", made.KindGuard},
		{"failed to defer ceremony guard: invariant violated: human guard is not required from the current state", made.KindGuard},
		{"failed to defer ceremony guard: not found: ceremony_role", made.KindNotFound},
		{"conflict: ceremony_instance was changed by someone else first", made.KindConflict},
		{"something made-mcp 0.1.6 never said", made.KindInvalid},
	}
	f := newFake()
	c, _ := serveFake(t, f)
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			f.mu.Lock()
			f.fail = errors.New(tt.message)
			f.mu.Unlock()
			_, err := c.Get(context.Background(), "cr-42")
			var me *made.Error
			if !errors.As(err, &me) {
				t.Fatalf("Get error = %v (%T), want *made.Error", err, err)
			}
			if me.Kind != tt.kind || me.Message != tt.message {
				t.Errorf("Get error = {%s %q}, want {%s %q}", me.Kind, me.Message, tt.kind, tt.message)
			}
			if !errors.Is(err, &made.Error{Kind: tt.kind}) {
				t.Errorf("errors.Is(err, kind %s) = false", tt.kind)
			}
		})
	}
}

func TestVersionOccupied(t *testing.T) {
	c, _ := serveFake(t, newFake())
	ctx := context.Background()
	first, err := c.Publish(ctx, []byte(reviewYAML))
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	changed := reviewYAML + "description: changed\n"
	_, err = c.Publish(ctx, []byte(changed))
	if !errors.Is(err, made.ErrVersionOccupied) {
		t.Fatalf("Publish changed = %v, want ErrVersionOccupied", err)
	}
	var conflict *made.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("Publish changed error %T, want *made.ConflictError", err)
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(changed)))
	want := made.ConflictError{Ceremony: "change_review", Version: "1.0", PublishedDigest: first.Digest, OfferedDigest: hex.EncodeToString(sum[:])}
	if *conflict != want {
		t.Errorf("ConflictError = %+v, want %+v", *conflict, want)
	}
}

// made-mcp 0.1.6 payloads, as the reference (§4, §8) gives them: keys
// sorted, no fields of the newer constructs.
const (
	mcpInstance016 = `{"bound_definition_digest":"d1","ceremony_id":"cr-42","completed":false,"context":{"change_ref":"PR-42"},"current_state":"DRAFTING","definition_name":"change_review","definition_version":"1.0","guard_deferrals":[],"interventions":[],"next_step_id":"draft","open_intervention_ids":[],"participant_bindings":[],"reasons":[],"steps":[{"attempt":1,"error":null,"output":{},"state_id":"DRAFTING","status":"pending","step_id":"draft"}],"transitions":[{"enabled":false,"guards":[{"kind":"automated","name":"draft_done","satisfied":false}],"to_state":"REVIEWING","trigger":"submit"},{"enabled":true,"guards":[],"to_state":"CANCELLED","trigger":"cancel"}],"waiting_for_human":[]}`
	mcpList016     = `{"count":2,"instances":[{"ceremony_id":"cr-00","reason":"failed to load ceremony definition: not found: ceremony_definition","rehydratable":false},` + mcpInstance016 + `]}`
	mcpOccupied016 = `{"offered_digest":"d2","outcome":"version_occupied","published_digest":"d1"}`
)

// payloadServer answers every tool with payload: as structuredContent
// with the text as its text content, or, when text is empty, as the text
// content alone.
func payloadServer(payload, text string) *mcpsdk.Server {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "underpass-made-mcp", Version: "0.1.6"}, nil)
	for _, name := range []string{mcp.ToolGetInstance, mcp.ToolListInstances, mcp.ToolPublishDefinition} {
		s.AddTool(&mcpsdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			if text == "" {
				return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: payload}}}, nil
			}
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}, StructuredContent: json.RawMessage(payload)}, nil
		})
	}
	return s
}

func TestDecodesMadeMCP016Payloads(t *testing.T) {
	digest, next := "d1", "draft"
	wantInstance := made.Instance{
		CeremonyID: "cr-42", DefinitionName: "change_review", DefinitionVersion: "1.0",
		BoundDefinitionDigest: &digest, CurrentState: "DRAFTING", NextStepID: &next,
		WaitingForHuman: []string{},
		Transitions: []made.Transition{
			{Trigger: "submit", ToState: "REVIEWING", Guards: []made.GuardStatus{{Name: "draft_done", Kind: "automated"}}},
			{Trigger: "cancel", ToState: "CANCELLED", Enabled: true, Guards: []made.GuardStatus{}},
		},
		Steps:               []made.Step{{StepID: "draft", StateID: "DRAFTING", Status: made.StepPending, Attempt: 1, Output: map[string]any{}}},
		GuardDeferrals:      []made.GuardDeferral{},
		Interventions:       []any{},
		OpenInterventionIDs: []string{},
		Context:             map[string]any{"change_ref": "PR-42"},
		ParticipantBindings: []any{},
		Reasons:             []any{},
	}
	for _, variant := range []struct {
		name string
		text func(payload string) string // the text beside structuredContent; "": none of it
	}{
		{"structured content and its text", func(payload string) string { return payload }},
		{"structured content and prose", func(string) string { return "the instance is in structuredContent" }},
		{"text content only", func(string) string { return "" }},
	} {
		t.Run(variant.name, func(t *testing.T) {
			server := func(payload string) *mcpsdk.Server { return payloadServer(payload, variant.text(payload)) }
			ctx := context.Background()
			in, err := serve(t, server(mcpInstance016)).Get(ctx, "cr-42")
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !reflect.DeepEqual(in, wantInstance) {
				t.Errorf("Get = %+v\nwant %+v", in, wantInstance)
			}
			entries, err := serve(t, server(mcpList016)).List(ctx)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			wantEntries := []made.ListEntry{
				{CeremonyID: "cr-00", Reason: "failed to load ceremony definition: not found: ceremony_definition"},
				{CeremonyID: "cr-42", Instance: &wantInstance},
			}
			if !reflect.DeepEqual(entries, wantEntries) {
				t.Errorf("List = %+v\nwant %+v", entries, wantEntries)
			}
			_, err = serve(t, server(mcpOccupied016)).Publish(ctx, []byte(reviewYAML))
			var conflict *made.ConflictError
			if !errors.As(err, &conflict) || *conflict != (made.ConflictError{Ceremony: "change_review", Version: "1.0", PublishedDigest: "d1", OfferedDigest: "d2"}) {
				t.Errorf("Publish error = %#v, want the version_occupied conflict", err)
			}
		})
	}
}

func TestCallerCancellationIsNotUnavailable(t *testing.T) {
	c, _ := serveFake(t, newFake())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, blockedID)
		errc <- err
	}()
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || errors.Is(err, made.ErrUnavailable) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled and not unavailable", err)
	}
}

// startChild starts the test binary as a fake made-mcp.
func startChild(t *testing.T, mode string, timeout time.Duration, stderr *bytes.Buffer) (*mcp.Client, string, error) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	opts := mcp.Options{
		Command:     os.Args[0],
		Env:         append(os.Environ(), childEnv+"="+mode, pidFileEnv+"="+pidFile),
		Dir:         t.TempDir(),
		CallTimeout: timeout,
	}
	if stderr != nil {
		opts.Stderr = stderr
	}
	c, err := mcp.Start(context.Background(), opts)
	return c, pidFile, err
}

func TestStartChild(t *testing.T) {
	c, pidFile, err := startChild(t, "serve", 0, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()

	p, err := c.Publish(ctx, []byte(reviewYAML))
	if err != nil || p.Outcome != "published" {
		t.Fatalf("Publish = %+v, %v", p, err)
	}
	in, err := c.StartPublished(ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: "cr-1", ActorID: "t", ActorKind: made.ActorService})
	if err != nil || in.CurrentState != "DRAFTING" {
		t.Fatalf("StartPublished = %+v, %v", in, err)
	}
	in, err = c.Claim(ctx, made.ClaimRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, IdempotencyKey: "k1"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if s, _ := in.Step("draft"); s.Status != made.StepInProgress {
		t.Fatalf("after Claim step = %+v", s)
	}
	// The claim is not idempotent: made.ClaimOnce, not the client, reads
	// the step back.
	if _, err := c.Claim(ctx, made.ClaimRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, IdempotencyKey: "k1"}); !errors.Is(err, made.ErrLeaseActive) {
		t.Fatalf("second Claim = %v, want lease active", err)
	}
	if in, err = made.ClaimOnce(ctx, c, made.ClaimRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, IdempotencyKey: "k1"}); err != nil || in.CeremonyID != "cr-1" {
		t.Fatalf("ClaimOnce = %+v, %v", in, err)
	}
	if _, err := c.Get(ctx, "nope"); !errors.Is(err, made.ErrNotFound) {
		t.Fatalf("Get nope = %v, want not found", err)
	}

	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("read child pid: %v", err)
	}
	pid, err := strconv.Atoi(string(raw))
	if err != nil {
		t.Fatalf("child pid %q: %v", raw, err)
	}
	child, err := os.FindProcess(pid)
	if err != nil {
		t.Fatalf("find child %d: %v", pid, err)
	}
	if err := child.Kill(); err != nil {
		t.Fatalf("kill child %d: %v", pid, err)
	}
	_, err = c.Get(ctx, "cr-1")
	if !errors.Is(err, made.ErrUnavailable) || !strings.HasPrefix(err.Error(), "made-mcp unavailable: ") {
		t.Errorf("Get after the child died = %v, want made-mcp unavailable", err)
	}
}

func TestStartCallTimeout(t *testing.T) {
	c, _, err := startChild(t, "serve", 50*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Get(context.Background(), blockedID)
	if !errors.Is(err, made.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Errorf("Get of a call that never answers = %v, want unavailable after the call timeout", err)
	}
}

func TestStartFailures(t *testing.T) {
	var stderr bytes.Buffer
	_, _, err := startChild(t, "exit", 0, &stderr)
	if !errors.Is(err, made.ErrUnavailable) {
		t.Errorf("Start of a child exiting at startup = %v, want unavailable", err)
	}
	if !strings.Contains(stderr.String(), "MADE_MCP_REDB_PATH is required") {
		t.Errorf("child stderr = %q, want its startup message", stderr.String())
	}

	_, err = mcp.Start(context.Background(), mcp.Options{Command: filepath.Join(t.TempDir(), "made-mcp")})
	if !errors.Is(err, made.ErrUnavailable) {
		t.Errorf("Start of a missing executable = %v, want unavailable", err)
	}

	_, err = mcp.Start(context.Background(), mcp.Options{})
	if err == nil || !strings.Contains(err.Error(), "mcp.Options.Command") {
		t.Errorf("Start without a command = %v, want an error naming mcp.Options.Command", err)
	}
}
