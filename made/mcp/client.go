// Package mcp is the client for made-mcp: a made.Engine that calls
// made-mcp's tools over MCP, on a made-mcp it starts as a child over stdio
// (Start) or on a transport it is given (Connect). It owns the wire:
// made-mcp's tool names, argument shapes and result payloads, and reading a
// failure's kind from made-mcp's message (ClassifyMessage).
//
// It leaves to callers what made-mcp needs around it (the child's
// environment and working directory, where its store lives), retrying, and
// restarting a child that died: a dead child's calls fail as
// made.KindUnavailable.
package mcp

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
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/underpass-ai/axlr/made"
)

// made-mcp's tool names, one per made.Engine verb.
const (
	ToolPublishDefinition = "made_publish_ceremony_definition"
	ToolStartPublished    = "made_start_published_ceremony"
	ToolGetInstance       = "made_get_ceremony_instance"
	ToolListInstances     = "made_list_ceremony_instances"
	ToolClaimStep         = "made_claim_ceremony_step"
	ToolCompleteStep      = "made_complete_ceremony_step"
	ToolApplyTransition   = "made_apply_ceremony_transition"
	ToolApproveGuard      = "made_approve_ceremony_guard"
	ToolDeferGuard        = "made_defer_ceremony_guard"
)

// ProtocolVersion is the MCP protocol version made-mcp speaks; the client
// asks for it in the handshake.
const ProtocolVersion = "2024-11-05"

// DefaultCallTimeout bounds a tool call when Options.CallTimeout is 0.
const DefaultCallTimeout = 30 * time.Second

// Options says how to start made-mcp.
type Options struct {
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
	// by Start's context.
	CallTimeout time.Duration
}

// Client is a made.Engine backed by a made-mcp server over MCP. Tool errors
// become *made.Error with made-mcp's message and a kind read from it
// (ClassifyMessage); transport failures (the process died, a broken pipe, a
// call timeout) become *made.Error of kind made.KindUnavailable. It never
// retries: a claim is not idempotent in made-mcp, and retrying is the
// caller's decision (see made.ClaimOnce). It is safe for concurrent use.
type Client struct {
	session *mcpsdk.ClientSession
	timeout time.Duration
}

var _ made.Engine = (*Client)(nil)

// Start starts made-mcp and performs the MCP handshake. ctx bounds the
// handshake only: the child lives until Close. A child that cannot be
// started or does not complete the handshake is a *made.Error of kind
// made.KindUnavailable.
func Start(ctx context.Context, opts Options) (*Client, error) {
	if strings.TrimSpace(opts.Command) == "" {
		return nil, errors.New("start made-mcp: mcp.Options.Command is empty")
	}
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("start made-mcp: mcp.Options.CallTimeout is negative (%s)", opts.CallTimeout)
	}
	cmd := exec.Command(opts.Command, opts.Args...)
	cmd.Env = opts.Env
	cmd.Dir = opts.Dir
	cmd.Stderr = opts.Stderr
	c, err := connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, opts.CallTimeout)
	if err != nil {
		return nil, unavailable(fmt.Sprintf("start %s", opts.Command), err)
	}
	return c, nil
}

// Connect performs the MCP handshake over an existing transport (tests
// use the go-sdk's mcp.NewInMemoryTransports) and bounds each call by
// DefaultCallTimeout.
func Connect(ctx context.Context, t mcpsdk.Transport) (*Client, error) {
	c, err := connect(ctx, t, 0)
	if err != nil {
		return nil, unavailable("connect", err)
	}
	return c, nil
}

func connect(ctx context.Context, t mcpsdk.Transport, timeout time.Duration) (*Client, error) {
	if timeout == 0 {
		timeout = DefaultCallTimeout
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "axlr", Version: "1"}, nil)
	session, err := client.Connect(ctx, t, &mcpsdk.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, err
	}
	return &Client{session: session, timeout: timeout}, nil
}

// Close ends the session; for a started made-mcp it closes the child's stdin
// and waits for it to exit (terminating it if it does not).
func (c *Client) Close() error {
	if err := c.session.Close(); err != nil {
		return fmt.Errorf("close made-mcp session: %w", err)
	}
	return nil
}

// Publish implements made.Engine (made_publish_ceremony_definition). A
// version_occupied outcome is a *made.ConflictError naming the ceremony and
// version read from the YAML.
func (c *Client) Publish(ctx context.Context, definitionYAML []byte) (made.Published, error) {
	var out struct {
		made.Published
		PublishedDigest string `json:"published_digest"`
		OfferedDigest   string `json:"offered_digest"`
	}
	args := map[string]any{"definition_yaml": string(definitionYAML)}
	if err := c.call(ctx, ToolPublishDefinition, args, &out); err != nil {
		return made.Published{}, err
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
		return made.Published{}, &made.ConflictError{
			Ceremony:        strings.TrimSpace(id.Name),
			Version:         strings.TrimSpace(id.Version),
			PublishedDigest: out.PublishedDigest,
			OfferedDigest:   out.OfferedDigest,
		}
	default:
		return made.Published{}, fmt.Errorf("call made-mcp %s: unknown outcome %q", ToolPublishDefinition, out.Outcome)
	}
}

// StartPublished implements made.Engine (made_start_published_ceremony).
func (c *Client) StartPublished(ctx context.Context, req made.StartRequest) (made.Instance, error) {
	args := map[string]any{
		"ceremony":   req.Ceremony,
		"version":    req.Version,
		"actor_id":   req.ActorID,
		"actor_kind": string(req.ActorKind),
	}
	optional(args, "ceremony_id", req.CeremonyID)
	if len(req.Context) > 0 {
		args["context"] = req.Context
	}
	return c.instance(ctx, ToolStartPublished, args)
}

// Get implements made.Engine (made_get_ceremony_instance).
func (c *Client) Get(ctx context.Context, ceremonyID string) (made.Instance, error) {
	return c.instance(ctx, ToolGetInstance, map[string]any{"ceremony_id": ceremonyID})
}

// List implements made.Engine (made_list_ceremony_instances).
func (c *Client) List(ctx context.Context) ([]made.ListEntry, error) {
	var out struct {
		Instances []json.RawMessage `json:"instances"`
	}
	if err := c.call(ctx, ToolListInstances, map[string]any{}, &out); err != nil {
		return nil, err
	}
	entries := make([]made.ListEntry, 0, len(out.Instances))
	for _, raw := range out.Instances {
		var probe struct {
			CeremonyID   string `json:"ceremony_id"`
			Rehydratable *bool  `json:"rehydratable"`
			Reason       string `json:"reason"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, fmt.Errorf("decode made-mcp %s entry: %w", ToolListInstances, err)
		}
		if probe.Rehydratable != nil && !*probe.Rehydratable {
			entries = append(entries, made.ListEntry{CeremonyID: probe.CeremonyID, Reason: probe.Reason})
			continue
		}
		var in made.Instance
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, fmt.Errorf("decode made-mcp %s entry %s: %w", ToolListInstances, probe.CeremonyID, err)
		}
		entries = append(entries, made.ListEntry{CeremonyID: in.CeremonyID, Instance: &in})
	}
	return entries, nil
}

// Claim implements made.Engine (made_claim_ceremony_step). LeaseTTL travels in
// milliseconds, rounded up; a negative one is refused as made-mcp would.
func (c *Client) Claim(ctx context.Context, req made.ClaimRequest) (made.Instance, error) {
	if req.LeaseTTL < 0 {
		return made.Instance{}, &made.Error{Kind: made.KindInvalid, Message: "field `lease_ttl_ms` must be a non-negative integer"}
	}
	args := map[string]any{
		"ceremony_id": req.CeremonyID,
		"step_id":     req.StepID,
		"actor_kind":  string(req.ActorKind),
	}
	optional(args, "lease_owner_id", req.LeaseOwnerID)
	optional(args, "idempotency_key", req.IdempotencyKey)
	if req.LeaseTTL > 0 {
		args["lease_ttl_ms"] = (req.LeaseTTL + time.Millisecond - 1) / time.Millisecond
	}
	return c.instance(ctx, ToolClaimStep, args)
}

// Complete implements made.Engine (made_complete_ceremony_step).
func (c *Client) Complete(ctx context.Context, req made.CompleteRequest) (made.Instance, error) {
	args := map[string]any{
		"ceremony_id": req.CeremonyID,
		"step_id":     req.StepID,
		"actor_kind":  string(req.ActorKind),
		"status":      string(req.Status),
	}
	if len(req.Output) > 0 {
		args["output"] = req.Output
	}
	optional(args, "error", req.Error)
	return c.instance(ctx, ToolCompleteStep, args)
}

// ApplyTransition implements made.Engine (made_apply_ceremony_transition).
func (c *Client) ApplyTransition(ctx context.Context, req made.TransitionRequest) (made.Instance, error) {
	return c.instance(ctx, ToolApplyTransition, map[string]any{
		"ceremony_id": req.CeremonyID,
		"trigger":     req.Trigger,
		"actor_kind":  string(req.ActorKind),
	})
}

// ApproveGuard implements made.Engine (made_approve_ceremony_guard).
func (c *Client) ApproveGuard(ctx context.Context, req made.ApproveRequest) (made.Instance, error) {
	return c.instance(ctx, ToolApproveGuard, map[string]any{
		"ceremony_id": req.CeremonyID,
		"guard_name":  req.GuardName,
		"role_id":     req.RoleID,
		"role_kind":   string(req.RoleKind),
	})
}

// DeferGuard implements made.Engine (made_defer_ceremony_guard).
func (c *Client) DeferGuard(ctx context.Context, req made.DeferRequest) (made.Instance, error) {
	reconsider := req.ReconsiderWhen
	if reconsider == nil {
		reconsider = []string{}
	}
	return c.instance(ctx, ToolDeferGuard, map[string]any{
		"ceremony_id":     req.CeremonyID,
		"guard_name":      req.GuardName,
		"role_id":         req.RoleID,
		"role_kind":       string(req.RoleKind),
		"statement":       req.Statement,
		"reason":          req.Reason,
		"reconsider_when": reconsider,
	})
}

func (c *Client) instance(ctx context.Context, tool string, args map[string]any) (made.Instance, error) {
	var in made.Instance
	if err := c.call(ctx, tool, args, &in); err != nil {
		return made.Instance{}, err
	}
	return in, nil
}

// call runs one tool and decodes its payload into out: structuredContent,
// or the text content when a server sends no structuredContent.
func (c *Client) call(ctx context.Context, tool string, args map[string]any, out any) error {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.session.CallTool(cctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return c.callError(ctx, cctx, tool, err)
	}
	text := resultText(res)
	if res.IsError {
		return &made.Error{Kind: ClassifyMessage(text), Message: text}
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
func (c *Client) callError(ctx, cctx context.Context, tool string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("call made-mcp %s: %w", tool, context.Cause(ctx))
	}
	if cctx.Err() != nil {
		return unavailable(tool, fmt.Errorf("no answer within %s", c.timeout))
	}
	var wire *jsonrpc.Error
	if !errors.Is(err, mcpsdk.ErrConnectionClosed) && errors.As(err, &wire) {
		return &made.Error{Kind: made.KindInvalid, Message: fmt.Sprintf("made-mcp refused %s: %s", tool, wire.Message)}
	}
	return unavailable(tool, err)
}

func unavailable(op string, err error) *made.Error {
	return &made.Error{Kind: made.KindUnavailable, Message: fmt.Sprintf("made-mcp unavailable: %s: %v", op, err)}
}

func optional(args map[string]any, field, value string) {
	if value != "" {
		args[field] = value
	}
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
