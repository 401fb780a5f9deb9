package kmptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/kmptest"
)

// stub is a kmp.Store that records the requests it is handed and answers
// with canned results, or err.
type stub struct {
	mu      sync.Mutex
	calls   []any
	err     error
	wake    kmp.WakeResult
	write   kmp.WriteResult
	ask     kmp.AskResult
	inspect kmp.InspectResult
	list    kmp.ListResult
}

func (s *stub) note(req any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, req)
	return s.err
}

func (s *stub) received() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *stub) Wake(_ context.Context, req kmp.WakeRequest) (kmp.WakeResult, error) {
	return s.wake, s.note(req)
}

func (s *stub) Write(_ context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	return s.write, s.note(req)
}

func (s *stub) Ask(_ context.Context, req kmp.AskRequest) (kmp.AskResult, error) {
	return s.ask, s.note(req)
}

func (s *stub) Inspect(_ context.Context, req kmp.InspectRequest) (kmp.InspectResult, error) {
	return s.inspect, s.note(req)
}

func (s *stub) List(_ context.Context, req kmp.ListRequest) (kmp.ListResult, error) {
	return s.list, s.note(req)
}

// rawSession connects a plain go-sdk client to NewServer(s, naming).
func rawSession(t *testing.T, s kmp.Store, naming string) *mcpsdk.ClientSession {
	t.Helper()
	serverEnd, clientEnd := mcpsdk.NewInMemoryTransports()
	ss, err := kmptest.NewServer(s, naming).Connect(context.Background(), serverEnd, nil)
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

// generic is v as a decoded JSON value.
func generic(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return out
}

// wantSuccess checks a success envelope: the summary as text and
// structuredContent equal to want.
func wantSuccess(t *testing.T, res *mcpsdk.CallToolResult, summary string, want any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("isError with %q", resultText(res))
	}
	if len(res.Content) != 1 || resultText(res) != summary {
		t.Errorf("content = %d blocks %q, want one text block %q", len(res.Content), resultText(res), summary)
	}
	if got, w := generic(t, res.StructuredContent), generic(t, want); !reflect.DeepEqual(got, w) {
		t.Errorf("structuredContent = %v\nwant %v", got, w)
	}
}

// wantFailure checks a failure envelope carrying code and a message
// holding says.
func wantFailure(t *testing.T, res *mcpsdk.CallToolResult, code kmp.Code, says string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("isError false, want a %s failure; structuredContent %v", code, res.StructuredContent)
	}
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(json.RawMessage(mustJSON(t, res.StructuredContent)), &env); err != nil {
		t.Fatalf("structuredContent %v: %v", res.StructuredContent, err)
	}
	if env.Error.Code != string(code) || !strings.Contains(env.Error.Message, says) {
		t.Errorf("error = {%s %q}, want {%s …%q…}", env.Error.Code, env.Error.Message, code, says)
	}
	if resultText(res) != env.Error.Message {
		t.Errorf("text %q, want the message %q", resultText(res), env.Error.Message)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return string(raw)
}

func TestInitializeAndTools(t *testing.T) {
	for _, tt := range []struct {
		naming, version string
		tools           []string
	}{
		{"kmp", "0.24.0", []string{"kmp_ask", "kmp_inspect", "kmp_rewind", "kmp_wake", "kmp_write_memory"}},
		{"kernel", "0.1.11", []string{"kernel_ask", "kernel_inspect", "kernel_rewind", "kernel_wake", "kernel_write_memory"}},
	} {
		t.Run(tt.naming, func(t *testing.T) {
			cs := rawSession(t, &stub{}, tt.naming)
			init := cs.InitializeResult()
			if init.ProtocolVersion != "2024-11-05" {
				t.Errorf("protocolVersion = %q, want 2024-11-05", init.ProtocolVersion)
			}
			if init.ServerInfo == nil || init.ServerInfo.Name != "underpass-kmp-mcp" || init.ServerInfo.Version != tt.version {
				t.Errorf("serverInfo = %+v, want underpass-kmp-mcp %s", init.ServerInfo, tt.version)
			}
			var names []string
			for tool, err := range cs.Tools(context.Background(), nil) {
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.tools) {
				t.Errorf("tools = %v, want %v", names, tt.tools)
			}
		})
	}
}

func TestNewServerRefusesOtherNamings(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"made"`) {
			t.Errorf("NewServer with naming made: recovered %v, want a panic naming it", r)
		}
	}()
	kmptest.NewServer(&stub{}, "made")
}

// TestEnvelopeBytes reads the tools/call results off the wire: isError is
// there when false too.
func TestEnvelopeBytes(t *testing.T) {
	s := &stub{wake: kmp.WakeResult{Summary: "1 line", Wake: kmp.Wake{Objective: "fix"}}}
	serverEnd, clientEnd := mcpsdk.NewInMemoryTransports()
	ss, err := kmptest.NewServer(s, "kmp").Connect(context.Background(), serverEnd, nil)
	if err != nil {
		t.Fatalf("connect server: %v", err)
	}
	conn, err := clientEnd.Connect(context.Background())
	if err != nil {
		t.Fatalf("connect raw client: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		_ = ss.Wait()
	})
	ctx := context.Background()
	n := 0
	call := func(method, params string) json.RawMessage {
		t.Helper()
		n++
		id, err := jsonrpc.MakeID(string(rune('0' + n)))
		if err != nil {
			t.Fatalf("id: %v", err)
		}
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}); err != nil {
			t.Fatalf("write %s: %v", method, err)
		}
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read %s answer: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.Error != nil {
			t.Fatalf("%s answered %#v", method, msg)
		}
		return resp.Result
	}
	call("initialize", `{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`)
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("write initialized: %v", err)
	}

	got := call("tools/call", `{"name":"kmp_wake","arguments":{"about":"ws:x"}}`)
	want := `{"content":[{"type":"text","text":"1 line"}],"structuredContent":` + mustJSON(t, s.wake) + `,"isError":false}`
	if string(got) != want {
		t.Errorf("success result\n%s\nwant\n%s", got, want)
	}
	s.mu.Lock()
	s.err = kmp.Errorf(kmp.CodeNotFound, "nothing about ws:x")
	s.mu.Unlock()
	got = call("tools/call", `{"name":"kmp_wake","arguments":{"about":"ws:x"}}`)
	want = `{"content":[{"type":"text","text":"nothing about ws:x"}],"structuredContent":{"error":{"code":"not_found","message":"nothing about ws:x"}},"isError":true}`
	if string(got) != want {
		t.Errorf("failure result\n%s\nwant\n%s", got, want)
	}
}

func TestVerbs(t *testing.T) {
	s := &stub{
		wake:    kmp.WakeResult{Summary: "2 lines", Wake: kmp.Wake{Objective: "fix", CurrentState: []string{"ws:x:entry:1 a"}}},
		write:   kmp.WriteResult{Accepted: true, Status: kmp.StatusCommitted, LocalRefs: map[string]string{"a": "ws:x:entry:2"}, Summary: "1 memory"},
		ask:     kmp.AskResult{Answer: "yes", Because: []kmp.Because{{Claim: "a", Ref: "ws:x:entry:1"}}},
		inspect: kmp.InspectResult{Summary: "entry", Object: kmp.Object{Ref: "ws:x:entry:1", Kind: "observation", Text: "a"}},
		list:    kmp.ListResult{Page: kmp.Page{Total: 0}},
	}
	cs := rawSession(t, s, "kmp")
	strict := false
	tests := []struct {
		tool, args string
		request    any
		summary    string
		result     any
	}{
		{"kmp_wake", `{"about":"ws:x","intent":"fix","role":"coder","budget":{"max_bytes":600,"tokens":100,"max_entries":5}}`,
			kmp.WakeRequest{About: "ws:x", Intent: "fix", Role: "coder", Budget: &kmp.Budget{MaxBytes: 600, Tokens: 100, MaxEntries: 5}},
			"2 lines", s.wake},
		{"kmp_write_memory", `{"about":"ws:x","actor":"axlr","source_kind":"agent","labels":{"job":["j1"]},"idempotency_key":"k",
			"memories":[{"id":"a","kind":"observation","summary":"s","evidence":"e","labels":{"step":["1"]},
			  "connect_to":[{"ref":"ws:x:entry:1","rel":"supports","class":"evidential","why":"w","evidence":"e","confidence":"low"}]}],
			"options":{"dry_run":false,"strict":false}}`,
			kmp.WriteRequest{About: "ws:x", Actor: "axlr", SourceKind: "agent", Labels: map[string][]string{"job": {"j1"}}, IdempotencyKey: "k",
				Memories: []kmp.Memory{{ID: "a", Kind: "observation", Summary: "s", Evidence: "e", Labels: map[string][]string{"step": {"1"}},
					ConnectTo: []kmp.Link{{Ref: "ws:x:entry:1", Rel: "supports", Class: "evidential", Why: "w", Evidence: "e", Confidence: "low"}}}},
				Options: &kmp.WriteOptions{Strict: &strict}},
			"1 memory", s.write},
		{"kmp_write_memory", `{"about":"ws:x","actor":"axlr","relations":[{"from":"ws:x:entry:1","to":"ws:x:entry:2","rel":"supports","why":"w","evidence":"e"}]}`,
			kmp.WriteRequest{About: "ws:x", Actor: "axlr", Relations: []kmp.Relation{{From: "ws:x:entry:1", To: "ws:x:entry:2", Rel: "supports", Why: "w", Evidence: "e"}}},
			"1 memory", s.write},
		{"kmp_ask", `{"about":"ws:x","question":"a?","budget":{"max_bytes":700}}`,
			kmp.AskRequest{About: "ws:x", Question: "a?", Budget: &kmp.Budget{MaxBytes: 700}},
			"yes", s.ask},
		{"kmp_inspect", `{"about":"ws:x","ref":"ws:x:entry:1"}`,
			kmp.InspectRequest{About: "ws:x", Ref: "ws:x:entry:1"},
			"entry", s.inspect},
		{"kmp_rewind", `{"about":"ws:x","from":{"time":"2026-12-03T12:00:00.123Z"},"limit":{"entries":7}}`,
			kmp.ListRequest{About: "ws:x", Limit: 7},
			"0 of 0 entries of ws:x, newest first", map[string]any{"entries": []any{}, "page": s.list.Page}},
		{"kmp_rewind", `{"about":"ws:x","from":{"time":"2026-12-03T12:00:00Z"}}`,
			kmp.ListRequest{About: "ws:x"},
			"0 of 0 entries of ws:x, newest first", map[string]any{"entries": []any{}, "page": s.list.Page}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := callRaw(t, cs, tt.tool, tt.args)
			wantSuccess(t, res, tt.summary, tt.result)
			calls := s.received()
			if len(calls) == 0 || !reflect.DeepEqual(calls[len(calls)-1], tt.request) {
				t.Errorf("store received %#v\nwant %#v", calls[len(calls)-1:], tt.request)
			}
		})
	}
}

func TestStoreErrors(t *testing.T) {
	s := &stub{}
	cs := rawSession(t, s, "kmp")
	for _, tt := range []struct {
		err  error
		code kmp.Code
		says string
	}{
		{kmp.Errorf(kmp.CodeInvalid, "about is empty"), kmp.CodeInvalid, "about is empty"},
		{kmp.Errorf(kmp.CodeNotFound, "no memory of ws:x"), kmp.CodeNotFound, "no memory of ws:x"},
		{kmp.Errorf(kmp.CodeConflict, "key k reused"), kmp.CodeConflict, "key k reused"},
		{kmp.Errorf(kmp.CodeUnavailable, "store locked"), kmp.CodeUnavailable, "store locked"},
		{kmp.Errorf(kmp.CodeBackend, "disk full"), kmp.CodeBackend, "disk full"},
		{errors.New("database is closed"), kmp.CodeBackend, "database is closed"},
		{errors.Join(errors.New("list ws:x"), kmp.Errorf(kmp.CodeUnavailable, "busy")), kmp.CodeUnavailable, "busy"},
	} {
		t.Run(string(tt.code)+" "+tt.says, func(t *testing.T) {
			s.mu.Lock()
			s.err = tt.err
			s.mu.Unlock()
			for _, call := range [][2]string{
				{"kmp_wake", `{"about":"ws:x"}`},
				{"kmp_write_memory", `{"about":"ws:x","actor":"axlr"}`},
				{"kmp_ask", `{"about":"ws:x","question":"q"}`},
				{"kmp_inspect", `{"about":"ws:x","ref":"r"}`},
				{"kmp_rewind", `{"about":"ws:x","from":{"time":"2026-12-03T12:00:00Z"}}`},
			} {
				wantFailure(t, callRaw(t, cs, call[0], call[1]), tt.code, tt.says)
			}
		})
	}
}

func TestStrictArguments(t *testing.T) {
	tests := []struct {
		naming, tool, args, says string
	}{
		{"kmp", "kmp_wake", `{"about":"ws:x","dimensions":{"mode":"all"}}`, `"dimensions"`},
		{"kmp", "kmp_wake", `{"about":"ws:x","budget":{"detail":"full"}}`, `"detail"`},
		{"kmp", "kmp_wake", `{"about":7}`, "about"},
		{"kmp", "kmp_wake", `[]`, "arguments must be a JSON object"},
		{"kmp", "kmp_ask", `{"about":"ws:x","question":"q","answer_policy":"best_effort"}`, `"answer_policy"`},
		{"kmp", "kmp_inspect", `{"about":"ws:x","ref":"r","include":{"raw":true}}`, `"include"`},
		{"kmp", "kmp_write_memory", `{"about":"ws:x","actor":"axlr","observed_at":null}`, `"observed_at"`},
		{"kmp", "kmp_write_memory", `{"about":"ws:x","actor":"axlr","memories":[{"id":"a","kind":"turn","summary":"s","summary_en":"s"}]}`, `"summary_en"`},
		{"kmp", "kmp_rewind", `{"about":"ws:x"}`, "from is required"},
		{"kmp", "kmp_rewind", `{"about":"ws:x","from":{"time":"yesterday"}}`, `from.time "yesterday"`},
		{"kmp", "kmp_rewind", `{"about":"ws:x","from":{"sequence":3}}`, `"sequence"`},
		{"kmp", "kmp_rewind", `{"about":"ws:x","from":{"time":"2026-12-03T12:00:00Z"},"limit":{"tokens":10}}`, `"tokens"`},
		{"kmp", "kmp_rewind", `{"about":"ws:x","from":{"time":"2026-12-03T12:00:00Z"},"window":{}}`, `"window"`},
		{"kernel", "kernel_write_memory", `{"about":"ws:x","labels":{}}`, `"labels"`},
		{"kernel", "kernel_write_memory", kernelArgs(`"intent":"record_turn"`, `"intent":"record_decision"`), `intent "record_decision" does not record a turn memory`},
		{"kernel", "kernel_write_memory", kernelArgs(`"kind":"turn"`, `"kind":"gossip"`), `current.kind "gossip"`},
		{"kernel", "kernel_write_memory", kernelArgs(`"process":"axlr"`, `"process":" "`), "scope.process is required"},
		{"kernel", "kernel_write_memory", kernelArgs(`"2026-12-03T12:00:00Z"`, `"noon"`), `observed_at "noon"`},
		{"kernel", "kernel_write_memory", kernelArgs(`"evidence":"e"`, `"evidence":"e","source":"x"`), `"source"`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.says, func(t *testing.T) {
			s := &stub{}
			res := callRaw(t, rawSession(t, s, tt.naming), tt.tool, tt.args)
			wantFailure(t, res, kmp.CodeInvalid, tt.says)
			if !strings.Contains(resultText(res), tt.tool) {
				t.Errorf("message %q does not name %s", resultText(res), tt.tool)
			}
			if calls := s.received(); len(calls) != 0 {
				t.Errorf("refused arguments reached the store: %v", calls)
			}
		})
	}
}

// kernelArgs is a valid kernel_write_memory call with old replaced by
// replacement.
func kernelArgs(old, replacement string) string {
	valid := `{"about":"ws:x","intent":"record_turn","actor":"axlr","observed_at":"2026-12-03T12:00:00Z","scope":{"process":"axlr"},"current":{"kind":"turn","summary":"s","evidence":"e"},"connect_to":[],"idempotency_key":"k"}`
	if !strings.Contains(valid, old) {
		panic("kernelArgs: no " + old)
	}
	return strings.Replace(valid, old, replacement, 1)
}

func TestKernelWrite(t *testing.T) {
	s := &stub{write: kmp.WriteResult{Accepted: true, Status: kmp.StatusCommitted, Summary: "1 memory",
		LocalRefs: map[string]string{"m": "ws:x:entry:2"}, GeneratedRefs: []string{"ws:x:receipt:1", "ws:x:entry:2"}}}
	cs := rawSession(t, s, "kernel")
	res := callRaw(t, cs, "kernel_write_memory", `{"about":"ws:x","intent":"record_observation","actor":"axlr",
		"observed_at":"2026-12-03T12:00:00.5Z","scope":{"process":"axlr","task":"t1"},
		"current":{"kind":"error_path","summary":"it broke","evidence":"log"},
		"connect_to":[{"ref":"ws:x:entry:1","rel":"follows"}],"idempotency_key":"k:a"}`)
	wantSuccess(t, res, "1 memory", map[string]any{"accepted": true, "generated_refs": []string{"ws:x:entry:2", "ws:x:receipt:1"}})
	want := kmp.WriteRequest{About: "ws:x", Actor: "axlr", IdempotencyKey: "k:a", Memories: []kmp.Memory{{
		ID: "m", Kind: "error_path", Summary: "it broke", Evidence: "log", ConnectTo: []kmp.Link{{Ref: "ws:x:entry:1", Rel: "follows"}},
	}}}
	if calls := s.received(); len(calls) != 1 || !reflect.DeepEqual(calls[0], want) {
		t.Errorf("store received %#v\nwant %#v", calls, want)
	}

	s.mu.Lock()
	s.write = kmp.WriteResult{Status: "needs_review"}
	s.mu.Unlock()
	res = callRaw(t, cs, "kernel_write_memory", kernelArgs(`"k"`, `"k2"`))
	wantSuccess(t, res, "", map[string]any{"accepted": false, "generated_refs": []string{}})
}

func TestServe(t *testing.T) {
	for _, naming := range []string{"kmp", "kernel"} {
		t.Run(naming, func(t *testing.T) {
			s := &stub{
				wake:  kmp.WakeResult{Summary: "woke", Wake: kmp.Wake{Objective: "fix"}},
				write: kmp.WriteResult{Accepted: true, Status: kmp.StatusCommitted, LocalRefs: map[string]string{"m": "ws:x:entry:1"}, GeneratedRefs: []string{"ws:x:entry:1"}},
			}
			c := kmptest.Serve(t, s, naming)
			if c.Naming() != naming {
				t.Errorf("Naming() = %q, want %q", c.Naming(), naming)
			}
			w, err := c.Wake(context.Background(), kmp.WakeRequest{About: "ws:x", Intent: "fix"})
			if err != nil || !reflect.DeepEqual(w, s.wake) {
				t.Errorf("Wake = %+v, %v; want %+v", w, err, s.wake)
			}
			res, err := c.Write(context.Background(), kmp.WriteRequest{About: "ws:x", Actor: "axlr", IdempotencyKey: "k",
				Memories: []kmp.Memory{{ID: "m", Kind: kmp.KindObservation, Summary: "s", Evidence: "e"}}})
			if err != nil || !res.Accepted || res.LocalRefs["m"] != "ws:x:entry:1" {
				t.Errorf("Write = %+v, %v", res, err)
			}
			want := kmp.WriteRequest{About: "ws:x", Actor: "axlr", IdempotencyKey: "k",
				Memories: []kmp.Memory{{ID: "m", Kind: kmp.KindObservation, Summary: "s", Evidence: "e"}}}
			if calls := s.received(); len(calls) != 2 || !reflect.DeepEqual(calls[1], want) {
				t.Errorf("store received %#v, want the wake then %#v", calls, want)
			}
			s.mu.Lock()
			s.err = kmp.Errorf(kmp.CodeConflict, "key k reused")
			s.mu.Unlock()
			_, err = c.Inspect(context.Background(), kmp.InspectRequest{About: "ws:x", Ref: "ws:x:entry:1"})
			var ke *kmp.Error
			if !errors.As(err, &ke) || *ke != (kmp.Error{Code: kmp.CodeConflict, Message: "key k reused"}) {
				t.Errorf("Inspect error = %#v, want the store's conflict", err)
			}
		})
	}
}
