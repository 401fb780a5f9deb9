// The in-test made-mcp: NewServer serves any made.Engine the way made-mcp
// 0.1.6 does (tool names, argument checks and their messages, result
// shapes), so the real MCP client runs over a real MCP transport in tests;
// Serve wires the two together in memory. It does not start made-mcp itself
// and knows nothing of ceremony semantics: those are the served engine's.
// (The package comment is conformance.go's.)

package madetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/mcp"
)

// The identity made-mcp reports in its initialize result.
const (
	ServerName    = "underpass-made-mcp"
	ServerVersion = "0.1.6"
)

// NewServer returns an MCP server serving e under made-mcp's tool names,
// argument names, argument messages and result shapes. Arguments are checked
// as made-mcp checks them, in its order, before e is called; e's errors
// become tool errors carrying their message, except a *made.ConflictError
// from Publish, which is made-mcp's version_occupied success payload.
func NewServer(e made.Engine) *mcpsdk.Server {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: ServerName, Version: ServerVersion}, &mcpsdk.ServerOptions{
		Capabilities:              &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{}},
		SupportedProtocolVersions: []string{mcp.ProtocolVersion},
	})
	known := make(map[string]bool)
	for _, t := range toolSpecs(e) {
		s.AddTool(&mcpsdk.Tool{Name: t.name, Description: t.description, InputSchema: t.schema}, toolHandler(t.run))
		known[t.name] = true
	}
	s.AddReceivingMiddleware(unsupportedTools(known))
	return s
}

// Serve serves e with NewServer over in-memory transports and returns a
// client connected to it; both are closed when t ends.
func Serve(t testing.TB, e made.Engine) *mcp.Client {
	t.Helper()
	serverEnd, clientEnd := mcpsdk.NewInMemoryTransports()
	session, err := NewServer(e).Connect(context.Background(), serverEnd, nil)
	if err != nil {
		t.Fatalf("connect made-mcp test server: %v", err)
	}
	client, err := mcp.Connect(context.Background(), clientEnd)
	if err != nil {
		_ = session.Close()
		t.Fatalf("connect made-mcp test client: %v", err)
	}
	t.Cleanup(func() {
		if err := client.Close(); err != nil {
			t.Errorf("close made-mcp test client: %v", err)
		}
		_ = session.Wait()
	})
	return client
}

type toolSpec struct {
	name        string
	description string
	schema      map[string]any
	run         func(ctx context.Context, raw json.RawMessage) (any, error)
}

func toolSpecs(e made.Engine) []toolSpec {
	return []toolSpec{
		{
			name:        mcp.ToolPublishDefinition,
			description: "Publish a ceremony definition under its name and version, identified by its digest.",
			schema: objectSchema([]string{"definition_yaml"}, map[string]any{
				"definition_yaml": stringSchema("Ceremony definition YAML."),
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return publishTool(ctx, e, raw) },
		},
		{
			name:        mcp.ToolStartPublished,
			description: "Start an instance of a published ceremony definition.",
			schema: objectSchema([]string{"ceremony", "version", "actor_id", "actor_kind"}, map[string]any{
				"ceremony":    stringSchema("Published ceremony name."),
				"version":     stringSchema("Published version."),
				"actor_id":    stringSchema("Who opens the instance."),
				"actor_kind":  kindSchema("What kind of party opens it."),
				"ceremony_id": stringSchema("Instance id; generated when omitted."),
				"context":     map[string]any{"type": "object", "additionalProperties": true, "description": "Opening context."},
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return startTool(ctx, e, raw) },
		},
		{
			name:        mcp.ToolGetInstance,
			description: "Read a ceremony instance.",
			schema: objectSchema([]string{"ceremony_id"}, map[string]any{
				"ceremony_id": stringSchema("Instance id."),
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return getTool(ctx, e, raw) },
		},
		{
			name:        mcp.ToolListInstances,
			description: "List every ceremony instance.",
			schema:      map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}},
			run:         func(ctx context.Context, _ json.RawMessage) (any, error) { return listTool(ctx, e) },
		},
		{
			name:        mcp.ToolClaimStep,
			description: "Lease a step of an instance for the host to execute.",
			schema: objectSchema([]string{"ceremony_id", "step_id", "actor_kind"}, map[string]any{
				"ceremony_id":     stringSchema("Instance id."),
				"step_id":         stringSchema("Step to claim."),
				"actor_kind":      kindSchema("What kind of party fills the step's seat."),
				"lease_owner_id":  stringSchema("Runner taking the lease."),
				"idempotency_key": stringSchema("Key of this claim; minted when omitted."),
				"lease_ttl_ms":    map[string]any{"type": "integer", "minimum": 0, "description": "Lease length in milliseconds; 0 or omitted: five minutes."},
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return claimTool(ctx, e, raw) },
		},
		{
			name:        mcp.ToolCompleteStep,
			description: "Record the result of a claimed step.",
			schema: objectSchema([]string{"ceremony_id", "step_id", "actor_kind", "status"}, map[string]any{
				"ceremony_id": stringSchema("Instance id."),
				"step_id":     stringSchema("Claimed step."),
				"actor_kind":  kindSchema("What kind of party did the work."),
				"status": map[string]any{
					"type":        "string",
					"enum":        []string{"completed", "failed", "waiting_for_human", "cancelled"},
					"description": "Result; failed requires error, the others forbid it.",
				},
				"output": map[string]any{"type": "object", "additionalProperties": true, "description": "Step output; omitted: empty."},
				"error":  stringSchema("Why the step failed; only with status failed."),
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return completeTool(ctx, e, raw) },
		},
		{
			name:        mcp.ToolApplyTransition,
			description: "Fire an enabled transition of an instance.",
			schema: objectSchema([]string{"ceremony_id", "trigger", "actor_kind"}, map[string]any{
				"ceremony_id": stringSchema("Instance id."),
				"trigger":     stringSchema("Trigger leaving the current state."),
				"actor_kind":  kindSchema("What kind of party fires it."),
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return applyTool(ctx, e, raw) },
		},
		{
			name:        mcp.ToolApproveGuard,
			description: "Record a human approval of a guard.",
			schema: objectSchema([]string{"ceremony_id", "guard_name", "role_id", "role_kind"}, map[string]any{
				"ceremony_id": stringSchema("Instance id."),
				"guard_name":  stringSchema("Human guard approved."),
				"role_id":     stringSchema("Seat approving it."),
				"role_kind":   kindSchema("What kind of party fills that seat."),
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return approveTool(ctx, e, raw) },
		},
		{
			name:        mcp.ToolDeferGuard,
			description: "Record why a human guard is not decided yet.",
			schema: objectSchema([]string{"ceremony_id", "guard_name", "role_id", "role_kind", "statement", "reason", "reconsider_when"}, map[string]any{
				"ceremony_id": stringSchema("Instance id."),
				"guard_name":  stringSchema("Human guard deferred."),
				"role_id":     stringSchema("Seat deferring it."),
				"role_kind":   kindSchema("What kind of party fills that seat."),
				"statement":   stringSchema("The participant's statement."),
				"reason":      stringSchema("Why it cannot be decided yet."),
				"reconsider_when": map[string]any{
					"type":        "array",
					"minItems":    1,
					"uniqueItems": true,
					"items":       map[string]any{"type": "string", "minLength": 1},
					"description": "Conditions under which to ask again.",
				},
			}),
			run: func(ctx context.Context, raw json.RawMessage) (any, error) { return deferTool(ctx, e, raw) },
		},
	}
}

func objectSchema(required []string, properties map[string]any) map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             required,
		"properties":           properties,
	}
}

func stringSchema(description string) map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "description": description}
}

func kindSchema(description string) map[string]any {
	return map[string]any{
		"type":        "string",
		"enum":        []string{"human", "agent", "service", "engine"},
		"description": description,
	}
}

func publishTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	definition := a.required("definition_yaml")
	if a.err != nil {
		return nil, a.err
	}
	p, err := e.Publish(ctx, []byte(definition))
	var occupied *made.ConflictError
	if errors.As(err, &occupied) {
		return map[string]any{
			"outcome":          "version_occupied",
			"published_digest": occupied.PublishedDigest,
			"offered_digest":   occupied.OfferedDigest,
		}, nil
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func startTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	req := made.StartRequest{}
	req.CeremonyID, _ = a.optional("ceremony_id")
	req.Context = a.object("context")
	a.check("ceremony_id", req.CeremonyID)
	req.Ceremony = a.checked("ceremony", "ceremony_name")
	req.Version = a.checked("version", "ceremony_version")
	req.ActorID = a.required("actor_id")
	req.ActorKind = a.actorKind("actor_kind")
	if a.err != nil {
		return nil, a.err
	}
	return instanceResult(e.StartPublished(ctx, req))
}

func getTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	id := a.checked("ceremony_id", "ceremony_id")
	if a.err != nil {
		return nil, a.err
	}
	return instanceResult(e.Get(ctx, id))
}

func listTool(ctx context.Context, e made.Engine) (any, error) {
	entries, err := e.List(ctx)
	if err != nil {
		return nil, err
	}
	instances := make([]any, 0, len(entries))
	for _, entry := range entries {
		if entry.Instance == nil {
			instances = append(instances, map[string]any{
				"ceremony_id":  entry.CeremonyID,
				"rehydratable": false,
				"reason":       entry.Reason,
			})
			continue
		}
		instances = append(instances, wireProjection(*entry.Instance))
	}
	return map[string]any{"count": len(instances), "instances": instances}, nil
}

func claimTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	req := made.ClaimRequest{}
	req.LeaseOwnerID, _ = a.optional("lease_owner_id")
	req.IdempotencyKey, _ = a.optional("idempotency_key")
	req.LeaseTTL = milliseconds(a.uint("lease_ttl_ms"))
	req.CeremonyID = a.checked("ceremony_id", "ceremony_id")
	req.StepID = a.checked("step_id", "step_id")
	req.ActorKind = a.actorKind("actor_kind")
	a.check("lease_owner_id", req.LeaseOwnerID)
	a.check("idempotency_key", req.IdempotencyKey)
	if a.err != nil {
		return nil, a.err
	}
	return instanceResult(e.Claim(ctx, req))
}

func completeTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	req := made.CompleteRequest{}
	switch status := made.StepStatus(a.required("status")); status {
	case made.StepCompleted, made.StepFailed, made.StepWaitingForHuman, made.StepCancelled:
		req.Status = status
	default:
		a.fail(fmt.Errorf("`status` must be completed, failed, waiting_for_human or cancelled, not %s", status))
	}
	req.Output = a.object("output")
	req.Error, _ = a.optional("error")
	a.check("step_error_message", req.Error)
	switch {
	case req.Status == made.StepFailed && req.Error == "":
		a.fail(errors.New("field `step_result.error_message` must not be empty"))
	case req.Status != made.StepFailed && req.Error != "":
		a.fail(errors.New("invariant violated: only failed step results may carry an error message"))
	}
	req.CeremonyID = a.checked("ceremony_id", "ceremony_id")
	req.StepID = a.checked("step_id", "step_id")
	req.ActorKind = a.actorKind("actor_kind")
	if a.err != nil {
		return nil, a.err
	}
	return instanceResult(e.Complete(ctx, req))
}

func applyTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	req := made.TransitionRequest{
		CeremonyID: a.checked("ceremony_id", "ceremony_id"),
		Trigger:    a.checked("trigger", "transition_trigger"),
		ActorKind:  a.actorKind("actor_kind"),
	}
	if a.err != nil {
		return nil, a.err
	}
	return instanceResult(e.ApplyTransition(ctx, req))
}

func approveTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	req := made.ApproveRequest{
		CeremonyID: a.checked("ceremony_id", "ceremony_id"),
		GuardName:  a.checked("guard_name", "guard_name"),
		RoleID:     a.checked("role_id", "role_id"),
		RoleKind:   a.actorKind("role_kind"),
	}
	if a.err != nil {
		return nil, a.err
	}
	return instanceResult(e.ApproveGuard(ctx, req))
}

func deferTool(ctx context.Context, e made.Engine, raw json.RawMessage) (any, error) {
	a := parseToolArguments(raw)
	req := made.DeferRequest{}
	req.CeremonyID = a.checked("ceremony_id", "ceremony_id")
	req.GuardName = a.checked("guard_name", "guard_name")
	req.Statement = a.required("statement")
	req.Reason = a.required("reason")
	req.ReconsiderWhen = a.strings("reconsider_when")
	if a.err == nil && len(req.ReconsiderWhen) == 0 {
		a.fail(errors.New("collection `ceremony_guard_deferral.reconsider_when` must contain at least one element"))
	}
	a.check("ceremony_guard_deferral.statement", req.Statement)
	a.check("ceremony_guard_deferral.reason", req.Reason)
	for _, condition := range req.ReconsiderWhen {
		a.check("ceremony_guard_deferral.reconsider_when", condition)
	}
	req.RoleID = a.checked("role_id", "role_id")
	req.RoleKind = a.actorKind("role_kind")
	if a.err != nil {
		return nil, a.err
	}
	return instanceResult(e.DeferGuard(ctx, req))
}

func instanceResult(in made.Instance, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return wireProjection(in), nil
}

// wireProjection writes an instance as made-mcp does: every list and map
// present, empty rather than null.
func wireProjection(in made.Instance) made.Instance {
	in.WaitingForHuman = nonNil(in.WaitingForHuman)
	in.Interventions = nonNil(in.Interventions)
	in.OpenInterventionIDs = nonNil(in.OpenInterventionIDs)
	in.ParticipantBindings = nonNil(in.ParticipantBindings)
	in.Reasons = nonNil(in.Reasons)
	in.Context = nonNilMap(in.Context)
	transitions := make([]made.Transition, len(in.Transitions))
	for i, t := range in.Transitions {
		t.Guards = nonNil(t.Guards)
		transitions[i] = t
	}
	in.Transitions = transitions
	steps := make([]made.Step, len(in.Steps))
	for i, s := range in.Steps {
		s.Output = nonNilMap(s.Output)
		steps[i] = s
	}
	in.Steps = steps
	deferrals := make([]made.GuardDeferral, len(in.GuardDeferrals))
	for i, d := range in.GuardDeferrals {
		d.ReconsiderWhen = nonNil(d.ReconsiderWhen)
		deferrals[i] = d
	}
	in.GuardDeferrals = deferrals
	return in
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// toolHandler turns a tool's run into a handler answering as made-mcp does:
// the payload as sorted-key structuredContent plus its pretty text, or the
// failure's message as an isError text.
func toolHandler(run func(context.Context, json.RawMessage) (any, error)) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		payload, err := run(ctx, req.Params.Arguments)
		if err != nil {
			return toolFailure(errorText(err)), nil
		}
		compact, err := sortedJSON(payload)
		if err != nil {
			return toolFailure(fmt.Sprintf("encode %s result: %v", req.Params.Name, err)), nil
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, compact, "", "  "); err != nil {
			return toolFailure(fmt.Sprintf("encode %s result: %v", req.Params.Name, err)), nil
		}
		return &mcpsdk.CallToolResult{
			Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: pretty.String()}},
			StructuredContent: json.RawMessage(compact),
		}, nil
	}
}

func errorText(err error) string {
	var me *made.Error
	if errors.As(err, &me) && me.Message == "" {
		return string(me.Kind)
	}
	return err.Error()
}

func toolFailure(message string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: message}}, IsError: true}
}

// sortedJSON encodes v with every object's keys sorted, as made-mcp emits
// them, numbers kept as written and no HTML escaping.
func sortedJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// unsupportedTools answers a call of an unknown tool as made-mcp does, with
// a tool error rather than the SDK's JSON-RPC error.
func unsupportedTools(known map[string]bool) mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if call, ok := req.(*mcpsdk.CallToolRequest); ok && method == "tools/call" && !known[call.Params.Name] {
				return toolFailure(fmt.Sprintf("embedded backend: unsupported tool `%s`", call.Params.Name)), nil
			}
			return next(ctx, method, req)
		}
	}
}

// milliseconds converts lease_ttl_ms, saturating where a Duration ends.
func milliseconds(ms uint64) time.Duration {
	if ms > uint64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// toolArguments reads a tool call's arguments, numbers kept as
// json.Number. The first failure sticks: later reads return zero values and
// leave it, so a tool checks err once and reports the first field made-mcp
// would.
type toolArguments struct {
	m   map[string]any
	err error
}

func parseToolArguments(raw json.RawMessage) *toolArguments {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if m, ok := v.(map[string]any); ok {
			return &toolArguments{m: m}
		}
	}
	return &toolArguments{err: errors.New("tools/call.arguments must be an object")}
}

// fail records err unless a failure came first.
func (a *toolArguments) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// check checks a non-empty s as made-mcp's value object named valueField
// does.
func (a *toolArguments) check(valueField, s string) {
	if a.err == nil && s != "" {
		a.fail(checkValue(valueField, s))
	}
}

// optional reads a trimmed, non-blank string that may be absent.
func (a *toolArguments) optional(field string) (string, bool) {
	if a.err != nil {
		return "", false
	}
	v, ok := a.m[field]
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		a.fail(fmt.Errorf("field `%s` must be a string", field))
		return "", false
	}
	s = strings.TrimSpace(s)
	if s == "" {
		a.fail(fmt.Errorf("field `%s` must not be blank", field))
		return "", false
	}
	return s, true
}

func (a *toolArguments) required(field string) string {
	s, ok := a.optional(field)
	if !ok {
		a.fail(fmt.Errorf("missing required field `%s`", field))
	}
	return s
}

// checked reads a required string and checks it as made-mcp's value object
// named valueField does.
func (a *toolArguments) checked(field, valueField string) string {
	s := a.required(field)
	a.check(valueField, s)
	return s
}

func (a *toolArguments) actorKind(field string) made.ActorKind {
	s := a.required(field)
	if a.err != nil {
		return ""
	}
	switch k := made.ActorKind(s); k {
	case made.ActorHuman, made.ActorAgent, made.ActorService, made.ActorEngine:
		return k
	default:
		a.fail(fmt.Errorf("`%s` must be human, agent, service or engine, not %s", field, s))
		return ""
	}
}

// uint reads an optional non-negative integer; absent is 0.
func (a *toolArguments) uint(field string) uint64 {
	v, ok := a.m[field]
	if a.err != nil || !ok {
		return 0
	}
	if n, isNumber := v.(json.Number); isNumber {
		if u, err := strconv.ParseUint(n.String(), 10, 64); err == nil {
			return u
		}
	}
	a.fail(fmt.Errorf("field `%s` must be a non-negative integer", field))
	return 0
}

// object reads an optional JSON object; absent is nil.
func (a *toolArguments) object(field string) map[string]any {
	v, ok := a.m[field]
	if a.err != nil || !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		a.fail(fmt.Errorf("invalid `%s`: invalid type: %s, expected a map", field, serdeUnexpected(v)))
		return nil
	}
	return plainNumbers(m).(map[string]any)
}

// strings reads a required array of trimmed, non-blank strings.
func (a *toolArguments) strings(field string) []string {
	if a.err != nil {
		return nil
	}
	v, ok := a.m[field]
	if !ok {
		a.fail(fmt.Errorf("missing required field `%s`", field))
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		a.fail(fmt.Errorf("field `%s` must be an array of strings", field))
		return nil
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		s, ok := item.(string)
		if !ok {
			a.fail(fmt.Errorf("field `%s` must contain only strings", field))
			return nil
		}
		if s = strings.TrimSpace(s); s == "" {
			a.fail(fmt.Errorf("field `%s` must not contain blank strings", field))
			return nil
		}
		out = append(out, s)
	}
	return out
}

func serdeUnexpected(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("boolean `%t`", v)
	case string:
		return fmt.Sprintf("string %q", v)
	case []any:
		return "sequence"
	case json.Number:
		if _, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
			return fmt.Sprintf("integer `%s`", v)
		}
		if _, err := strconv.ParseUint(v.String(), 10, 64); err == nil {
			return fmt.Sprintf("integer `%s`", v)
		}
		f, _ := v.Float64()
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return fmt.Sprintf("floating point `%s`", s)
	default:
		return "map"
	}
}

// plainNumbers turns the json.Numbers of a decoded value into float64, the type
// encoding/json gives an engine that decodes JSON itself.
func plainNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, item := range v {
			v[k] = plainNumbers(item)
		}
		return v
	case []any:
		for i, item := range v {
			v[i] = plainNumbers(item)
		}
		return v
	default:
		return v
	}
}

// checkValue checks s as made-mcp's value object named field does beyond
// non-blankness (s is trimmed and non-blank already): a maximum length in
// bytes and the characters it allows, with made-mcp's domain messages.
func checkValue(field, s string) error {
	maxLen, allowed := 0, notControl
	switch field {
	case "ceremony_id":
		maxLen = 256
	case "ceremony_name":
		maxLen, allowed = 128, lowerIdentifier
	case "ceremony_version":
		maxLen, allowed = 64, versionCharacter
	case "step_id", "guard_name":
		allowed = lowerIdentifier
	case "step_error_message":
		maxLen = 2048
	case "ceremony_guard_deferral.statement", "ceremony_guard_deferral.reason":
		maxLen, allowed = 4096, prose
	case "ceremony_guard_deferral.reconsider_when":
		maxLen, allowed = 1024, prose
	}
	if maxLen > 0 && len(s) > maxLen {
		return fmt.Errorf("field `%s` exceeds maximum length: %d > %d", field, len(s), maxLen)
	}
	if strings.IndexFunc(s, func(c rune) bool { return !allowed(c) }) >= 0 {
		return fmt.Errorf("field `%s` contains invalid characters", field)
	}
	return nil
}

func notControl(c rune) bool { return !unicode.IsControl(c) }

func lowerIdentifier(c rune) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' }

func versionCharacter(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
}

func prose(c rune) bool { return notControl(c) || c == '\n' || c == '\r' || c == '\t' }
