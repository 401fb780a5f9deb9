// Package mcp is the client for kmp-mcp: a kmp.Store that calls kmp-mcp's
// tools over MCP, on a kmp-mcp it starts as a child over stdio (Start) or
// on a transport it is given (Connect). It owns the wire: the tool names
// (the newer kmp_* ones or v0.1.11's kernel_* ones, resolved from
// tools/list), the argument shapes (kmp_write_memory's, or v0.1.11's older
// kernel_write_memory shape), reading structuredContent, and turning
// kmp-mcp's error envelope into *kmp.Error.
//
// It leaves to callers what kmp-mcp needs around it (the child's
// environment: KMP_MCP_BACKEND, an absolute KMP_MCP_DATA_DIR), retrying,
// and restarting a child that died: a dead child's calls fail with
// kmp.CodeUnavailable.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/kmp"
)

// The namings of kmp-mcp's tools: the prefix before a tool's stem.
const (
	// NamingKMP is the newer releases' naming (kmp_wake, …), the one
	// AXLR's pinned kmp-mcp serves.
	NamingKMP = "kmp"
	// NamingKernel is v0.1.11's naming (kernel_wake, …).
	NamingKernel = "kernel"
)

// The stems of the tools the client calls, one per kmp.Store verb (List
// is rewind). ToolName joins a naming and a stem.
const (
	StemWake    = "wake"
	StemWrite   = "write_memory"
	StemAsk     = "ask"
	StemInspect = "inspect"
	StemRewind  = "rewind"
)

// ToolName returns a tool's name under a naming: ToolName(NamingKMP,
// StemWake) is "kmp_wake".
func ToolName(naming, stem string) string { return naming + "_" + stem }

// ProtocolVersion is the MCP protocol version kmp-mcp speaks; the client
// asks for it in the handshake.
const ProtocolVersion = "2024-11-05"

// DefaultCallTimeout bounds a tool call when Options.CallTimeout is 0.
const DefaultCallTimeout = 30 * time.Second

// StatusRejected is the status of a kernel_* write kmp-mcp did not
// accept (v0.1.11 answers only accepted: false), the newer shape's word.
const StatusRejected = "rejected"

// Process is the scope.process the client gives v0.1.11's
// kernel_write_memory.
const Process = "axlr"

// Options says how to start kmp-mcp.
type Options struct {
	// Command is the kmp-mcp executable. Required.
	Command string
	// Args are its arguments; default none (kmp-mcp serves MCP without
	// any).
	Args []string
	// Env is the child's complete environment, built by the caller
	// (KMP_MCP_BACKEND=embedded, KMP_MCP_DATA_DIR=<absolute path>, …);
	// nil: this process's environment.
	Env []string
	// Dir is the child's working directory; empty: this process's.
	Dir string
	// Stderr receives the child's stderr (its JSON logs); nil discards it.
	Stderr io.Writer
	// CallTimeout bounds each tool call; 0: 30 s. The handshake and
	// tools/list are bounded by Start's context.
	CallTimeout time.Duration
}

// Client is a kmp.Store backed by a kmp-mcp server over MCP. A tool error
// is a *kmp.Error with kmp-mcp's code and message; a transport failure (the
// process died, a broken pipe, a call timeout) is a *kmp.Error with
// kmp.CodeUnavailable naming the tool; a tool the server does not have is
// kmp.CodeUnknownTool. It never retries: retrying is the caller's decision
// (kmp.Retryable). It is safe for concurrent use.
type Client struct {
	session *mcpsdk.ClientSession
	timeout time.Duration
	naming  string
}

var _ kmp.Store = (*Client)(nil)

// Start starts kmp-mcp, performs the MCP handshake and resolves the tool
// names from tools/list. ctx bounds those only: the child lives until
// Close. A child that cannot be started or does not complete the handshake
// is a kmp.CodeUnavailable *kmp.Error; one listing neither kmp_wake nor
// kernel_wake is a kmp.CodeUnknownTool *kmp.Error, and is stopped.
func Start(ctx context.Context, opts Options) (*Client, error) {
	if strings.TrimSpace(opts.Command) == "" {
		return nil, errors.New("start kmp-mcp: mcp.Options.Command is empty")
	}
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("start kmp-mcp: mcp.Options.CallTimeout is negative (%s)", opts.CallTimeout)
	}
	cmd := exec.Command(opts.Command, opts.Args...)
	cmd.Env = opts.Env
	cmd.Dir = opts.Dir
	cmd.Stderr = opts.Stderr
	return connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, "start "+opts.Command, opts.CallTimeout)
}

// Connect performs the MCP handshake over an existing transport (tests
// use the go-sdk's mcp.NewInMemoryTransports), resolves the tool names as
// Start does, and bounds each call by DefaultCallTimeout.
func Connect(ctx context.Context, t mcpsdk.Transport) (*Client, error) {
	return connect(ctx, t, "connect", 0)
}

func connect(ctx context.Context, t mcpsdk.Transport, op string, timeout time.Duration) (*Client, error) {
	if timeout == 0 {
		timeout = DefaultCallTimeout
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "axlr", Version: "1"}, nil)
	session, err := client.Connect(ctx, t, &mcpsdk.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, unavailable(op, err)
	}
	naming, err := resolveNaming(ctx, session)
	if err != nil {
		_ = session.Close()
		return nil, err
	}
	return &Client{session: session, timeout: timeout, naming: naming}, nil
}

// resolveNaming reads tools/list: kmp_wake listed means the kmp_* names,
// else kernel_wake listed means the kernel_* names.
func resolveNaming(ctx context.Context, session *mcpsdk.ClientSession) (string, error) {
	var listed []string
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return "", unavailable("tools/list", err)
		}
		listed = append(listed, tool.Name)
	}
	for _, naming := range []string{NamingKMP, NamingKernel} {
		if slices.Contains(listed, ToolName(naming, StemWake)) {
			return naming, nil
		}
	}
	names := "none"
	if len(listed) > 0 {
		names = strings.Join(listed, ", ")
	}
	return "", kmp.Errorf(kmp.CodeUnknownTool, "kmp-mcp lists neither %s nor %s (it lists %s)",
		ToolName(NamingKMP, StemWake), ToolName(NamingKernel, StemWake), names)
}

// Naming returns the naming the server's tools/list resolved to: NamingKMP
// or NamingKernel.
func (c *Client) Naming() string { return c.naming }

// Close ends the session; for a started kmp-mcp it closes the child's stdin
// and waits for it to exit (terminating it if it does not).
func (c *Client) Close() error {
	if err := c.session.Close(); err != nil {
		return fmt.Errorf("close kmp-mcp session: %w", err)
	}
	return nil
}

// Wake implements kmp.Store (kmp_wake).
func (c *Client) Wake(ctx context.Context, req kmp.WakeRequest) (kmp.WakeResult, error) {
	var out kmp.WakeResult
	err := c.call(ctx, c.tool(StemWake), req, &out)
	return out, err
}

// Ask implements kmp.Store (kmp_ask).
func (c *Client) Ask(ctx context.Context, req kmp.AskRequest) (kmp.AskResult, error) {
	var out kmp.AskResult
	err := c.call(ctx, c.tool(StemAsk), req, &out)
	return out, err
}

// Inspect implements kmp.Store (kmp_inspect).
func (c *Client) Inspect(ctx context.Context, req kmp.InspectRequest) (kmp.InspectResult, error) {
	var out kmp.InspectResult
	err := c.call(ctx, c.tool(StemInspect), req, &out)
	return out, err
}

// rewindArgs are kmp_rewind's arguments as List sends them.
type rewindArgs struct {
	About string       `json:"about"`
	From  rewindCursor `json:"from"`
	Limit rewindLimit  `json:"limit"`
}

type rewindCursor struct {
	Time string `json:"time"`
}

type rewindLimit struct {
	Entries int `json:"entries"`
}

// List implements kmp.Store with kmp_rewind from now: kmp-mcp has no
// listing by kind, so a kind is kept here, out of the newest
// kmp.MaxListLimit entries. The page of a kind's listing counts what those
// entries hold (Total is a lower bound when kmp-mcp had more of them).
func (c *Client) List(ctx context.Context, req kmp.ListRequest) (kmp.ListResult, error) {
	tool := c.tool(StemRewind)
	limit := req.Limit
	switch {
	case limit == 0:
		limit = kmp.DefaultListLimit
	case limit < 0 || limit > kmp.MaxListLimit:
		return kmp.ListResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: limit is %d, not between 1 and %d", tool, req.About, req.Limit, kmp.MaxListLimit)
	}
	if req.Kind != "" && !kmp.KnownKind(req.Kind) {
		return kmp.ListResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: kind %q is not one of %s", tool, req.About, req.Kind, strings.Join(kmp.Kinds, ", "))
	}
	args := rewindArgs{About: req.About, From: rewindCursor{Time: time.Now().UTC().Format(time.RFC3339Nano)}, Limit: rewindLimit{Entries: limit}}
	if req.Kind != "" {
		args.Limit.Entries = kmp.MaxListLimit
	}
	var out kmp.ListResult
	if err := c.call(ctx, tool, args, &out); err != nil {
		return kmp.ListResult{}, err
	}
	entries := out.Entries
	page := out.Page
	if req.Kind != "" {
		entries = slices.DeleteFunc(entries, func(o kmp.Object) bool { return o.Kind != req.Kind })
		page = kmp.Page{Total: len(entries), HasMore: out.Page.HasMore}
	}
	if len(entries) > limit {
		entries = entries[:limit]
		page.HasMore = true
	}
	if entries == nil {
		entries = []kmp.Object{}
	}
	page.Returned = len(entries)
	page.HasMore = page.HasMore || page.Returned < page.Total
	return kmp.ListResult{Entries: entries, Page: page}, nil
}

// Write implements kmp.Store: kmp_write_memory with the request as it is,
// or, under NamingKernel, writeKernel.
func (c *Client) Write(ctx context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	if c.naming == NamingKernel {
		return c.writeKernel(ctx, req)
	}
	var out kmp.WriteResult
	err := c.call(ctx, c.tool(StemWrite), req, &out)
	return out, err
}

// kernelWrite is v0.1.11's kernel_write_memory arguments: one memory.
type kernelWrite struct {
	About          string        `json:"about"`
	Intent         string        `json:"intent"`
	Actor          string        `json:"actor"`
	ObservedAt     string        `json:"observed_at"`
	Scope          kernelScope   `json:"scope"`
	Current        kernelCurrent `json:"current"`
	ConnectTo      []kmp.Link    `json:"connect_to"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
}

type kernelScope struct {
	Process string `json:"process"`
}

type kernelCurrent struct {
	Kind     string `json:"kind"`
	Summary  string `json:"summary"`
	Evidence string `json:"evidence"`
}

// kernelWritten is the part of kernel_write_memory's result the client
// reads.
type kernelWritten struct {
	Accepted      bool     `json:"accepted"`
	GeneratedRefs []string `json:"generated_refs"`
}

// KernelIntent returns the intent v0.1.11's kernel_write_memory records a
// memory of kind with, and whether kind has one.
func KernelIntent(kind string) (string, bool) {
	switch kind {
	case kmp.KindTurn:
		return "record_turn", true
	case kmp.KindObservation, kmp.KindErrorPath, kmp.KindSuccessPath, kmp.KindConstraint,
		kmp.KindPreference, kmp.KindDerivedValue:
		return "record_observation", true
	case kmp.KindDecision:
		return "record_decision", true
	case kmp.KindFeedback:
		return "record_feedback", true
	case kmp.KindSemanticDelta:
		return "record_delta", true
	default:
		return "", false
	}
}

// writeKernel writes req in v0.1.11's older shape: one kernel_write_memory
// per memory, in order, each observed now under scope.process "axlr", its
// idempotency key suffixed ":<local id>" when there are several. A link to
// an earlier memory of the write (its local id or @id) is sent as that
// memory's ref. The older shape has no relations write, no dry run, and no
// labels or source kind (those are not sent). It stops at the first memory
// not accepted (StatusRejected). The memories before a failure stay
// written, and a retry with the same key replays them.
func (c *Client) writeKernel(ctx context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	tool := c.tool(StemWrite)
	switch {
	case len(req.Relations) > 0:
		return kmp.WriteResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: the older kernel_* naming has no relations write (%d relations)", tool, req.About, len(req.Relations))
	case len(req.Memories) == 0:
		return kmp.WriteResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: no memories to write", tool, req.About)
	case req.Options != nil && req.Options.DryRun:
		return kmp.WriteResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: the older kernel_* naming has no dry run", tool, req.About)
	}
	ids := make(map[string]bool, len(req.Memories))
	for _, m := range req.Memories {
		if ids[m.ID] {
			return kmp.WriteResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: two memories have the local id %q", tool, req.About, m.ID)
		}
		ids[m.ID] = true
	}
	written := make(map[string]bool, len(req.Memories))
	calls := make([]kernelWrite, 0, len(req.Memories))
	for _, m := range req.Memories {
		intent, ok := KernelIntent(m.Kind)
		if !ok {
			return kmp.WriteResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: memory %q has kind %q, not one of %s", tool, req.About, m.ID, m.Kind, strings.Join(kmp.Kinds, ", "))
		}
		for _, l := range m.ConnectTo {
			if local := strings.TrimPrefix(l.Ref, "@"); ids[local] && !written[local] {
				return kmp.WriteResult{}, kmp.Errorf(kmp.CodeInvalid, "%s of %q: memory %q links to %q, which is not written before it (the kernel_* naming writes one memory at a time, in order)", tool, req.About, m.ID, l.Ref)
			}
		}
		written[m.ID] = true
		key := req.IdempotencyKey
		if key != "" && len(req.Memories) > 1 {
			key += ":" + m.ID
		}
		connect := slices.Clone(m.ConnectTo)
		if connect == nil {
			connect = []kmp.Link{}
		}
		calls = append(calls, kernelWrite{
			About: req.About, Intent: intent, Actor: req.Actor,
			Scope:          kernelScope{Process: Process},
			Current:        kernelCurrent{Kind: m.Kind, Summary: m.Summary, Evidence: m.Evidence},
			ConnectTo:      connect,
			IdempotencyKey: key,
		})
	}
	res := kmp.WriteResult{Accepted: true, Status: kmp.StatusCommitted, LocalRefs: map[string]string{}, GeneratedRefs: []string{}}
	for i, args := range calls {
		id := req.Memories[i].ID
		for j, l := range args.ConnectTo {
			if local := strings.TrimPrefix(l.Ref, "@"); ids[local] {
				ref := res.LocalRefs[local]
				if ref == "" {
					return kmp.WriteResult{}, kmp.Errorf(kmp.CodeBackend, "%s of %q: memory %q was accepted with no generated ref, so memory %q cannot link to it", tool, req.About, local, id)
				}
				args.ConnectTo[j].Ref = ref
			}
		}
		args.ObservedAt = time.Now().UTC().Format(time.RFC3339Nano)
		var out kernelWritten
		if err := c.call(ctx, tool, args, &out); err != nil {
			return kmp.WriteResult{}, err
		}
		res.GeneratedRefs = append(res.GeneratedRefs, out.GeneratedRefs...)
		if len(out.GeneratedRefs) > 0 {
			res.LocalRefs[id] = out.GeneratedRefs[0]
		}
		if !out.Accepted {
			res.Accepted, res.Status = false, StatusRejected
			return res, nil
		}
	}
	return res, nil
}

func (c *Client) tool(stem string) string { return ToolName(c.naming, stem) }

// errorEnvelope is a failure's structuredContent.
type errorEnvelope struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call runs one tool and decodes its structuredContent into out. A result
// with isError is the *kmp.Error its envelope carries.
func (c *Client) call(ctx context.Context, tool string, args, out any) error {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.session.CallTool(cctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return c.callError(ctx, cctx, tool, err)
	}
	var payload []byte
	if res.StructuredContent != nil {
		if payload, err = json.Marshal(res.StructuredContent); err != nil {
			return kmp.Errorf(kmp.CodeBackend, "decode kmp-mcp %s result: %v", tool, err)
		}
	}
	if res.IsError {
		return toolError(tool, payload, resultText(res))
	}
	if payload == nil {
		return kmp.Errorf(kmp.CodeBackend, "decode kmp-mcp %s result: no structuredContent", tool)
	}
	if err := json.Unmarshal(payload, out); err != nil {
		return kmp.Errorf(kmp.CodeBackend, "decode kmp-mcp %s result: %v", tool, err)
	}
	return nil
}

// toolError reads a failure's envelope: structuredContent.error's code and
// message; the text block when it carries no message; the code read from
// the message when it carries none (or one this client does not know).
func toolError(tool string, payload []byte, text string) *kmp.Error {
	var env errorEnvelope
	if payload != nil {
		// A payload that is no envelope leaves the text to speak.
		_ = json.Unmarshal(payload, &env)
	}
	message := env.Error.Message
	if message == "" {
		message = text
	}
	if message == "" {
		message = tool + " failed and said nothing"
	}
	code := kmp.Code(env.Error.Code)
	if !knownCode(code) {
		code = CodeFromMessage(message)
	}
	return &kmp.Error{Code: code, Message: message}
}

func knownCode(c kmp.Code) bool {
	switch c {
	case kmp.CodeInvalid, kmp.CodeNotFound, kmp.CodeConflict, kmp.CodeUnavailable, kmp.CodeUnknownTool, kmp.CodeBackend:
		return true
	}
	return false
}

// CodeFromMessage reads a failure's code from its message as kmp-mcp
// v0.1.11 does, for an envelope that carries no code: "not found" is
// not_found; "invalid", "required" or "must" is invalid_argument; "already
// accepted with different content" or "conflict" is conflict; anything
// else is backend_error. It ignores case.
func CodeFromMessage(message string) kmp.Code {
	m := strings.ToLower(message)
	has := func(words ...string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(m, w) })
	}
	switch {
	case has("not found"):
		return kmp.CodeNotFound
	case has("invalid", "required", "must"):
		return kmp.CodeInvalid
	case has("already accepted with different content", "conflict"):
		return kmp.CodeConflict
	default:
		return kmp.CodeBackend
	}
}

// callError sorts a failed call: the caller's own cancellation stays a
// context error; a JSON-RPC error answer is a tool the server does not have
// (unknown_tool) or a request it refused (invalid_argument); anything else
// (closed connection, broken pipe, this call's timeout) means kmp-mcp cannot
// be reached.
func (c *Client) callError(ctx, cctx context.Context, tool string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("call kmp-mcp %s: %w", tool, context.Cause(ctx))
	}
	if cctx.Err() != nil {
		return unavailable(tool, fmt.Errorf("no answer within %s", c.timeout))
	}
	var wire *jsonrpc.Error
	if errors.Is(err, mcpsdk.ErrConnectionClosed) || !errors.As(err, &wire) {
		return unavailable(tool, err)
	}
	if wire.Code == jsonrpc.CodeMethodNotFound || strings.Contains(strings.ToLower(wire.Message), "unknown tool") {
		return kmp.Errorf(kmp.CodeUnknownTool, "kmp-mcp has no tool %s: %s", tool, wire.Message)
	}
	return kmp.Errorf(kmp.CodeInvalid, "kmp-mcp refused %s: %s", tool, wire.Message)
}

func unavailable(op string, err error) *kmp.Error {
	return kmp.Errorf(kmp.CodeUnavailable, "kmp-mcp unavailable: %s: %v", op, err)
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
