package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/made/madetest"
	"github.com/underpass-ai/axlr/plugins"
	"github.com/underpass-ai/axlr/workflows"
)

// madeWrites are the tools of the in-test made-mcp that change MADE, each
// with the verb its refusal names.
var madeWrites = map[string]string{
	"made_publish_ceremony_definition": "publishes",
	"made_start_published_ceremony":    "starts",
	"made_claim_ceremony_step":         "claims",
	"made_complete_ceremony_step":      "completes",
	"made_apply_ceremony_transition":   "transitions",
	"made_approve_ceremony_guard":      "approves",
	"made_defer_ceremony_guard":        "defers",
}

// TestMADEPluginReadSurface: a MADE registered as an MCP plugin offers the
// model its read verbs only (decision D6). Its write verbs are neither in
// the turn's tools nor in axlr_tools' answer; a call of one, through
// axlr_call_tool or by its alias, is refused with the console's words and
// never reaches MADE; a read verb reaches it and returns its answer. MADE
// is known by its tools' names, so the plugin's id does not matter.
func TestMADEPluginReadSurface(t *testing.T) {
	for _, id := range []string{"made", "ledger"} {
		t.Run(id, func(t *testing.T) { testMADEPluginReadSurface(t, id) })
	}
}

func testMADEPluginReadSurface(t *testing.T, id string) {
	ctx := context.Background()
	set, eng := madePlugin(t, id)

	claim := `{"ceremony_id": "cr-1", "step_id": "draft", "actor_kind": "agent"}`
	var mu sync.Mutex
	var offered []string
	f := newFixture(t, func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		for _, tool := range req.Tools {
			offered = append(offered, tool.Name)
		}
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{
			{ID: "list", Name: ToolsTool, Arguments: `{}`},
			{ID: "w1", Name: CallToolTool, Arguments: `{"tool": "` + id + `/made_claim_ceremony_step", "arguments": ` + claim + `}`},
			{ID: "w2", Name: id + "__made_claim_ceremony_step", Arguments: claim},
			{ID: "w3", Name: CallToolTool, Arguments: `{"tool": "` + id + `__made_apply_ceremony_transition", "arguments": {"ceremony_id": "cr-1", "trigger": "cancel", "actor_kind": "agent"}}`},
			{ID: "r1", Name: CallToolTool, Arguments: `{"tool": "` + id + `/made_get_ceremony_instance", "arguments": {"ceremony_id": "cr-1"}}`},
			{ID: "r2", Name: id + "__made_get_ceremony_instance", Arguments: `{"ceremony_id": "cr-1"}`},
		}}
	})
	f.acts.Hosts = &HostTools{Plugins: set, Log: zerolog.Nop()}

	begun := f.begin("what state is cr-1 in?")
	var hosts []string
	for _, h := range begun.HostTools {
		hosts = append(hosts, h.Name)
	}
	want := []string{id + "__made_get_ceremony_instance", id + "__made_list_ceremony_instances", ToolsTool, CallToolTool}
	if !slices.Equal(hosts, want) {
		t.Errorf("host tools %v, want %v: MADE's write verbs must not be offered", hosts, want)
	}

	res, err := call[workflows.ModelRequestInput, workflows.ModelRequestResult](f, func(s *Session) any { return s.ModelRequest },
		workflows.ModelRequestInput{SessionID: f.id, Revision: begun.Revision, Model: "m", Tools: append(slices.Clone(workflows.LocalTools), hosts...)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range offered {
		if _, write := madeWrites[strings.TrimPrefix(name, id+"__")]; write {
			t.Errorf("the model was offered %s", name)
		}
	}
	if !slices.Contains(offered, id+"__made_get_ceremony_instance") {
		t.Errorf("the model was offered %v, without %s__made_get_ceremony_instance", offered, id)
	}

	calls := map[string]workflows.ModelCall{}
	for _, c := range res.Calls {
		calls[c.CallID] = c
	}
	run := func(id string) (workflows.ToolCallResult, string) {
		t.Helper()
		out, err := f.tool(calls[id])
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		log, err := f.acts.Store.Log(f.id)
		if err != nil {
			t.Fatal(err)
		}
		ev, ok := log.ByKey(keyTool(calls[id].Key))
		if !ok {
			t.Fatalf("%s: no result saved", id)
		}
		d, err := decode[messageData](ev)
		if err != nil {
			t.Fatal(err)
		}
		return out, d.Message.Content
	}

	_, listing := run("list")
	var catalogue struct {
		Tools []struct {
			Canonical string `json:"canonical"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(listing), &catalogue); err != nil {
		t.Fatalf("axlr_tools answered %s: %v", listing, err)
	}
	var listed []string
	for _, tool := range catalogue.Tools {
		listed = append(listed, tool.Canonical)
	}
	if want := []string{id + "/made_get_ceremony_instance", id + "/made_list_ceremony_instances"}; !slices.Equal(listed, want) {
		t.Errorf("axlr_tools lists %v, want %v", listed, want)
	}

	for id, tool := range map[string]string{"w1": "made_claim_ceremony_step", "w2": "made_claim_ceremony_step", "w3": "made_apply_ceremony_transition"} {
		refusal := "the console runs workflows: " + tool + " " + madeWrites[tool] + ", a change to MADE that only axlrd makes; the model reads MADE through made_get_*, made_list_*"
		if c := calls[id]; !strings.HasPrefix(c.Invalid, refusal) {
			t.Errorf("%s is invalid for %q, want the refusal %q…", id, c.Invalid, refusal)
		}
		// The workflow records an invalid call without running it; run
		// anyway, as a call inspected by an older axlrd would be.
		out, content := run(id)
		if out.Status != contract.CallFailed || !strings.HasPrefix(content, refusal) {
			t.Errorf("%s ran: %s %q, want it refused with %q…", id, out.Status, content, refusal)
		}
	}
	in, err := eng.Get(ctx, "cr-1")
	if err != nil {
		t.Fatal(err)
	}
	if step, _ := in.Step("draft"); in.CurrentState != "DRAFTING" || step.Status != made.StepPending {
		t.Fatalf("MADE holds cr-1 in %s with draft %s: a refused call reached it", in.CurrentState, step.Status)
	}

	for _, id := range []string{"r1", "r2"} {
		if c := calls[id]; c.Invalid != "" {
			t.Fatalf("%s is invalid: %s", id, c.Invalid)
		}
		out, content := run(id)
		var got struct {
			StructuredContent made.Instance `json:"structured_content"`
			IsError           bool          `json:"is_error"`
		}
		if err := json.Unmarshal([]byte(content), &got); err != nil {
			t.Fatalf("%s answered %s: %v", id, content, err)
		}
		if out.Status != contract.CallCompleted || got.IsError || got.StructuredContent.CeremonyID != "cr-1" || got.StructuredContent.CurrentState != "DRAFTING" {
			t.Errorf("%s: %s %s, want MADE's projection of cr-1 in DRAFTING", id, out.Status, content)
		}
	}
}

// madePlugin is the embedded MADE, holding instance cr-1 of change_review,
// served by the in-test made-mcp and registered as the plugin id.
func madePlugin(t *testing.T, id string) (*plugins.Set, made.Engine) {
	t.Helper()
	ctx := context.Background()
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if _, err := eng.Publish(ctx, []byte(madetest.ChangeReviewYAML)); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.StartPublished(ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: "cr-1",
		ActorID: "axlrd", ActorKind: made.ActorService, Context: map[string]any{"change_ref": "PR-1"}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return madetest.NewServer(eng) }, nil))
	t.Cleanup(srv.Close)
	manifest := filepath.Join(t.TempDir(), "made.json")
	if err := os.WriteFile(manifest, fmt.Appendf(nil, `{"manifest_version": 1, "id": %q, "url": %q, "allow_tools": ["*"]}`, id, srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := plugins.ReadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	set, err := plugins.NewSet([]plugins.Plugin{{Manifest: m}}, plugins.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set, eng
}

// TestPluginToolsAfterRestart: a turn begun by an earlier axlrd names a
// plugin's tool in its model request and in the call that follows; a new
// axlrd, which has not listed the plugins yet, offers and runs it instead
// of calling it unknown.
func TestPluginToolsAfterRestart(t *testing.T) {
	set, _ := madePlugin(t, "made")
	f := newFixture(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "r1", Name: "made__made_get_ceremony_instance", Arguments: `{"ceremony_id": "cr-1"}`}}}
	})
	f.acts.Hosts = &HostTools{Plugins: set, Log: zerolog.Nop()}
	begun := f.begin("what state is cr-1 in?")
	var hosts []string
	for _, h := range begun.HostTools {
		hosts = append(hosts, h.Name)
	}
	restart := func() { f.acts.Hosts = &HostTools{Plugins: set, Log: zerolog.Nop()} }
	restart()
	res, err := call[workflows.ModelRequestInput, workflows.ModelRequestResult](f, func(s *Session) any { return s.ModelRequest },
		workflows.ModelRequestInput{SessionID: f.id, Revision: begun.Revision, Model: "m", Tools: append(slices.Clone(workflows.LocalTools), hosts...)})
	if err != nil {
		t.Fatalf("the model request after a restart: %v", err)
	}
	if len(res.Calls) != 1 || res.Calls[0].Invalid != "" || !res.Calls[0].Host {
		t.Fatalf("the call after a restart: %+v", res.Calls)
	}
	restart()
	out, err := f.tool(res.Calls[0])
	if err != nil || out.Status != contract.CallCompleted {
		t.Fatalf("the plugin's call after a restart: %+v %v", out, err)
	}
}
