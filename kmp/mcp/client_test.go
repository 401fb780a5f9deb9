package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/mcp"
)

// The test binary re-executes itself as a kmp-mcp when childEnv is set:
// "serve" serves childServer over stdio (writing its pid to the file named
// by pidFileEnv, and, once the session ended, "exited" to the file named by
// exitFileEnv); "neither" serves tools of neither naming; "exit" fails at
// startup the way kmp-mcp v0.1.11 does without a gRPC endpoint.
const (
	childEnv    = "AXLR_KMP_TEST_CHILD"
	pidFileEnv  = "AXLR_KMP_TEST_PIDFILE"
	exitFileEnv = "AXLR_KMP_TEST_EXITFILE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

func runChild(mode string) int {
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "KMP_KERNEL_GRPC_ENDPOINT is required for the grpc backend")
		return 2
	}
	if path := os.Getenv(pidFileEnv); path != "" {
		if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	names := kmpTools
	if mode == "neither" {
		names = []string{"made_wake"}
	}
	server, _ := newToolServer(names, childAnswer)
	if err := server.Run(context.Background(), &mcpsdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if path := os.Getenv(exitFileEnv); path != "" {
		if err := os.WriteFile(path, []byte("exited"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// childAnswer wakes any about and never answers an ask.
func childAnswer(ctx context.Context, tool string, args map[string]any) (*mcpsdk.CallToolResult, error) {
	if tool == "kmp_ask" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return structured(map[string]any{"summary": fmt.Sprintf("woke %v in pid %d", args["about"], os.Getpid())}), nil
}

var (
	kmpTools    = []string{"kmp_wake", "kmp_write_memory", "kmp_ask", "kmp_inspect", "kmp_rewind"}
	kernelTools = []string{"kernel_wake", "kernel_write_memory", "kernel_ask", "kernel_inspect", "kernel_rewind"}
)

// wireCall is a tools/call as the server received it.
type wireCall struct {
	Tool      string
	Arguments map[string]any
}

type wireLog struct {
	mu    sync.Mutex
	calls []wireCall
}

func (l *wireLog) received() []wireCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]wireCall(nil), l.calls...)
}

func (l *wireLog) last() wireCall {
	calls := l.received()
	if len(calls) == 0 {
		return wireCall{}
	}
	return calls[len(calls)-1]
}

type answerFunc func(ctx context.Context, tool string, args map[string]any) (*mcpsdk.CallToolResult, error)

// newToolServer is a hand-written kmp-mcp listing names, answering every
// call with answer and logging the calls it receives.
func newToolServer(names []string, answer answerFunc) (*mcpsdk.Server, *wireLog) {
	log := &wireLog{}
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "underpass-kmp-mcp", Version: "test"}, &mcpsdk.ServerOptions{
		Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{}},
	})
	for _, name := range names {
		s.AddTool(&mcpsdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			var args map[string]any
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, fmt.Errorf("decode arguments of %s: %w", name, err)
			}
			log.mu.Lock()
			log.calls = append(log.calls, wireCall{Tool: name, Arguments: args})
			log.mu.Unlock()
			return answer(ctx, name, args)
		})
	}
	return s, log
}

// connect connects a client to s in memory; it returns the server's
// session too.
func connect(t *testing.T, s *mcpsdk.Server) (*mcp.Client, *mcpsdk.ServerSession) {
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
		_ = c.Close()
		_ = session.Wait()
	})
	return c, session
}

// serve connects a client to a hand-written server listing names.
func serve(t *testing.T, names []string, answer answerFunc) (*mcp.Client, *wireLog) {
	t.Helper()
	s, log := newToolServer(names, answer)
	c, _ := connect(t, s)
	return c, log
}

// answerWith answers every call with res.
func answerWith(res *mcpsdk.CallToolResult) answerFunc {
	return func(context.Context, string, map[string]any) (*mcpsdk.CallToolResult, error) { return res, nil }
}

// structured is a success envelope carrying v.
func structured(v any) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "summary"}}, StructuredContent: v}
}

// toolError is a failure envelope; an empty code is left out.
func toolError(code, message string) *mcpsdk.CallToolResult {
	e := map[string]any{"message": message}
	if code != "" {
		e["code"] = code
	}
	return &mcpsdk.CallToolResult{
		Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: message}},
		StructuredContent: map[string]any{"error": e},
		IsError:           true,
	}
}

// jsonMap decodes a JSON object literal, as the server decodes arguments.
func jsonMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("test JSON %s: %v", s, err)
	}
	return m
}

// popTime removes a time field of m (at path) and checks it is an RFC
// 3339 time between from and to.
func popTime(t *testing.T, m map[string]any, from, to time.Time, path ...string) {
	t.Helper()
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("%s is %v, want an object", p, m[p])
		}
		m = next
	}
	field := path[len(path)-1]
	s, _ := m[field].(string)
	delete(m, field)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s = %q, want an RFC 3339 time: %v", strings.Join(path, "."), s, err)
	}
	if at.Before(from.Truncate(time.Second)) || at.After(to) {
		t.Errorf("%s = %s, want between %s and %s", strings.Join(path, "."), at, from, to)
	}
}

func wantCode(t *testing.T, what string, err error, code kmp.Code, fragments ...string) {
	t.Helper()
	var ke *kmp.Error
	if !errors.As(err, &ke) {
		t.Fatalf("%s error = %v (%T), want a *kmp.Error %s", what, err, err, code)
	}
	if ke.Code != code {
		t.Errorf("%s error = %v, want code %s", what, err, code)
	}
	for _, f := range fragments {
		if !strings.Contains(ke.Message, f) {
			t.Errorf("%s error message %q does not say %q", what, ke.Message, f)
		}
	}
}

func TestNaming(t *testing.T) {
	tests := []struct {
		name   string
		listed []string
		naming string
	}{
		{"kmp", kmpTools, "kmp"},
		{"kernel", kernelTools, "kernel"},
		{"both prefer kmp", append(append([]string{}, kernelTools...), kmpTools...), "kmp"},
		{"kmp_wake alone", []string{"kmp_wake", "kernel_ask"}, "kmp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, log := serve(t, tt.listed, answerWith(structured(map[string]any{"summary": "woke"})))
			if got := c.Naming(); got != tt.naming {
				t.Errorf("Naming() = %q, want %q", got, tt.naming)
			}
			res, err := c.Wake(context.Background(), kmp.WakeRequest{About: "repo:x"})
			if err != nil || res.Summary != "woke" {
				t.Fatalf("Wake = %+v, %v", res, err)
			}
			if got, want := log.last().Tool, tt.naming+"_wake"; got != want {
				t.Errorf("Wake called %q, want %q", got, want)
			}
		})
	}
	for _, tt := range []struct {
		name   string
		listed []string
		says   string
	}{
		{"neither", []string{"made_wake", "kmp_ask"}, "it lists kmp_ask, made_wake"},
		{"no tools", nil, "it lists none"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newToolServer(tt.listed, answerWith(structured(map[string]any{})))
			serverEnd, clientEnd := mcpsdk.NewInMemoryTransports()
			session, err := s.Connect(context.Background(), serverEnd, nil)
			if err != nil {
				t.Fatalf("connect server: %v", err)
			}
			c, err := mcp.Connect(context.Background(), clientEnd)
			if c != nil {
				t.Errorf("Connect returned a client with error %v", err)
			}
			wantCode(t, "Connect", err, kmp.CodeUnknownTool, "kmp_wake", "kernel_wake", tt.says)
			// Wait returns once the client ended the session it could not use.
			_ = session.Wait()
		})
	}
}

func TestVerbsOnTheWire(t *testing.T) {
	wake := `{"summary":"2 lines","wake":{"objective":"fix","current_state":["repo:x:entry:1 tests pass"],"causal_spine":[{"claim":"c","because":"b","evidence_ref":"repo:x:entry:2"}],"open_loops":[],"next_actions":[],"guardrails":[]},"proof":{"evidence":["repo:x:entry:1"],"confidence":"high"},"projection":{"budget":{"max_bytes":12000,"used_bytes":80},"page":{"offset":0,"returned":2,"total":2,"has_more":false}},"resume_cursor":null}`
	ask := `{"summary":"yes","answer":"yes","because":[{"claim":"tests pass","ref":"repo:x:entry:1"}],"proof":{}}`
	inspect := `{"summary":"entry","object":{"ref":"repo:x:entry:1","kind":"observation","text":"tests pass","metadata":{"sequence":1}},"links":{"incoming":[],"outgoing":[{"ref":"repo:x:entry:2","rel":"supports"}]},"evidence":["go test"]}`
	write := `{"accepted":true,"status":"committed","local_refs":{"a":"repo:x:entry:3"},"generated_refs":["repo:x:entry:3"],"relations":[],"labels":{"written":["team=core"]},"receipt":{"ref":"repo:x:receipt:1","action":"created"},"summary":"1 memory","feedback":[]}`
	payloads := map[string]string{"wake": wake, "ask": ask, "inspect": inspect, "write_memory": write}
	answer := func(_ context.Context, tool string, _ map[string]any) (*mcpsdk.CallToolResult, error) {
		_, stem, _ := strings.Cut(tool, "_")
		return structured(json.RawMessage(payloads[stem])), nil
	}
	strict := false
	for _, names := range [][]string{kmpTools, kernelTools} {
		naming, _, _ := strings.Cut(names[0], "_")
		t.Run(naming, func(t *testing.T) {
			c, log := serve(t, names, answer)
			ctx := context.Background()
			check := func(what string, wantTool, wantArgs string, got, want any) {
				t.Helper()
				if w := log.last(); w.Tool != wantTool || !reflect.DeepEqual(w.Arguments, jsonMap(t, wantArgs)) {
					t.Errorf("%s sent %s %v\nwant %s %s", what, w.Tool, w.Arguments, wantTool, wantArgs)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %+v\nwant %+v", what, got, want)
				}
			}

			gotWake, err := c.Wake(ctx, kmp.WakeRequest{About: "repo:x", Intent: "fix", Budget: &kmp.Budget{MaxBytes: 12000}})
			if err != nil {
				t.Fatalf("Wake: %v", err)
			}
			check("Wake", naming+"_wake", `{"about":"repo:x","intent":"fix","budget":{"max_bytes":12000}}`, gotWake, kmp.WakeResult{
				Summary: "2 lines",
				Wake: kmp.Wake{Objective: "fix", CurrentState: []string{"repo:x:entry:1 tests pass"},
					CausalSpine: []kmp.Cause{{Claim: "c", Because: "b", EvidenceRef: "repo:x:entry:2"}},
					OpenLoops:   []string{}, NextActions: []string{}, Guardrails: []string{}},
				Proof: kmp.Proof{Evidence: []string{"repo:x:entry:1"}, Confidence: "high"},
				Projection: kmp.Projection{Budget: kmp.ProjectionBudget{MaxBytes: 12000, UsedBytes: 80},
					Page: kmp.Page{Returned: 2, Total: 2}},
			})

			gotAsk, err := c.Ask(ctx, kmp.AskRequest{About: "repo:x", Question: "do tests pass?"})
			if err != nil {
				t.Fatalf("Ask: %v", err)
			}
			check("Ask", naming+"_ask", `{"about":"repo:x","question":"do tests pass?"}`, gotAsk, kmp.AskResult{
				Summary: "yes", Answer: "yes", Because: []kmp.Because{{Claim: "tests pass", Ref: "repo:x:entry:1"}},
			})

			gotInspect, err := c.Inspect(ctx, kmp.InspectRequest{About: "repo:x", Ref: "repo:x:entry:1"})
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			check("Inspect", naming+"_inspect", `{"about":"repo:x","ref":"repo:x:entry:1"}`, gotInspect, kmp.InspectResult{
				Summary:  "entry",
				Object:   kmp.Object{Ref: "repo:x:entry:1", Kind: "observation", Text: "tests pass", Metadata: map[string]any{"sequence": float64(1)}},
				Links:    kmp.Links{Incoming: []kmp.LinkedRef{}, Outgoing: []kmp.LinkedRef{{Ref: "repo:x:entry:2", Rel: "supports"}}},
				Evidence: []string{"go test"},
			})

			if naming != "kmp" {
				return
			}
			gotWrite, err := c.Write(ctx, kmp.WriteRequest{
				About: "repo:x", Actor: "axlr", Labels: map[string][]string{"team": {"core"}},
				Memories: []kmp.Memory{{ID: "a", Kind: kmp.KindObservation, Summary: "tests pass", Evidence: "go test",
					ConnectTo: []kmp.Link{{Ref: "repo:x:entry:1", Rel: "supports", Why: "same run", Confidence: "medium"}}}},
				IdempotencyKey: "axlr:1", Options: &kmp.WriteOptions{Strict: &strict},
			})
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			check("Write", "kmp_write_memory",
				`{"about":"repo:x","actor":"axlr","labels":{"team":["core"]},"memories":[{"id":"a","kind":"observation","summary":"tests pass","evidence":"go test","connect_to":[{"ref":"repo:x:entry:1","rel":"supports","why":"same run","confidence":"medium"}]}],"idempotency_key":"axlr:1","options":{"strict":false}}`,
				gotWrite, kmp.WriteResult{
					Accepted: true, Status: "committed", LocalRefs: map[string]string{"a": "repo:x:entry:3"},
					GeneratedRefs: []string{"repo:x:entry:3"}, Relations: []kmp.RelationRef{},
					Labels:  kmp.LabelsWritten{Written: []string{"team=core"}},
					Receipt: kmp.Receipt{Ref: "repo:x:receipt:1", Action: "created"}, Summary: "1 memory",
				})
		})
	}
}

func TestErrorEnvelope(t *testing.T) {
	tests := []struct {
		name    string
		result  *mcpsdk.CallToolResult
		code    kmp.Code
		message string
	}{
		{"invalid_argument", toolError("invalid_argument", "about is empty"), kmp.CodeInvalid, "about is empty"},
		{"not_found", toolError("not_found", "nothing about repo:x"), kmp.CodeNotFound, "nothing about repo:x"},
		{"conflict", toolError("conflict", "key axlr:1 reused"), kmp.CodeConflict, "key axlr:1 reused"},
		{"unavailable", toolError("unavailable", "store locked"), kmp.CodeUnavailable, "store locked"},
		{"unknown_tool", toolError("unknown_tool", "no kmp_view_open here"), kmp.CodeUnknownTool, "no kmp_view_open here"},
		{"backend_error", toolError("backend_error", "about repo:x not found in the index"), kmp.CodeBackend, "about repo:x not found in the index"},
		{"derived not found", toolError("", "about 'repo:x' was not found"), kmp.CodeNotFound, "about 'repo:x' was not found"},
		{"derived invalid", toolError("", "invalid ref `x`"), kmp.CodeInvalid, "invalid ref `x`"},
		{"derived required", toolError("", "field `about` is required"), kmp.CodeInvalid, "field `about` is required"},
		{"derived must", toolError("", "budget.max_bytes must be at least 512"), kmp.CodeInvalid, "budget.max_bytes must be at least 512"},
		{"derived conflict key", toolError("", "idempotency key 'axlr:1' was already accepted with different content"), kmp.CodeConflict, "idempotency key 'axlr:1' was already accepted with different content"},
		{"derived conflict", toolError("", "write Conflict on repo:x"), kmp.CodeConflict, "write Conflict on repo:x"},
		{"derived backend", toolError("", "disk full"), kmp.CodeBackend, "disk full"},
		{"unknown code derived", toolError("rate_limited", "Not Found in cache"), kmp.CodeNotFound, "Not Found in cache"},
		{"text only", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "ref repo:x:entry:9 not found"}}, IsError: true}, kmp.CodeNotFound, "ref repo:x:entry:9 not found"},
		{"message from text", &mcpsdk.CallToolResult{
			Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: "lock busy"}},
			StructuredContent: map[string]any{"error": map[string]any{"code": "unavailable"}},
			IsError:           true,
		}, kmp.CodeUnavailable, "lock busy"},
		{"no structuredContent on success", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: `{"summary":"s"}`}}}, kmp.CodeBackend, "kmp_wake result: no structuredContent"},
		{"structuredContent of another shape", structured(map[string]any{"wake": "all good"}), kmp.CodeBackend, "decode kmp-mcp kmp_wake result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := serve(t, kmpTools, answerWith(tt.result))
			_, err := c.Wake(context.Background(), kmp.WakeRequest{About: "repo:x"})
			var ke *kmp.Error
			if !errors.As(err, &ke) {
				t.Fatalf("Wake error = %v (%T), want *kmp.Error", err, err)
			}
			if ke.Code != tt.code || !strings.Contains(ke.Message, tt.message) {
				t.Errorf("Wake error = {%s %q}, want {%s %q}", ke.Code, ke.Message, tt.code, tt.message)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	c, _ := serve(t, []string{"kmp_wake"}, answerWith(structured(map[string]any{})))
	_, err := c.Ask(context.Background(), kmp.AskRequest{About: "repo:x", Question: "q"})
	wantCode(t, "Ask of an unlisted tool", err, kmp.CodeUnknownTool, "kmp_ask")
}

func TestTransportFailure(t *testing.T) {
	s, _ := newToolServer(kmpTools, answerWith(structured(map[string]any{})))
	c, session := connect(t, s)
	if err := session.Close(); err != nil {
		t.Fatalf("close server session: %v", err)
	}
	_, err := c.Wake(context.Background(), kmp.WakeRequest{About: "repo:x"})
	wantCode(t, "Wake after the server went away", err, kmp.CodeUnavailable, "kmp-mcp unavailable", "kmp_wake")
	if !kmp.Retryable(err) {
		t.Errorf("Retryable(%v) = false", err)
	}
}

func TestCallerCancellationIsNotUnavailable(t *testing.T) {
	started := make(chan struct{})
	c, _ := serve(t, kmpTools, func(ctx context.Context, _ string, _ map[string]any) (*mcpsdk.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Wake(ctx, kmp.WakeRequest{About: "repo:x"})
		errc <- err
	}()
	<-started
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || kmp.Retryable(err) {
		t.Errorf("Wake with a cancelled context = %v, want context.Canceled and not unavailable", err)
	}
}

// kernelWriter answers kernel_write_memory with the next entry's ref and
// a receipt, accepting all but the memories whose summary is "refused".
func kernelWriter() answerFunc {
	var mu sync.Mutex
	n := 0
	return func(_ context.Context, tool string, args map[string]any) (*mcpsdk.CallToolResult, error) {
		if tool != "kernel_write_memory" {
			return toolError("unknown_tool", tool), nil
		}
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		current, _ := args["current"].(map[string]any)
		return structured(map[string]any{
			"accepted":         current["summary"] != "refused",
			"generated_refs":   []string{fmt.Sprintf("repo:x:entry:%d", i), fmt.Sprintf("repo:x:receipt:%d", i)},
			"relation_quality": map[string]any{},
		}), nil
	}
}

func TestKernelWriteShape(t *testing.T) {
	c, log := serve(t, kernelTools, kernelWriter())
	before := time.Now()
	res, err := c.Write(context.Background(), kmp.WriteRequest{
		About: "repo:x", Actor: "axlr", SourceKind: "agent", Labels: map[string][]string{"team": {"core"}},
		IdempotencyKey: "axlr:ceremony-outcome:7",
		Memories: []kmp.Memory{
			{ID: "first", Kind: kmp.KindErrorPath, Summary: "build broke", Evidence: "ci log",
				ConnectTo: []kmp.Link{{Ref: "repo:x:entry:40", Rel: "follows"}}},
			{ID: "second", Kind: kmp.KindDecision, Summary: "pin the toolchain", Evidence: "review",
				ConnectTo: []kmp.Link{
					{Ref: "@first", Rel: "chosen_because", Why: "it broke", Evidence: "ci log", Confidence: "medium"},
					{Ref: "first", Rel: "follows"},
				}},
		},
	})
	after := time.Now()
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	want := kmp.WriteResult{
		Accepted: true, Status: kmp.StatusCommitted,
		LocalRefs:     map[string]string{"first": "repo:x:entry:1", "second": "repo:x:entry:2"},
		GeneratedRefs: []string{"repo:x:entry:1", "repo:x:receipt:1", "repo:x:entry:2", "repo:x:receipt:2"},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Write = %+v\nwant %+v", res, want)
	}
	calls := log.received()
	wantCalls := []string{
		`{"about":"repo:x","intent":"record_observation","actor":"axlr","scope":{"process":"axlr"},
		  "current":{"kind":"error_path","summary":"build broke","evidence":"ci log"},
		  "connect_to":[{"ref":"repo:x:entry:40","rel":"follows"}],"idempotency_key":"axlr:ceremony-outcome:7:first"}`,
		`{"about":"repo:x","intent":"record_decision","actor":"axlr","scope":{"process":"axlr"},
		  "current":{"kind":"decision","summary":"pin the toolchain","evidence":"review"},
		  "connect_to":[{"ref":"repo:x:entry:1","rel":"chosen_because","why":"it broke","evidence":"ci log","confidence":"medium"},
		                {"ref":"repo:x:entry:1","rel":"follows"}],
		  "idempotency_key":"axlr:ceremony-outcome:7:second"}`,
	}
	if len(calls) != len(wantCalls) {
		t.Fatalf("calls = %v, want %d", calls, len(wantCalls))
	}
	for i, call := range calls {
		popTime(t, call.Arguments, before, after, "observed_at")
		if w := jsonMap(t, wantCalls[i]); call.Tool != "kernel_write_memory" || !reflect.DeepEqual(call.Arguments, w) {
			t.Errorf("call %d = %s %v\nwant kernel_write_memory %v", i, call.Tool, call.Arguments, w)
		}
	}
}

func TestKernelWriteOneMemory(t *testing.T) {
	c, log := serve(t, kernelTools, kernelWriter())
	before := time.Now()
	_, err := c.Write(context.Background(), kmp.WriteRequest{About: "repo:x", Actor: "axlr", IdempotencyKey: "k",
		Memories: []kmp.Memory{{ID: "only", Kind: kmp.KindTurn, Summary: "hello"}}})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if _, err := c.Write(context.Background(), kmp.WriteRequest{About: "repo:x", Actor: "axlr",
		Memories: []kmp.Memory{{ID: "only", Kind: kmp.KindTurn, Summary: "hello"}}}); err != nil {
		t.Fatalf("Write without a key: %v", err)
	}
	after := time.Now()
	calls := log.received()
	wantCalls := []string{
		`{"about":"repo:x","intent":"record_turn","actor":"axlr","scope":{"process":"axlr"},"current":{"kind":"turn","summary":"hello","evidence":""},"connect_to":[],"idempotency_key":"k"}`,
		`{"about":"repo:x","intent":"record_turn","actor":"axlr","scope":{"process":"axlr"},"current":{"kind":"turn","summary":"hello","evidence":""},"connect_to":[]}`,
	}
	if len(calls) != len(wantCalls) {
		t.Fatalf("calls = %v, want %d", calls, len(wantCalls))
	}
	for i, call := range calls {
		popTime(t, call.Arguments, before, after, "observed_at")
		if w := jsonMap(t, wantCalls[i]); !reflect.DeepEqual(call.Arguments, w) {
			t.Errorf("call %d = %v\nwant %v", i, call.Arguments, w)
		}
	}
}

func TestKernelIntents(t *testing.T) {
	want := map[string]string{
		"turn": "record_turn", "observation": "record_observation", "decision": "record_decision",
		"feedback": "record_feedback", "semantic_delta": "record_delta", "constraint": "record_observation",
		"preference": "record_observation", "derived_value": "record_observation",
		"error_path": "record_observation", "success_path": "record_observation",
	}
	if len(want) != len(kmp.Kinds) {
		t.Fatalf("the test knows %d kinds, kmp has %d", len(want), len(kmp.Kinds))
	}
	c, log := serve(t, kernelTools, kernelWriter())
	for _, kind := range kmp.Kinds {
		if _, err := c.Write(context.Background(), kmp.WriteRequest{About: "repo:x", Actor: "axlr",
			Memories: []kmp.Memory{{ID: "m", Kind: kind, Summary: "s", Evidence: "e"}}}); err != nil {
			t.Fatalf("Write %s: %v", kind, err)
		}
		if got := log.last().Arguments["intent"]; got != want[kind] {
			t.Errorf("intent of a %s memory = %v, want %s", kind, got, want[kind])
		}
	}
}

func TestKernelWriteRefusals(t *testing.T) {
	tests := []struct {
		name string
		req  kmp.WriteRequest
		says string
	}{
		{"relations only", kmp.WriteRequest{About: "repo:x", Actor: "axlr",
			Relations: []kmp.Relation{{From: "repo:x:entry:1", To: "repo:x:entry:2", Rel: "supports", Why: "w", Evidence: "e"}}},
			"the older kernel_* naming has no relations write"},
		{"no memories", kmp.WriteRequest{About: "repo:x", Actor: "axlr"}, "no memories"},
		{"dry run", kmp.WriteRequest{About: "repo:x", Actor: "axlr", Options: &kmp.WriteOptions{DryRun: true},
			Memories: []kmp.Memory{{ID: "a", Kind: kmp.KindTurn, Summary: "s"}}}, "no dry run"},
		{"unknown kind", kmp.WriteRequest{About: "repo:x", Actor: "axlr",
			Memories: []kmp.Memory{{ID: "a", Kind: "musing", Summary: "s"}}}, `memory "a" has kind "musing"`},
		{"duplicate ids", kmp.WriteRequest{About: "repo:x", Actor: "axlr",
			Memories: []kmp.Memory{{ID: "a", Kind: kmp.KindTurn, Summary: "s"}, {ID: "a", Kind: kmp.KindTurn, Summary: "t"}}}, `local id "a"`},
		{"link to a later memory", kmp.WriteRequest{About: "repo:x", Actor: "axlr",
			Memories: []kmp.Memory{
				{ID: "a", Kind: kmp.KindTurn, Summary: "s", ConnectTo: []kmp.Link{{Ref: "@b", Rel: "follows"}}},
				{ID: "b", Kind: kmp.KindTurn, Summary: "t"},
			}}, `memory "a" links to "@b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, log := serve(t, kernelTools, kernelWriter())
			_, err := c.Write(context.Background(), tt.req)
			wantCode(t, "Write", err, kmp.CodeInvalid, "kernel_write_memory", tt.says)
			if calls := log.received(); len(calls) != 0 {
				t.Errorf("a refused write reached kmp-mcp: %v", calls)
			}
		})
	}
}

func TestKernelWriteNotAccepted(t *testing.T) {
	c, log := serve(t, kernelTools, kernelWriter())
	res, err := c.Write(context.Background(), kmp.WriteRequest{About: "repo:x", Actor: "axlr", Memories: []kmp.Memory{
		{ID: "a", Kind: kmp.KindTurn, Summary: "refused"},
		{ID: "b", Kind: kmp.KindTurn, Summary: "never sent"},
	}})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	want := kmp.WriteResult{Status: mcp.StatusRejected, LocalRefs: map[string]string{"a": "repo:x:entry:1"},
		GeneratedRefs: []string{"repo:x:entry:1", "repo:x:receipt:1"}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Write = %+v\nwant %+v", res, want)
	}
	if n := len(log.received()); n != 1 {
		t.Errorf("%d calls, want the write to stop after the memory not accepted", n)
	}
}

func TestKernelWriteFailures(t *testing.T) {
	two := kmp.WriteRequest{About: "repo:x", Actor: "axlr", Memories: []kmp.Memory{
		{ID: "a", Kind: kmp.KindTurn, Summary: "first"},
		{ID: "b", Kind: kmp.KindTurn, Summary: "second", ConnectTo: []kmp.Link{{Ref: "a", Rel: "follows"}}},
	}}
	calls := 0
	c, _ := serve(t, kernelTools, func(context.Context, string, map[string]any) (*mcpsdk.CallToolResult, error) {
		calls++
		if calls == 1 {
			return structured(map[string]any{"accepted": true, "generated_refs": []string{"repo:x:entry:1"}}), nil
		}
		return toolError("", "connect_to is required"), nil
	})
	res, err := c.Write(context.Background(), two)
	wantCode(t, "Write failing at its second memory", err, kmp.CodeInvalid, "connect_to is required")
	if !reflect.DeepEqual(res, kmp.WriteResult{}) {
		t.Errorf("Write result with an error = %+v, want none", res)
	}

	c, log := serve(t, kernelTools, answerWith(structured(map[string]any{"accepted": true, "generated_refs": []string{}})))
	_, err = c.Write(context.Background(), two)
	wantCode(t, "Write linking to a memory given no ref", err, kmp.CodeBackend, `memory "a" was accepted with no generated ref`)
	if n := len(log.received()); n != 1 {
		t.Errorf("%d calls, want the write to stop before the memory it cannot link", n)
	}
}

// rewinder answers kmp_rewind with entries and page.
func rewinder(entries []kmp.Object, page kmp.Page) answerFunc {
	return answerWith(structured(map[string]any{"temporal": map[string]any{"direction": "backward"}, "entries": entries, "page": page}))
}

func TestList(t *testing.T) {
	kinds := []string{"decision", "observation", "decision", "turn", "observation", "decision"}
	var entries []kmp.Object
	for i, k := range kinds {
		entries = append(entries, kmp.Object{Ref: fmt.Sprintf("repo:x:entry:%d", 6-i), Kind: k, Text: k, Metadata: map[string]any{"sequence": float64(6 - i)}})
	}
	pick := func(is ...int) []kmp.Object {
		out := []kmp.Object{}
		for _, i := range is {
			out = append(out, entries[i])
		}
		return out
	}
	tests := []struct {
		name     string
		req      kmp.ListRequest
		served   []kmp.Object
		page     kmp.Page
		asked    float64
		entries  []kmp.Object
		wantPage kmp.Page
	}{
		{"default limit", kmp.ListRequest{About: "repo:x"}, entries, kmp.Page{Returned: 6, Total: 6},
			50, entries, kmp.Page{Returned: 6, Total: 6}},
		{"limit", kmp.ListRequest{About: "repo:x", Limit: 2}, entries[:2], kmp.Page{Returned: 2, Total: 6, HasMore: true},
			2, entries[:2], kmp.Page{Returned: 2, Total: 6, HasMore: true}},
		{"cut to the limit", kmp.ListRequest{About: "repo:x", Limit: 3}, entries, kmp.Page{Returned: 6, Total: 6},
			3, entries[:3], kmp.Page{Returned: 3, Total: 6, HasMore: true}},
		{"most", kmp.ListRequest{About: "repo:x", Limit: kmp.MaxListLimit}, entries, kmp.Page{Returned: 6, Total: 6},
			500, entries, kmp.Page{Returned: 6, Total: 6}},
		{"kind", kmp.ListRequest{About: "repo:x", Kind: "decision"}, entries, kmp.Page{Returned: 6, Total: 6},
			500, pick(0, 2, 5), kmp.Page{Returned: 3, Total: 3}},
		{"kind and limit", kmp.ListRequest{About: "repo:x", Kind: "observation", Limit: 1}, entries, kmp.Page{Returned: 6, Total: 6},
			500, pick(1), kmp.Page{Returned: 1, Total: 2, HasMore: true}},
		{"kind beyond what kmp-mcp returned", kmp.ListRequest{About: "repo:x", Kind: "turn"}, entries, kmp.Page{Returned: 6, Total: 900, HasMore: true},
			500, pick(3), kmp.Page{Returned: 1, Total: 1, HasMore: true}},
		{"kind with none", kmp.ListRequest{About: "repo:x", Kind: "feedback"}, entries, kmp.Page{Returned: 6, Total: 6},
			500, []kmp.Object{}, kmp.Page{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, log := serve(t, kmpTools, rewinder(tt.served, tt.page))
			before := time.Now()
			res, err := c.List(context.Background(), tt.req)
			after := time.Now()
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			call := log.last()
			popTime(t, call.Arguments, before, after, "from", "time")
			wantArgs := map[string]any{"about": "repo:x", "from": map[string]any{}, "limit": map[string]any{"entries": tt.asked}}
			if call.Tool != "kmp_rewind" || !reflect.DeepEqual(call.Arguments, wantArgs) {
				t.Errorf("List sent %s %v, want kmp_rewind %v", call.Tool, call.Arguments, wantArgs)
			}
			want := kmp.ListResult{Entries: tt.entries, Page: tt.wantPage}
			if !reflect.DeepEqual(res, want) {
				t.Errorf("List = %+v\nwant %+v", res, want)
			}
		})
	}
}

func TestListRefusals(t *testing.T) {
	c, log := serve(t, kmpTools, rewinder(nil, kmp.Page{}))
	for _, tt := range []struct {
		req  kmp.ListRequest
		says string
	}{
		{kmp.ListRequest{About: "repo:x", Limit: -1}, "limit is -1"},
		{kmp.ListRequest{About: "repo:x", Limit: kmp.MaxListLimit + 1}, "limit is 501"},
		{kmp.ListRequest{About: "repo:x", Kind: "musing"}, `kind "musing"`},
	} {
		_, err := c.List(context.Background(), tt.req)
		wantCode(t, fmt.Sprintf("List %+v", tt.req), err, kmp.CodeInvalid, "kmp_rewind", tt.says)
	}
	if calls := log.received(); len(calls) != 0 {
		t.Errorf("refused listings reached kmp-mcp: %v", calls)
	}
}

// startChild starts the test binary as a kmp-mcp in mode; it returns the
// files the child writes its pid and its exit to.
func startChild(t *testing.T, mode string, timeout time.Duration, stderr *bytes.Buffer) (c *mcp.Client, pidFile, exitFile string, err error) {
	t.Helper()
	dir := t.TempDir()
	pidFile, exitFile = filepath.Join(dir, "pid"), filepath.Join(dir, "exited")
	opts := mcp.Options{
		Command:     os.Args[0],
		Env:         append(os.Environ(), childEnv+"="+mode, pidFileEnv+"="+pidFile, exitFileEnv+"="+exitFile),
		Dir:         dir,
		CallTimeout: timeout,
	}
	if stderr != nil {
		opts.Stderr = stderr
	}
	c, err = mcp.Start(context.Background(), opts)
	return c, pidFile, exitFile, err
}

func childProcess(t *testing.T, pidFile string) *os.Process {
	t.Helper()
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("read child pid: %v", err)
	}
	pid, err := strconv.Atoi(string(raw))
	if err != nil {
		t.Fatalf("child pid %q: %v", raw, err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatalf("find child %d: %v", pid, err)
	}
	return p
}

func TestStartChild(t *testing.T) {
	c, pidFile, exitFile, err := startChild(t, "serve", 0, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	child := childProcess(t, pidFile)
	if c.Naming() != "kmp" {
		t.Errorf("Naming() = %q, want kmp", c.Naming())
	}
	res, err := c.Wake(context.Background(), kmp.WakeRequest{About: "repo:x"})
	if want := fmt.Sprintf("woke repo:x in pid %d", child.Pid); err != nil || res.Summary != want {
		t.Fatalf("Wake = %+v, %v; want summary %q", res, err, want)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, err := os.ReadFile(exitFile); err != nil || string(got) != "exited" {
		t.Errorf("after Close the child's exit file reads %q, %v; want the child to have ended its session", got, err)
	}
	if err := child.Signal(syscall.Signal(0)); !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH) {
		t.Errorf("signal 0 to the child after Close = %v, want it gone", err)
	}
}

func TestStartChildDies(t *testing.T) {
	c, pidFile, _, err := startChild(t, "serve", 0, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := childProcess(t, pidFile).Kill(); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	_, err = c.Wake(context.Background(), kmp.WakeRequest{About: "repo:x"})
	wantCode(t, "Wake after the child died", err, kmp.CodeUnavailable, "kmp-mcp unavailable", "kmp_wake")
}

func TestStartCallTimeout(t *testing.T) {
	c, _, _, err := startChild(t, "serve", 50*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Ask(context.Background(), kmp.AskRequest{About: "repo:x", Question: "q"})
	wantCode(t, "Ask that never answers", err, kmp.CodeUnavailable, "kmp_ask", "no answer within 50ms")
}

func TestStartFailures(t *testing.T) {
	var stderr bytes.Buffer
	_, _, _, err := startChild(t, "exit", 0, &stderr)
	wantCode(t, "Start of a child exiting at startup", err, kmp.CodeUnavailable, "kmp-mcp unavailable: start ")
	if !strings.Contains(stderr.String(), "KMP_KERNEL_GRPC_ENDPOINT is required") {
		t.Errorf("child stderr = %q, want its startup message", stderr.String())
	}

	_, _, exitFile, err := startChild(t, "neither", 0, nil)
	wantCode(t, "Start of a kmp-mcp without kmp_wake or kernel_wake", err, kmp.CodeUnknownTool, "it lists made_wake")
	if _, err := os.Stat(exitFile); err != nil {
		t.Errorf("the child listing neither naming was not ended: %v", err)
	}

	_, err = mcp.Start(context.Background(), mcp.Options{Command: filepath.Join(t.TempDir(), "kmp-mcp")})
	wantCode(t, "Start of a missing executable", err, kmp.CodeUnavailable, "kmp-mcp")

	_, err = mcp.Start(context.Background(), mcp.Options{})
	if err == nil || !strings.Contains(err.Error(), "mcp.Options.Command") {
		t.Errorf("Start without a command = %v, want an error naming mcp.Options.Command", err)
	}
	_, err = mcp.Start(context.Background(), mcp.Options{Command: os.Args[0], CallTimeout: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "CallTimeout is negative") {
		t.Errorf("Start with a negative call timeout = %v, want it refused", err)
	}
}
