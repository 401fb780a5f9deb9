package madetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/made/madetest"
)

// recorder is a made.Engine that records what it is handed and answers
// with canned values.
type recorder struct {
	mu        sync.Mutex
	calls     []any
	err       error
	published made.Published
	instance  made.Instance
	entries   []made.ListEntry
}

// publishCall records the YAML Publish was handed.
type publishCall string

// getCall records the id Get was handed.
type getCall string

// listCall records a List.
type listCall struct{}

func (r *recorder) note(call any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	return r.err
}

func (r *recorder) received() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) answer(call any) (made.Instance, error) {
	if err := r.note(call); err != nil {
		return made.Instance{}, err
	}
	return r.instance, nil
}

func (r *recorder) Publish(_ context.Context, definitionYAML []byte) (made.Published, error) {
	if err := r.note(publishCall(definitionYAML)); err != nil {
		return made.Published{}, err
	}
	return r.published, nil
}

func (r *recorder) StartPublished(_ context.Context, req made.StartRequest) (made.Instance, error) {
	return r.answer(req)
}

func (r *recorder) Get(_ context.Context, id string) (made.Instance, error) {
	return r.answer(getCall(id))
}

func (r *recorder) List(context.Context) ([]made.ListEntry, error) {
	if err := r.note(listCall{}); err != nil {
		return nil, err
	}
	return r.entries, nil
}

func (r *recorder) Claim(_ context.Context, req made.ClaimRequest) (made.Instance, error) {
	return r.answer(req)
}

func (r *recorder) Complete(_ context.Context, req made.CompleteRequest) (made.Instance, error) {
	return r.answer(req)
}

func (r *recorder) ApplyTransition(_ context.Context, req made.TransitionRequest) (made.Instance, error) {
	return r.answer(req)
}

func (r *recorder) ApproveGuard(_ context.Context, req made.ApproveRequest) (made.Instance, error) {
	return r.answer(req)
}

func (r *recorder) DeferGuard(_ context.Context, req made.DeferRequest) (made.Instance, error) {
	return r.answer(req)
}

// rawSession connects a plain go-sdk client (default options) to NewServer(e).
func rawSession(t *testing.T, e made.Engine) *mcpsdk.ClientSession {
	t.Helper()
	serverEnd, clientEnd := mcpsdk.NewInMemoryTransports()
	ss, err := madetest.NewServer(e).Connect(context.Background(), serverEnd, nil)
	if err != nil {
		t.Fatalf("connect server: %v", err)
	}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "0"}, nil).Connect(context.Background(), clientEnd, nil)
	if err != nil {
		t.Fatalf("connect client: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// callRaw sends raw JSON arguments to tool.
func callRaw(t *testing.T, cs *mcpsdk.ClientSession, tool, arguments string) *mcpsdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: tool, Arguments: json.RawMessage(arguments)})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

func resultText(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestInitialize(t *testing.T) {
	got := rawSession(t, &recorder{}).InitializeResult()
	if got.ProtocolVersion != "2024-11-05" {
		t.Errorf("protocolVersion = %q, want 2024-11-05", got.ProtocolVersion)
	}
	if got.ServerInfo == nil || got.ServerInfo.Name != "underpass-made-mcp" || got.ServerInfo.Version != "0.1.6" {
		t.Errorf("serverInfo = %+v, want underpass-made-mcp 0.1.6", got.ServerInfo)
	}
	if got.Capabilities == nil || got.Capabilities.Tools == nil {
		t.Errorf("capabilities = %+v, want tools", got.Capabilities)
	}
}

func TestToolsList(t *testing.T) {
	want := map[string]struct{ required, properties []string }{
		"made_publish_ceremony_definition": {[]string{"definition_yaml"}, []string{"definition_yaml"}},
		"made_start_published_ceremony": {
			[]string{"ceremony", "version", "actor_id", "actor_kind"},
			[]string{"actor_id", "actor_kind", "ceremony", "ceremony_id", "context", "version"},
		},
		"made_get_ceremony_instance":   {[]string{"ceremony_id"}, []string{"ceremony_id"}},
		"made_list_ceremony_instances": {nil, nil},
		"made_claim_ceremony_step": {
			[]string{"ceremony_id", "step_id", "actor_kind"},
			[]string{"actor_kind", "ceremony_id", "idempotency_key", "lease_owner_id", "lease_ttl_ms", "step_id"},
		},
		"made_complete_ceremony_step": {
			[]string{"ceremony_id", "step_id", "actor_kind", "status"},
			[]string{"actor_kind", "ceremony_id", "error", "output", "status", "step_id"},
		},
		"made_apply_ceremony_transition": {[]string{"ceremony_id", "trigger", "actor_kind"}, []string{"actor_kind", "ceremony_id", "trigger"}},
		"made_approve_ceremony_guard": {
			[]string{"ceremony_id", "guard_name", "role_id", "role_kind"},
			[]string{"ceremony_id", "guard_name", "role_id", "role_kind"},
		},
		"made_defer_ceremony_guard": {
			[]string{"ceremony_id", "guard_name", "role_id", "role_kind", "statement", "reason", "reconsider_when"},
			[]string{"ceremony_id", "guard_name", "reason", "reconsider_when", "role_id", "role_kind", "statement"},
		},
	}
	res, err := rawSession(t, &recorder{}).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	seen := map[string]bool{}
	for _, tool := range res.Tools {
		seen[tool.Name] = true
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatalf("marshal %s schema: %v", tool.Name, err)
		}
		var schema struct {
			Type                 string                     `json:"type"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Required             []string                   `json:"required"`
			Properties           map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("decode %s schema: %v", tool.Name, err)
		}
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties ||
			!slices.Equal(schema.Required, w.required) || !slices.Equal(props, w.properties) || tool.Description == "" {
			t.Errorf("%s: schema %s, description %q; want an object with required %v and properties %v", tool.Name, raw, tool.Description, w.required, w.properties)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("tool %s not listed", name)
		}
	}
}

// TestArgumentMessages sends malformed arguments and expects made-mcp's
// messages, before the engine is called.
func TestArgumentMessages(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	const start = `"ceremony":"change_review","version":"1.0","actor_id":"orch","actor_kind":"service"`
	const claim = `"ceremony_id":"c","step_id":"draft","actor_kind":"agent"`
	const complete = `"ceremony_id":"c","step_id":"draft","actor_kind":"agent"`
	const deferral = `"ceremony_id":"c","guard_name":"release_approved","role_id":"REVIEWER","role_kind":"human","statement":"s","reason":"r"`
	tests := []struct {
		name      string
		tool      string
		arguments string
		message   string
	}{
		{"array arguments", "made_get_ceremony_instance", `[1]`, "tools/call.arguments must be an object"},
		{"string arguments", "made_get_ceremony_instance", `"x"`, "tools/call.arguments must be an object"},
		{"null arguments", "made_claim_ceremony_step", `null`, "tools/call.arguments must be an object"},
		{"missing", "made_get_ceremony_instance", `{}`, "missing required field `ceremony_id`"},
		{"not a string", "made_get_ceremony_instance", `{"ceremony_id":5}`, "field `ceremony_id` must be a string"},
		{"blank", "made_get_ceremony_instance", `{"ceremony_id":" \t"}`, "field `ceremony_id` must not be blank"},
		{"ceremony id too long", "made_get_ceremony_instance", `{"ceremony_id":"` + long(257) + `"}`, "field `ceremony_id` exceeds maximum length: 257 > 256"},
		{"ceremony id control", "made_get_ceremony_instance", `{"ceremony_id":"a\u0001b"}`, "field `ceremony_id` contains invalid characters"},

		{"publish missing", "made_publish_ceremony_definition", `{}`, "missing required field `definition_yaml`"},
		{"publish blank", "made_publish_ceremony_definition", `{"definition_yaml":"\n"}`, "field `definition_yaml` must not be blank"},

		{"start blank optional id", "made_start_published_ceremony", `{"ceremony_id":" "}`, "field `ceremony_id` must not be blank"},
		{"start context string", "made_start_published_ceremony", `{"context":"x"}`, "invalid `context`: invalid type: string \"x\", expected a map"},
		{"start context array", "made_start_published_ceremony", `{"context":[1]}`, "invalid `context`: invalid type: sequence, expected a map"},
		{"start context integer", "made_start_published_ceremony", `{"context":5}`, "invalid `context`: invalid type: integer `5`, expected a map"},
		{"start context float", "made_start_published_ceremony", `{"context":1.5}`, "invalid `context`: invalid type: floating point `1.5`, expected a map"},
		{"start context boolean", "made_start_published_ceremony", `{"context":true}`, "invalid `context`: invalid type: boolean `true`, expected a map"},
		{"start context null", "made_start_published_ceremony", `{"context":null}`, "invalid `context`: invalid type: null, expected a map"},
		{"start missing ceremony first", "made_start_published_ceremony", `{"actor_kind":"robot"}`, "missing required field `ceremony`"},
		{"start ceremony name", "made_start_published_ceremony", `{"ceremony":"Change"}`, "field `ceremony_name` contains invalid characters"},
		{"start ceremony name too long", "made_start_published_ceremony", `{"ceremony":"` + long(129) + `"}`, "field `ceremony_name` exceeds maximum length: 129 > 128"},
		{"start missing version", "made_start_published_ceremony", `{"ceremony":"change_review"}`, "missing required field `version`"},
		{"start version characters", "made_start_published_ceremony", `{"ceremony":"change_review","version":"1 0"}`, "field `ceremony_version` contains invalid characters"},
		{"start version too long", "made_start_published_ceremony", `{"ceremony":"change_review","version":"` + long(65) + `"}`, "field `ceremony_version` exceeds maximum length: 65 > 64"},
		{"start missing actor id", "made_start_published_ceremony", `{"ceremony":"change_review","version":"1.0"}`, "missing required field `actor_id`"},
		{"start missing actor kind", "made_start_published_ceremony", `{"ceremony":"change_review","version":"1.0","actor_id":"orch"}`, "missing required field `actor_kind`"},
		{"start unknown actor kind", "made_start_published_ceremony", `{"ceremony":"change_review","version":"1.0","actor_id":"orch","actor_kind":"robot"}`, "`actor_kind` must be human, agent, service or engine, not robot"},
		{"start actor kind is case sensitive", "made_start_published_ceremony", `{` + start[:strings.LastIndex(start, ",")] + `,"actor_kind":"Human"}`, "`actor_kind` must be human, agent, service or engine, not Human"},

		{"claim ttl first", "made_claim_ceremony_step", `{"lease_ttl_ms":-1}`, "field `lease_ttl_ms` must be a non-negative integer"},
		{"claim ttl fraction", "made_claim_ceremony_step", `{` + claim + `,"lease_ttl_ms":1.5}`, "field `lease_ttl_ms` must be a non-negative integer"},
		{"claim ttl integral float", "made_claim_ceremony_step", `{` + claim + `,"lease_ttl_ms":1.0}`, "field `lease_ttl_ms` must be a non-negative integer"},
		{"claim ttl exponent", "made_claim_ceremony_step", `{` + claim + `,"lease_ttl_ms":1e3}`, "field `lease_ttl_ms` must be a non-negative integer"},
		{"claim ttl string", "made_claim_ceremony_step", `{` + claim + `,"lease_ttl_ms":"5"}`, "field `lease_ttl_ms` must be a non-negative integer"},
		{"claim ttl beyond u64", "made_claim_ceremony_step", `{` + claim + `,"lease_ttl_ms":18446744073709551616}`, "field `lease_ttl_ms` must be a non-negative integer"},
		{"claim owner not a string", "made_claim_ceremony_step", `{"lease_owner_id":5}`, "field `lease_owner_id` must be a string"},
		{"claim blank key", "made_claim_ceremony_step", `{"idempotency_key":" "}`, "field `idempotency_key` must not be blank"},
		{"claim missing step", "made_claim_ceremony_step", `{"ceremony_id":"c"}`, "missing required field `step_id`"},
		{"claim step characters", "made_claim_ceremony_step", `{"ceremony_id":"c","step_id":"Draft"}`, "field `step_id` contains invalid characters"},
		{"claim missing actor kind", "made_claim_ceremony_step", `{"ceremony_id":"c","step_id":"draft"}`, "missing required field `actor_kind`"},
		{"claim owner characters", "made_claim_ceremony_step", `{` + claim + `,"lease_owner_id":"w\u0007"}`, "field `lease_owner_id` contains invalid characters"},
		{"claim key characters", "made_claim_ceremony_step", `{` + claim + `,"idempotency_key":"k\u0000k"}`, "field `idempotency_key` contains invalid characters"},

		{"complete missing status first", "made_complete_ceremony_step", `{}`, "missing required field `status`"},
		{"complete unknown status", "made_complete_ceremony_step", `{"status":"done"}`, "`status` must be completed, failed, waiting_for_human or cancelled, not done"},
		{"complete in progress is no result", "made_complete_ceremony_step", `{"status":"in_progress"}`, "`status` must be completed, failed, waiting_for_human or cancelled, not in_progress"},
		{"complete output string", "made_complete_ceremony_step", `{"status":"completed","output":"x"}`, "invalid `output`: invalid type: string \"x\", expected a map"},
		{"complete error not a string", "made_complete_ceremony_step", `{"status":"failed","error":5}`, "field `error` must be a string"},
		{"complete failed without error", "made_complete_ceremony_step", `{"status":"failed"}`, "field `step_result.error_message` must not be empty"},
		{"complete error without failure", "made_complete_ceremony_step", `{"status":"completed","error":"boom"}`, "invariant violated: only failed step results may carry an error message"},
		{"complete error too long", "made_complete_ceremony_step", `{"status":"failed","error":"` + long(2049) + `"}`, "field `step_error_message` exceeds maximum length: 2049 > 2048"},
		{"complete error control", "made_complete_ceremony_step", `{"status":"failed","error":"a\u0000b"}`, "field `step_error_message` contains invalid characters"},
		{"complete missing ceremony id", "made_complete_ceremony_step", `{"status":"completed"}`, "missing required field `ceremony_id`"},
		{"complete unknown actor kind", "made_complete_ceremony_step", `{"status":"completed","ceremony_id":"c","step_id":"draft","actor_kind":"bot"}`, "`actor_kind` must be human, agent, service or engine, not bot"},

		{"apply missing trigger", "made_apply_ceremony_transition", `{"ceremony_id":"c"}`, "missing required field `trigger`"},
		{"apply trigger control", "made_apply_ceremony_transition", `{"ceremony_id":"c","trigger":"a\u0001"}`, "field `transition_trigger` contains invalid characters"},
		{"apply missing actor kind", "made_apply_ceremony_transition", `{"ceremony_id":"c","trigger":"submit"}`, "missing required field `actor_kind`"},

		{"approve guard characters", "made_approve_ceremony_guard", `{"ceremony_id":"c","guard_name":"Release"}`, "field `guard_name` contains invalid characters"},
		{"approve missing role", "made_approve_ceremony_guard", `{"ceremony_id":"c","guard_name":"release_approved"}`, "missing required field `role_id`"},
		{"approve role control", "made_approve_ceremony_guard", `{"ceremony_id":"c","guard_name":"release_approved","role_id":"R\u0001"}`, "field `role_id` contains invalid characters"},
		{"approve unknown role kind", "made_approve_ceremony_guard", `{"ceremony_id":"c","guard_name":"release_approved","role_id":"REVIEWER","role_kind":"x"}`, "`role_kind` must be human, agent, service or engine, not x"},

		{"defer missing statement", "made_defer_ceremony_guard", `{"ceremony_id":"c","guard_name":"g"}`, "missing required field `statement`"},
		{"defer missing reason", "made_defer_ceremony_guard", `{"ceremony_id":"c","guard_name":"g","statement":"s"}`, "missing required field `reason`"},
		{"defer missing conditions", "made_defer_ceremony_guard", `{` + deferral + `}`, "missing required field `reconsider_when`"},
		{"defer conditions not an array", "made_defer_ceremony_guard", `{` + deferral + `,"reconsider_when":"x"}`, "field `reconsider_when` must be an array of strings"},
		{"defer condition not a string", "made_defer_ceremony_guard", `{` + deferral + `,"reconsider_when":[1]}`, "field `reconsider_when` must contain only strings"},
		{"defer blank condition", "made_defer_ceremony_guard", `{` + deferral + `,"reconsider_when":[" "]}`, "field `reconsider_when` must not contain blank strings"},
		{"defer no conditions", "made_defer_ceremony_guard", `{` + deferral + `,"reconsider_when":[]}`, "collection `ceremony_guard_deferral.reconsider_when` must contain at least one element"},
		{"defer statement too long", "made_defer_ceremony_guard", `{"ceremony_id":"c","guard_name":"g","statement":"` + long(4097) + `","reason":"r","reconsider_when":["w"]}`, "field `ceremony_guard_deferral.statement` exceeds maximum length: 4097 > 4096"},
		{"defer reason control", "made_defer_ceremony_guard", `{"ceremony_id":"c","guard_name":"g","statement":"s","reason":"r\u0001r","reconsider_when":["w"]}`, "field `ceremony_guard_deferral.reason` contains invalid characters"},
		{"defer condition too long", "made_defer_ceremony_guard", `{` + deferral + `,"reconsider_when":["` + long(1025) + `"]}`, "field `ceremony_guard_deferral.reconsider_when` exceeds maximum length: 1025 > 1024"},
		{"defer missing role after content", "made_defer_ceremony_guard", `{"ceremony_id":"c","guard_name":"g","statement":"s","reason":"r","reconsider_when":["w"]}`, "missing required field `role_id`"},

		{"unknown tool", "made_run_ceremony", `{}`, "embedded backend: unsupported tool `made_run_ceremony`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			res := callRaw(t, rawSession(t, r), tt.tool, tt.arguments)
			if !res.IsError || resultText(res) != tt.message || res.StructuredContent != nil {
				t.Errorf("result = isError %v, text %q, structured %v; want isError with %q", res.IsError, resultText(res), res.StructuredContent, tt.message)
			}
			if calls := r.received(); len(calls) != 0 {
				t.Errorf("the engine was called: %+v", calls)
			}
		})
	}
}

// TestArgumentsReachEngine checks what the engine is handed for valid
// arguments: trimmed strings, milliseconds as durations, numbers as
// float64, extra arguments ignored.
func TestArgumentsReachEngine(t *testing.T) {
	tests := []struct {
		name      string
		tool      string
		arguments string
		want      any
	}{
		{"publish trims", "made_publish_ceremony_definition", `{"definition_yaml":"\nname: x\n\n"}`, publishCall("name: x")},
		{
			"start", "made_start_published_ceremony",
			`{"ceremony":" change_review ","version":"1.0","actor_id":" orch ","actor_kind":"service","ceremony_id":" cr-1 ","context":{"n":3,"nested":{"a":[1,"x"]}},"extra":true}`,
			made.StartRequest{
				Ceremony: "change_review", Version: "1.0", CeremonyID: "cr-1", ActorID: "orch", ActorKind: made.ActorService,
				Context: map[string]any{"n": float64(3), "nested": map[string]any{"a": []any{float64(1), "x"}}},
			},
		},
		{
			"start defaults", "made_start_published_ceremony",
			`{"ceremony":"change_review","version":"1.0","actor_id":"orch","actor_kind":"engine"}`,
			made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "orch", ActorKind: made.ActorEngine},
		},
		{"get", "made_get_ceremony_instance", `{"ceremony_id":"cr-1"}`, getCall("cr-1")},
		{"list ignores arguments", "made_list_ceremony_instances", `[1]`, listCall{}},
		{
			"claim", "made_claim_ceremony_step",
			`{"ceremony_id":"cr-1","step_id":"draft","actor_kind":"agent","lease_owner_id":"wf","idempotency_key":"k1","lease_ttl_ms":1500}`,
			made.ClaimRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, LeaseOwnerID: "wf", IdempotencyKey: "k1", LeaseTTL: 1500 * time.Millisecond},
		},
		{
			"claim zero ttl", "made_claim_ceremony_step",
			`{"ceremony_id":"cr-1","step_id":"draft","actor_kind":"agent","lease_ttl_ms":0}`,
			made.ClaimRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent},
		},
		{
			"claim huge ttl saturates", "made_claim_ceremony_step",
			`{"ceremony_id":"cr-1","step_id":"draft","actor_kind":"agent","lease_ttl_ms":18446744073709551615}`,
			made.ClaimRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, LeaseTTL: time.Duration(math.MaxInt64)},
		},
		{
			"complete failed", "made_complete_ceremony_step",
			`{"ceremony_id":"cr-1","step_id":"draft","actor_kind":"agent","status":"failed","error":" CI red ","output":{"tries":2}}`,
			made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepFailed, Error: "CI red", Output: map[string]any{"tries": float64(2)}},
		},
		{
			"complete cancelled", "made_complete_ceremony_step",
			`{"ceremony_id":"cr-1","step_id":"draft","actor_kind":"human","status":"cancelled"}`,
			made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorHuman, Status: made.StepCancelled},
		},
		{
			"apply", "made_apply_ceremony_transition",
			`{"ceremony_id":"cr-1","trigger":"submit","actor_kind":"service"}`,
			made.TransitionRequest{CeremonyID: "cr-1", Trigger: "submit", ActorKind: made.ActorService},
		},
		{
			"approve", "made_approve_ceremony_guard",
			`{"ceremony_id":"cr-1","guard_name":"release_approved","role_id":"REVIEWER","role_kind":"human"}`,
			made.ApproveRequest{CeremonyID: "cr-1", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman},
		},
		{
			"defer keeps newlines inside prose", "made_defer_ceremony_guard",
			`{"ceremony_id":"cr-1","guard_name":"release_approved","role_id":"REVIEWER","role_kind":"human","statement":"not today","reason":"line 1\nline 2","reconsider_when":[" legal ","ci\tgreen"]}`,
			made.DeferRequest{
				CeremonyID: "cr-1", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman,
				Statement: "not today", Reason: "line 1\nline 2", ReconsiderWhen: []string{"legal", "ci\tgreen"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			res := callRaw(t, rawSession(t, r), tt.tool, tt.arguments)
			if res.IsError {
				t.Fatalf("isError: %s", resultText(res))
			}
			if calls := r.received(); len(calls) != 1 || !reflect.DeepEqual(calls[0], tt.want) {
				t.Errorf("engine calls = %#v\nwant [%#v]", calls, tt.want)
			}
		})
	}
}

func TestResults(t *testing.T) {
	digest := "d1"
	tests := []struct {
		name      string
		engine    *recorder
		tool      string
		arguments string
		isError   bool
		text      string // exact text content; empty: the pretty form of the structured content
		payload   string // structured content as JSON; empty: none
	}{
		{
			name:   "published",
			engine: &recorder{published: made.Published{Outcome: "published", Ceremony: "change_review", Version: "1.0", Digest: "d1"}},
			tool:   "made_publish_ceremony_definition", arguments: `{"definition_yaml":"x"}`,
			text:    "{\n  \"ceremony\": \"change_review\",\n  \"digest\": \"d1\",\n  \"outcome\": \"published\",\n  \"version\": \"1.0\"\n}",
			payload: `{"ceremony":"change_review","digest":"d1","outcome":"published","version":"1.0"}`,
		},
		{
			name:   "version occupied is a success",
			engine: &recorder{err: &made.ConflictError{Ceremony: "change_review", Version: "1.0", PublishedDigest: "d1", OfferedDigest: "d2"}},
			tool:   "made_publish_ceremony_definition", arguments: `{"definition_yaml":"x"}`,
			payload: `{"offered_digest":"d2","outcome":"version_occupied","published_digest":"d1"}`,
		},
		{
			name:   "engine error",
			engine: &recorder{err: &made.Error{Kind: made.KindLeaseActive, Message: "failed to claim ceremony step: invariant violated: step lease is still active"}},
			tool:   "made_claim_ceremony_step", arguments: `{"ceremony_id":"c","step_id":"s","actor_kind":"agent"}`,
			isError: true, text: "failed to claim ceremony step: invariant violated: step lease is still active",
		},
		{
			name:   "engine sentinel",
			engine: &recorder{err: made.ErrNotFound},
			tool:   "made_get_ceremony_instance", arguments: `{"ceremony_id":"c"}`,
			isError: true, text: "not_found",
		},
		{
			name:   "other engine error",
			engine: &recorder{err: errors.New("disk full")},
			tool:   "made_get_ceremony_instance", arguments: `{"ceremony_id":"c"}`,
			isError: true, text: "disk full",
		},
		{
			name: "projection lists are never null",
			engine: &recorder{instance: made.Instance{
				CeremonyID: "c", CurrentState: "OPEN", BoundDefinitionDigest: &digest,
				Steps:       []made.Step{{StepID: "s", StateID: "OPEN", Status: made.StepPending, Attempt: 1}},
				Transitions: []made.Transition{{Trigger: "t", ToState: "DONE"}},
				Context:     map[string]any{"note": "<b>&"},
			}},
			tool: "made_get_ceremony_instance", arguments: `{"ceremony_id":"c"}`,
			payload: `{"bounces":0,"bound_definition_digest":"d1","ceremony_id":"c","completed":false,"context":{"note":"<b>&"},
				"current_state":"OPEN","definition_name":"","definition_version":"","guard_deferrals":[],"interventions":[],
				"next_step_id":null,"open_intervention_ids":[],"participant_bindings":[],"reasons":[],
				"steps":[{"attempt":1,"error":null,"iteration":0,"output":{},"repeat_exhausted":false,"state_id":"OPEN","status":"pending","step_id":"s"}],
				"transition_count":0,"transitions":[{"enabled":false,"guards":[],"to_state":"DONE","trigger":"t"}],"waiting_for_human":[]}`,
		},
		{
			name: "list",
			engine: &recorder{entries: []made.ListEntry{
				{CeremonyID: "a", Reason: "failed to load ceremony definition: not found: ceremony_definition"},
				{CeremonyID: "b", Instance: &made.Instance{CeremonyID: "b", CurrentState: "OPEN", TransitionCount: 2, Bounces: 1, StateIterations: map[string]int{"OPEN": 2}}},
			}},
			tool: "made_list_ceremony_instances", arguments: `{}`,
			payload: `{"count":2,"instances":[
				{"ceremony_id":"a","reason":"failed to load ceremony definition: not found: ceremony_definition","rehydratable":false},
				{"bounces":1,"bound_definition_digest":null,"ceremony_id":"b","completed":false,"context":{},"current_state":"OPEN",
				 "definition_name":"","definition_version":"","guard_deferrals":[],"interventions":[],"next_step_id":null,
				 "open_intervention_ids":[],"participant_bindings":[],"reasons":[],"state_iterations":{"OPEN":2},"steps":[],
				 "transition_count":2,"transitions":[],"waiting_for_human":[]}]}`,
		},
		{
			name: "empty list", engine: &recorder{}, tool: "made_list_ceremony_instances", arguments: `{}`,
			payload: `{"count":0,"instances":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := callRaw(t, rawSession(t, tt.engine), tt.tool, tt.arguments)
			if res.IsError != tt.isError {
				t.Fatalf("isError = %v (%s), want %v", res.IsError, resultText(res), tt.isError)
			}
			if tt.isError {
				if resultText(res) != tt.text || res.StructuredContent != nil {
					t.Errorf("error result = %q, structured %v; want %q and no structured content", resultText(res), res.StructuredContent, tt.text)
				}
				return
			}
			var want any
			if err := json.Unmarshal([]byte(tt.payload), &want); err != nil {
				t.Fatalf("test payload: %v", err)
			}
			if !reflect.DeepEqual(res.StructuredContent, want) {
				got, _ := json.Marshal(res.StructuredContent)
				t.Errorf("structuredContent = %s\nwant %s", got, tt.payload)
			}
			// The text is the pretty, key-sorted JSON of the payload, HTML unescaped.
			wantText := tt.text
			if wantText == "" {
				var b strings.Builder
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(want); err != nil {
					t.Fatalf("indent payload: %v", err)
				}
				wantText = strings.TrimSuffix(b.String(), "\n")
			}
			if resultText(res) != wantText {
				t.Errorf("text = %s\nwant %s", resultText(res), wantText)
			}
		})
	}
}

// TestServe checks the in-memory wiring: the mcp.Client Serve returns
// reaches the engine and reads its errors' kinds.
func TestServe(t *testing.T) {
	r := &recorder{instance: made.Instance{CeremonyID: "cr-1", CurrentState: "OPEN"}}
	c := madetest.Serve(t, r)
	in, err := c.Get(context.Background(), "cr-1")
	if err != nil || in.CeremonyID != "cr-1" || in.CurrentState != "OPEN" {
		t.Fatalf("Get = %+v, %v", in, err)
	}
	r.mu.Lock()
	r.err = &made.Error{Kind: made.KindNotFound, Message: "failed to load ceremony instance: not found: ceremony_instance"}
	r.mu.Unlock()
	if _, err := c.Get(context.Background(), "cr-2"); !errors.Is(err, made.ErrNotFound) {
		t.Errorf("Get of an unknown instance = %v, want not found", err)
	}
}

// TestConformanceOverMCP runs the conformance suite against the embedded
// engine as made-mcp's tools serve it: each engine lives in its own
// directory behind NewServer, over in-memory MCP transports, and the suite
// drives it through mcp.Client.
func TestConformanceOverMCP(t *testing.T) {
	madetest.Run(t, func(t *testing.T) (made.Engine, *madetest.Clock) {
		clock := madetest.NewClock(time.Date(2026, 6, 6, 12, 0, 0, 0, time.UTC))
		e, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now})
		if err != nil {
			t.Fatalf("open embedded engine: %v", err)
		}
		t.Cleanup(func() {
			if err := e.Close(); err != nil {
				t.Errorf("close embedded engine: %v", err)
			}
		})
		return madetest.Serve(t, e), clock
	})
}
