package made

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"
)

// made-mcp's tool names, one per Engine verb.
const (
	MCPToolPublishDefinition = "made_publish_ceremony_definition"
	MCPToolStartPublished    = "made_start_published_ceremony"
	MCPToolGetInstance       = "made_get_ceremony_instance"
	MCPToolListInstances     = "made_list_ceremony_instances"
	MCPToolClaimStep         = "made_claim_ceremony_step"
	MCPToolCompleteStep      = "made_complete_ceremony_step"
	MCPToolApplyTransition   = "made_apply_ceremony_transition"
	MCPToolApproveGuard      = "made_approve_ceremony_guard"
	MCPToolDeferGuard        = "made_defer_ceremony_guard"
)

// MCPProtocolVersion is the MCP protocol version made-mcp speaks; the client
// asks for it in the handshake.
const MCPProtocolVersion = "2024-11-05"

// DefaultMCPCallTimeout bounds a tool call when MCPOptions.CallTimeout is 0.
const DefaultMCPCallTimeout = 30 * time.Second

// MCPOptions says how to start made-mcp.
type MCPOptions struct {
	// Command is the made-mcp executable. Required.
	Command string
	// Args are its arguments; default none (made-mcp serves without any).
	Args []string
	// Env is the child's complete environment, built by the caller
	// (MADE_MCP_BACKEND=embedded, MADE_MCP_REDB_PATH=<absolute path>, …);
	// nil: this process's environment.
	Env []string
	// Dir is the child's working directory; empty: this process's.
	Dir string
	// Stderr receives the child's stderr (its JSON logs); nil discards it.
	Stderr io.Writer
	// CallTimeout bounds each tool call; 0: 30 s. The handshake is bounded
	// by StartMCP's context.
	CallTimeout time.Duration
}

// MCPClient is an Engine backed by a made-mcp server over MCP. Tool errors
// become *Error with made-mcp's message and a kind read from it; transport
// failures (the process died, a broken pipe, a call timeout) become *Error
// of kind KindUnavailable. It never retries: a claim is not idempotent in
// made-mcp, and retrying is the caller's decision (see ClaimOnce). It is
// safe for concurrent use.
type MCPClient struct {
	session *mcp.ClientSession
	timeout time.Duration
}

var _ Engine = (*MCPClient)(nil)

// StartMCP starts made-mcp and performs the MCP handshake. ctx bounds the
// handshake only: the child lives until Close. A child that cannot be
// started or does not complete the handshake is an *Error of kind
// KindUnavailable.
func StartMCP(ctx context.Context, opts MCPOptions) (*MCPClient, error) {
	if strings.TrimSpace(opts.Command) == "" {
		return nil, errors.New("start made-mcp: MCPOptions.Command is empty")
	}
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("start made-mcp: MCPOptions.CallTimeout is negative (%s)", opts.CallTimeout)
	}
	cmd := exec.Command(opts.Command, opts.Args...)
	cmd.Env = opts.Env
	cmd.Dir = opts.Dir
	cmd.Stderr = opts.Stderr
	c, err := mcpConnect(ctx, &mcp.CommandTransport{Command: cmd}, opts.CallTimeout)
	if err != nil {
		return nil, mcpUnavailable(fmt.Sprintf("start %s", opts.Command), err)
	}
	return c, nil
}

// ConnectMCP performs the MCP handshake over an existing transport (tests
// use mcp.NewInMemoryTransports) and bounds each call by
// DefaultMCPCallTimeout.
func ConnectMCP(ctx context.Context, t mcp.Transport) (*MCPClient, error) {
	c, err := mcpConnect(ctx, t, 0)
	if err != nil {
		return nil, mcpUnavailable("connect", err)
	}
	return c, nil
}

func mcpConnect(ctx context.Context, t mcp.Transport, timeout time.Duration) (*MCPClient, error) {
	if timeout == 0 {
		timeout = DefaultMCPCallTimeout
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "axlr", Version: "1"}, nil)
	session, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: MCPProtocolVersion})
	if err != nil {
		return nil, err
	}
	return &MCPClient{session: session, timeout: timeout}, nil
}

// Close ends the session; for a started made-mcp it closes the child's stdin
// and waits for it to exit (terminating it if it does not).
func (c *MCPClient) Close() error {
	if err := c.session.Close(); err != nil {
		return fmt.Errorf("close made-mcp session: %w", err)
	}
	return nil
}

// Publish implements Engine (made_publish_ceremony_definition). A
// version_occupied outcome is a *ConflictError naming the ceremony and
// version read from the YAML.
func (c *MCPClient) Publish(ctx context.Context, definitionYAML []byte) (Published, error) {
	var out struct {
		Published
		PublishedDigest string `json:"published_digest"`
		OfferedDigest   string `json:"offered_digest"`
	}
	args := map[string]any{"definition_yaml": string(definitionYAML)}
	if err := c.call(ctx, MCPToolPublishDefinition, args, &out); err != nil {
		return Published{}, err
	}
	switch out.Outcome {
	case "published", "already_published":
		return out.Published, nil
	case "version_occupied":
		var id struct {
			Name    string `yaml:"name"`
			Version string `yaml:"version"`
		}
		// The payload names no ceremony; the YAML made-mcp just parsed does.
		_ = yaml.Unmarshal(definitionYAML, &id)
		return Published{}, &ConflictError{
			Ceremony:        strings.TrimSpace(id.Name),
			Version:         strings.TrimSpace(id.Version),
			PublishedDigest: out.PublishedDigest,
			OfferedDigest:   out.OfferedDigest,
		}
	default:
		return Published{}, fmt.Errorf("call made-mcp %s: unknown outcome %q", MCPToolPublishDefinition, out.Outcome)
	}
}

// StartPublished implements Engine (made_start_published_ceremony).
func (c *MCPClient) StartPublished(ctx context.Context, req StartRequest) (Instance, error) {
	args := map[string]any{
		"ceremony":   req.Ceremony,
		"version":    req.Version,
		"actor_id":   req.ActorID,
		"actor_kind": string(req.ActorKind),
	}
	mcpOptional(args, "ceremony_id", req.CeremonyID)
	if len(req.Context) > 0 {
		args["context"] = req.Context
	}
	return c.instance(ctx, MCPToolStartPublished, args)
}

// Get implements Engine (made_get_ceremony_instance).
func (c *MCPClient) Get(ctx context.Context, ceremonyID string) (Instance, error) {
	return c.instance(ctx, MCPToolGetInstance, map[string]any{"ceremony_id": ceremonyID})
}

// List implements Engine (made_list_ceremony_instances).
func (c *MCPClient) List(ctx context.Context) ([]ListEntry, error) {
	var out struct {
		Instances []json.RawMessage `json:"instances"`
	}
	if err := c.call(ctx, MCPToolListInstances, map[string]any{}, &out); err != nil {
		return nil, err
	}
	entries := make([]ListEntry, 0, len(out.Instances))
	for _, raw := range out.Instances {
		var probe struct {
			CeremonyID   string `json:"ceremony_id"`
			Rehydratable *bool  `json:"rehydratable"`
			Reason       string `json:"reason"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, fmt.Errorf("decode made-mcp %s entry: %w", MCPToolListInstances, err)
		}
		if probe.Rehydratable != nil && !*probe.Rehydratable {
			entries = append(entries, ListEntry{CeremonyID: probe.CeremonyID, Reason: probe.Reason})
			continue
		}
		var in Instance
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, fmt.Errorf("decode made-mcp %s entry %s: %w", MCPToolListInstances, probe.CeremonyID, err)
		}
		entries = append(entries, ListEntry{CeremonyID: in.CeremonyID, Instance: &in})
	}
	return entries, nil
}

// Claim implements Engine (made_claim_ceremony_step). LeaseTTL travels in
// milliseconds, rounded up; a negative one is refused as made-mcp would.
func (c *MCPClient) Claim(ctx context.Context, req ClaimRequest) (Instance, error) {
	if req.LeaseTTL < 0 {
		return Instance{}, &Error{Kind: KindInvalid, Message: "field `lease_ttl_ms` must be a non-negative integer"}
	}
	args := map[string]any{
		"ceremony_id": req.CeremonyID,
		"step_id":     req.StepID,
		"actor_kind":  string(req.ActorKind),
	}
	mcpOptional(args, "lease_owner_id", req.LeaseOwnerID)
	mcpOptional(args, "idempotency_key", req.IdempotencyKey)
	if req.LeaseTTL > 0 {
		args["lease_ttl_ms"] = (req.LeaseTTL + time.Millisecond - 1) / time.Millisecond
	}
	return c.instance(ctx, MCPToolClaimStep, args)
}

// Complete implements Engine (made_complete_ceremony_step).
func (c *MCPClient) Complete(ctx context.Context, req CompleteRequest) (Instance, error) {
	args := map[string]any{
		"ceremony_id": req.CeremonyID,
		"step_id":     req.StepID,
		"actor_kind":  string(req.ActorKind),
		"status":      string(req.Status),
	}
	if len(req.Output) > 0 {
		args["output"] = req.Output
	}
	mcpOptional(args, "error", req.Error)
	return c.instance(ctx, MCPToolCompleteStep, args)
}

// ApplyTransition implements Engine (made_apply_ceremony_transition).
func (c *MCPClient) ApplyTransition(ctx context.Context, req TransitionRequest) (Instance, error) {
	return c.instance(ctx, MCPToolApplyTransition, map[string]any{
		"ceremony_id": req.CeremonyID,
		"trigger":     req.Trigger,
		"actor_kind":  string(req.ActorKind),
	})
}

// ApproveGuard implements Engine (made_approve_ceremony_guard).
func (c *MCPClient) ApproveGuard(ctx context.Context, req ApproveRequest) (Instance, error) {
	return c.instance(ctx, MCPToolApproveGuard, map[string]any{
		"ceremony_id": req.CeremonyID,
		"guard_name":  req.GuardName,
		"role_id":     req.RoleID,
		"role_kind":   string(req.RoleKind),
	})
}

// DeferGuard implements Engine (made_defer_ceremony_guard).
func (c *MCPClient) DeferGuard(ctx context.Context, req DeferRequest) (Instance, error) {
	reconsider := req.ReconsiderWhen
	if reconsider == nil {
		reconsider = []string{}
	}
	return c.instance(ctx, MCPToolDeferGuard, map[string]any{
		"ceremony_id":     req.CeremonyID,
		"guard_name":      req.GuardName,
		"role_id":         req.RoleID,
		"role_kind":       string(req.RoleKind),
		"statement":       req.Statement,
		"reason":          req.Reason,
		"reconsider_when": reconsider,
	})
}

func (c *MCPClient) instance(ctx context.Context, tool string, args map[string]any) (Instance, error) {
	var in Instance
	if err := c.call(ctx, tool, args, &in); err != nil {
		return Instance{}, err
	}
	return in, nil
}

// call runs one tool and decodes its payload into out: structuredContent,
// or the text content when a server sends no structuredContent.
func (c *MCPClient) call(ctx context.Context, tool string, args map[string]any, out any) error {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.session.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return c.callError(ctx, cctx, tool, err)
	}
	text := mcpText(res)
	if res.IsError {
		return &Error{Kind: ClassifyMessage(text), Message: text}
	}
	payload := []byte(text)
	if res.StructuredContent != nil {
		if payload, err = json.Marshal(res.StructuredContent); err != nil {
			return fmt.Errorf("decode made-mcp %s result: %w", tool, err)
		}
	}
	if err := json.Unmarshal(payload, out); err != nil {
		return fmt.Errorf("decode made-mcp %s result: %w", tool, err)
	}
	return nil
}

// callError sorts a failed call: the caller's own cancellation stays a
// context error, a JSON-RPC error answer is a refused request, and anything
// else (closed connection, broken pipe, this call's timeout) means made-mcp
// cannot be reached.
func (c *MCPClient) callError(ctx, cctx context.Context, tool string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("call made-mcp %s: %w", tool, context.Cause(ctx))
	}
	if cctx.Err() != nil {
		return mcpUnavailable(tool, fmt.Errorf("no answer within %s", c.timeout))
	}
	var wire *jsonrpc.Error
	if !errors.Is(err, mcp.ErrConnectionClosed) && errors.As(err, &wire) {
		return &Error{Kind: KindInvalid, Message: fmt.Sprintf("made-mcp refused %s: %s", tool, wire.Message)}
	}
	return mcpUnavailable(tool, err)
}

func mcpUnavailable(op string, err error) *Error {
	return &Error{Kind: KindUnavailable, Message: fmt.Sprintf("made-mcp unavailable: %s: %v", op, err)}
}

func mcpOptional(args map[string]any, field, value string) {
	if value != "" {
		args[field] = value
	}
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
