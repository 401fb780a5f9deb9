// The in-test kmp-mcp: NewServer serves any kmp.Store under kmp-mcp's tool
// names (the newer kmp_* naming or v0.1.11's kernel_* one), argument shapes
// and result envelopes, so the real MCP client runs over a real MCP
// transport in tests; Serve wires the two together in memory. It decodes
// arguments strictly (a field axlr's types do not carry is refused) and
// knows nothing of memory semantics: those are the served store's.
// (The package comment is conformance.go's.)

package kmptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/mcp"
)

// ServerName is the name kmp-mcp reports in its initialize result.
const ServerName = "underpass-kmp-mcp"

// The versions NewServer reports: the release each naming comes from.
const (
	ServerVersionKMP    = "0.24.0"
	ServerVersionKernel = "0.1.11"
)

// KernelMemoryID is the local id of the one memory a kernel_write_memory
// call becomes in the served store's kmp.WriteRequest.
const KernelMemoryID = "m"

// NewServer returns an MCP server serving s under naming's tool names
// (mcp.NamingKMP: kmp_wake, kmp_write_memory, kmp_ask, kmp_inspect,
// kmp_rewind; mcp.NamingKernel: the kernel_* ones, whose write takes
// v0.1.11's older shape). A success is {content: [text summary],
// structuredContent: result, isError: false}; a failure is isError true
// with structuredContent.error {code, message} from s's *kmp.Error (any
// other error is backend_error). It panics on any other naming.
func NewServer(s kmp.Store, naming string) *mcpsdk.Server {
	version := ServerVersionKMP
	switch naming {
	case mcp.NamingKMP:
	case mcp.NamingKernel:
		version = ServerVersionKernel
	default:
		panic(fmt.Sprintf("kmptest.NewServer: naming %q is neither %q nor %q", naming, mcp.NamingKMP, mcp.NamingKernel))
	}
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: ServerName, Version: version}, &mcpsdk.ServerOptions{
		Capabilities:              &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{}},
		SupportedProtocolVersions: []string{mcp.ProtocolVersion},
	})
	for _, t := range toolSpecs(s, naming) {
		name := mcp.ToolName(naming, t.stem)
		srv.AddTool(&mcpsdk.Tool{Name: name, Description: t.description, InputSchema: t.schema}, toolHandler(name, t.run))
	}
	srv.AddReceivingMiddleware(explicitIsError)
	return srv
}

// Serve serves s with NewServer over in-memory transports and returns a
// client connected to it; both are closed when t ends.
func Serve(t testing.TB, s kmp.Store, naming string) *mcp.Client {
	t.Helper()
	serverEnd, clientEnd := mcpsdk.NewInMemoryTransports()
	session, err := NewServer(s, naming).Connect(context.Background(), serverEnd, nil)
	if err != nil {
		t.Fatalf("connect kmp-mcp test server: %v", err)
	}
	client, err := mcp.Connect(context.Background(), clientEnd)
	if err != nil {
		_ = session.Close()
		t.Fatalf("connect kmp-mcp test client: %v", err)
	}
	t.Cleanup(func() {
		if err := client.Close(); err != nil {
			t.Errorf("close kmp-mcp test client: %v", err)
		}
		_ = session.Wait()
	})
	return client
}

// A tool's run returns its structuredContent and the summary its text
// block carries.
type runFunc func(ctx context.Context, tool string, raw json.RawMessage) (payload any, summary string, err error)

type toolSpec struct {
	stem        string
	description string
	schema      map[string]any
	run         runFunc
}

func toolSpecs(s kmp.Store, naming string) []toolSpec {
	budget := map[string]any{"type": "object", "properties": map[string]any{
		"max_bytes": integer(), "tokens": integer(), "max_entries": integer(),
	}}
	write := toolSpec{
		stem:        mcp.StemWrite,
		description: "Record memories, or relations between existing ones, under an about.",
		schema: object([]string{"about", "actor"}, map[string]any{
			"about": str(), "actor": str(), "source_kind": str(), "labels": map[string]any{"type": "object"},
			"memories": array(), "relations": array(), "idempotency_key": str(), "options": map[string]any{"type": "object"},
		}),
		run: func(ctx context.Context, tool string, raw json.RawMessage) (any, string, error) {
			var req kmp.WriteRequest
			if err := decode(tool, raw, &req); err != nil {
				return nil, "", err
			}
			res, err := s.Write(ctx, req)
			return res, res.Summary, err
		},
	}
	if naming == mcp.NamingKernel {
		write = toolSpec{
			stem:        mcp.StemWrite,
			description: "Record one memory under an about (v0.1.11's shape).",
			schema: object([]string{"about", "intent", "actor", "observed_at", "scope", "current", "connect_to"}, map[string]any{
				"about": str(), "intent": str(), "actor": str(), "observed_at": str(),
				"scope": map[string]any{"type": "object"}, "current": map[string]any{"type": "object"},
				"connect_to": array(), "idempotency_key": str(),
			}),
			run: func(ctx context.Context, tool string, raw json.RawMessage) (any, string, error) {
				return kernelWrite(ctx, s, tool, raw)
			},
		}
	}
	return []toolSpec{
		{
			stem:        mcp.StemWake,
			description: "Recall what the memory holds about an about for an intent, within a budget.",
			schema:      object([]string{"about"}, map[string]any{"about": str(), "intent": str(), "role": str(), "budget": budget}),
			run: func(ctx context.Context, tool string, raw json.RawMessage) (any, string, error) {
				var req kmp.WakeRequest
				if err := decode(tool, raw, &req); err != nil {
					return nil, "", err
				}
				res, err := s.Wake(ctx, req)
				return res, res.Summary, err
			},
		},
		write,
		{
			stem:        mcp.StemAsk,
			description: "Answer a question from the memory, or say UNKNOWN.",
			schema:      object([]string{"about", "question"}, map[string]any{"about": str(), "question": str(), "budget": budget}),
			run: func(ctx context.Context, tool string, raw json.RawMessage) (any, string, error) {
				var req kmp.AskRequest
				if err := decode(tool, raw, &req); err != nil {
					return nil, "", err
				}
				res, err := s.Ask(ctx, req)
				if res.Summary == "" {
					return res, res.Answer, err
				}
				return res, res.Summary, err
			},
		},
		{
			stem:        mcp.StemInspect,
			description: "Read one entry with its links and evidence.",
			schema:      object([]string{"about", "ref"}, map[string]any{"about": str(), "ref": str()}),
			run: func(ctx context.Context, tool string, raw json.RawMessage) (any, string, error) {
				var req kmp.InspectRequest
				if err := decode(tool, raw, &req); err != nil {
					return nil, "", err
				}
				res, err := s.Inspect(ctx, req)
				return res, res.Summary, err
			},
		},
		{
			stem:        mcp.StemRewind,
			description: "List an about's entries, newest first.",
			schema: object([]string{"about", "from"}, map[string]any{
				"about": str(),
				"from":  map[string]any{"type": "object", "properties": map[string]any{"time": str()}},
				"limit": map[string]any{"type": "object", "properties": map[string]any{"entries": integer()}},
			}),
			run: func(ctx context.Context, tool string, raw json.RawMessage) (any, string, error) {
				return rewind(ctx, s, tool, raw)
			},
		},
	}
}

func object(required []string, properties map[string]any) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": required, "properties": properties}
}

func str() map[string]any     { return map[string]any{"type": "string"} }
func integer() map[string]any { return map[string]any{"type": "integer", "minimum": 0} }
func array() map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"type": "object"}}
}

// rewindArgs are kmp_rewind's arguments the store can answer: the cursor
// is required and checked, but the store's List always starts at the
// newest entry.
type rewindArgs struct {
	About string `json:"about"`
	From  *struct {
		Time string `json:"time"`
	} `json:"from"`
	Limit struct {
		Entries int `json:"entries"`
	} `json:"limit"`
}

func rewind(ctx context.Context, s kmp.Store, tool string, raw json.RawMessage) (any, string, error) {
	var args rewindArgs
	if err := decode(tool, raw, &args); err != nil {
		return nil, "", err
	}
	if args.From == nil {
		return nil, "", kmp.Errorf(kmp.CodeInvalid, "%s: from is required", tool)
	}
	if _, err := time.Parse(time.RFC3339Nano, args.From.Time); err != nil {
		return nil, "", kmp.Errorf(kmp.CodeInvalid, "%s: from.time %q must be an RFC 3339 time", tool, args.From.Time)
	}
	res, err := s.List(ctx, kmp.ListRequest{About: args.About, Limit: args.Limit.Entries})
	if err != nil {
		return nil, "", err
	}
	if res.Entries == nil {
		res.Entries = []kmp.Object{}
	}
	// kmp.ListResult is kmp_rewind's {entries, page}.
	return res, fmt.Sprintf("%d of %d entries of %s, newest first", res.Page.Returned, res.Page.Total, args.About), nil
}

// kernelWriteArgs are v0.1.11's kernel_write_memory arguments.
type kernelWriteArgs struct {
	About      string `json:"about"`
	Intent     string `json:"intent"`
	Actor      string `json:"actor"`
	ObservedAt string `json:"observed_at"`
	Scope      struct {
		Process string `json:"process"`
		Task    string `json:"task"`
		Episode string `json:"episode"`
	} `json:"scope"`
	Current struct {
		Kind     string `json:"kind"`
		Summary  string `json:"summary"`
		Evidence string `json:"evidence"`
	} `json:"current"`
	ConnectTo      []kmp.Link `json:"connect_to"`
	IdempotencyKey string     `json:"idempotency_key"`
}

// kernelWriteResult is the part of kernel_write_memory's result the
// client reads: generated_refs starts with the memory's ref.
type kernelWriteResult struct {
	Accepted      bool     `json:"accepted"`
	GeneratedRefs []string `json:"generated_refs"`
}

// kernelWrite checks the older shape (intent, observed_at, scope.process)
// and writes its one memory as KernelMemoryID.
func kernelWrite(ctx context.Context, s kmp.Store, tool string, raw json.RawMessage) (any, string, error) {
	var args kernelWriteArgs
	if err := decode(tool, raw, &args); err != nil {
		return nil, "", err
	}
	want, ok := mcp.KernelIntent(args.Current.Kind)
	switch {
	case !ok:
		return nil, "", kmp.Errorf(kmp.CodeInvalid, "%s: current.kind %q is not one of %s", tool, args.Current.Kind, strings.Join(kmp.Kinds, ", "))
	case args.Intent != want:
		return nil, "", kmp.Errorf(kmp.CodeInvalid, "%s: intent %q does not record a %s memory (%s does)", tool, args.Intent, args.Current.Kind, want)
	case strings.TrimSpace(args.Scope.Process) == "":
		return nil, "", kmp.Errorf(kmp.CodeInvalid, "%s: scope.process is required", tool)
	}
	if _, err := time.Parse(time.RFC3339Nano, args.ObservedAt); err != nil {
		return nil, "", kmp.Errorf(kmp.CodeInvalid, "%s: observed_at %q must be an RFC 3339 time", tool, args.ObservedAt)
	}
	m := kmp.Memory{ID: KernelMemoryID, Kind: args.Current.Kind, Summary: args.Current.Summary, Evidence: args.Current.Evidence}
	if len(args.ConnectTo) > 0 {
		m.ConnectTo = args.ConnectTo
	}
	res, err := s.Write(ctx, kmp.WriteRequest{About: args.About, Actor: args.Actor, IdempotencyKey: args.IdempotencyKey, Memories: []kmp.Memory{m}})
	if err != nil {
		return nil, "", err
	}
	out := kernelWriteResult{Accepted: res.Accepted, GeneratedRefs: []string{}}
	ref := res.LocalRefs[KernelMemoryID]
	if ref != "" {
		out.GeneratedRefs = append(out.GeneratedRefs, ref)
	}
	for _, r := range res.GeneratedRefs {
		if r != ref {
			out.GeneratedRefs = append(out.GeneratedRefs, r)
		}
	}
	return out, res.Summary, nil
}

// decode reads a tool's arguments into v strictly: a JSON object whose
// every field v has.
func decode(tool string, raw json.RawMessage, v any) error {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
		return kmp.Errorf(kmp.CodeInvalid, "%s: arguments must be a JSON object", tool)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return kmp.Errorf(kmp.CodeInvalid, "%s: arguments: %s", tool, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// toolHandler turns a tool's run into kmp-mcp's envelopes.
func toolHandler(tool string, run runFunc) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		payload, summary, err := run(ctx, tool, req.Params.Arguments)
		if err != nil {
			return failure(err), nil
		}
		structured, err := json.Marshal(payload)
		if err != nil {
			return failure(kmp.Errorf(kmp.CodeBackend, "encode %s result: %v", tool, err)), nil
		}
		return &mcpsdk.CallToolResult{
			Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: summary}},
			StructuredContent: json.RawMessage(structured),
		}, nil
	}
}

// failure is the envelope of err: its *kmp.Error's code and message, or
// backend_error with its text.
func failure(err error) *mcpsdk.CallToolResult {
	code, message := kmp.CodeBackend, err.Error()
	var ke *kmp.Error
	if errors.As(err, &ke) {
		code, message = ke.Code, ke.Message
	}
	return &mcpsdk.CallToolResult{
		Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: message}},
		StructuredContent: map[string]any{
			"error": map[string]any{"code": string(code), "message": message},
		},
		IsError: true,
	}
}

// envelope is a tools/call result as kmp-mcp writes it: isError present
// even when false (the go-sdk's CallToolResult omits a false one).
type envelope struct {
	mcpsdk.ResultBase
	Content           []mcpsdk.Content `json:"content"`
	StructuredContent any              `json:"structuredContent"`
	IsError           bool             `json:"isError"`
}

// explicitIsError sends every tool result as an envelope.
func explicitIsError(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcpsdk.CallToolResult); ok && err == nil && method == "tools/call" {
			return &envelope{
				ResultBase:        mcpsdk.ResultBase{Meta: r.Meta},
				Content:           r.Content,
				StructuredContent: r.StructuredContent,
				IsError:           r.IsError,
			}, nil
		}
		return res, err
	}
}
