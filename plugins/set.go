package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// Limits on what a server advertises. MCP descriptions and schemas are
// untrusted data on their way to a model.
const (
	// MaxDescriptionBytes bounds a tool's description; a longer one is cut
	// at a character boundary and ends with "…".
	MaxDescriptionBytes = 8 << 10
	// MaxSchemaBytes bounds a tool's input and output schemas, encoded; a
	// tool with a larger one is skipped.
	MaxSchemaBytes = 64 << 10
	// MaxTools bounds the tools one server advertises; a server advertising
	// more fails the listing.
	MaxTools = 512
	// maxPages bounds the pages of one listing, against a server whose
	// cursor never ends.
	maxPages = 64
)

// Default timeouts of Options.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 2 * time.Minute
)

// Refusals of Call. Each is wrapped with the plugin and tool it refused.
var (
	// ErrUnknownPlugin: no configured plugin has the id.
	ErrUnknownPlugin = errors.New("unknown plugin")
	// ErrToolNotAllowed: the plugin's manifest does not allow the tool.
	ErrToolNotAllowed = errors.New("tool not allowed by the plugin's manifest")
	// ErrToolNotAdvertised: the server does not currently advertise the
	// tool, or advertises it in a form a listing skips.
	ErrToolNotAdvertised = errors.New("tool not advertised by the plugin's server")
	// ErrClosed: the Set was closed.
	ErrClosed = errors.New("plugin set closed")
)

// HostError is the host's failure to reach a plugin's server: it could not
// be launched or connected, the connection broke, the server answered with
// a protocol error, or did not answer within the timeout (then it wraps
// context.DeadlineExceeded). A call that ends so may or may not have taken
// effect; it is not retried.
type HostError struct {
	Plugin string
	// Op is what failed: "start", "list tools" or "call <tool>".
	Op  string
	Err error
}

func (e *HostError) Error() string {
	return fmt.Sprintf("plugin %s: %s: %v", e.Plugin, e.Op, e.Err)
}

func (e *HostError) Unwrap() error { return e.Err }

// Plugin is one configured plugin.
type Plugin struct {
	Manifest *Manifest
	// Env is the complete environment of a stdio server's child, KEY=VALUE
	// each; nothing is inherited, so nil is an empty environment. An HTTP
	// plugin takes none.
	Env []string
}

// Options configure a Set. The zero value is usable.
type Options struct {
	// Stderr receives stdio servers' stderr; nil discards it.
	Stderr io.Writer
	// Dir is stdio servers' working directory; empty: this process's.
	Dir string
	// HTTPClient reaches Streamable HTTP servers; nil: http.DefaultClient.
	HTTPClient *http.Client
	// ConnectTimeout bounds launching a server and the MCP handshake;
	// 0: DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout bounds each listing and each call; 0: DefaultCallTimeout.
	CallTimeout time.Duration
}

// Tool is a tool a plugin offers: allowed by its manifest and currently
// advertised by its server.
type Tool struct {
	Plugin string
	// Name is the tool's MCP name.
	Name string
	// Canonical is <plugin>/<tool> (Canonical).
	Canonical string
	// Alias is the name a model calls it by (Alias).
	Alias string
	// Description is the server's, at most MaxDescriptionBytes.
	Description string
	// InputSchema is a JSON object of at most MaxSchemaBytes.
	InputSchema json.RawMessage
	// OutputSchema is a JSON object of at most MaxSchemaBytes, or nil.
	OutputSchema json.RawMessage
}

// Skipped is an advertised, allowed tool a listing leaves out, and why.
type Skipped struct {
	Name   string
	Reason string
}

// Listing is what one plugin offers now.
type Listing struct {
	Plugin  string
	Tools   []Tool
	Skipped []Skipped
}

// Result is a completed call. IsError is the server's own verdict: the call
// completed with an error result.
type Result struct {
	Content []mcp.Content
	// StructuredContent is the server's structured result, or nil.
	StructuredContent json.RawMessage
	IsError           bool
}

// Set holds the sessions of configured plugins. A session opens on the
// first use of its plugin and stays open until Close; one whose connection
// breaks is dropped, so the next use opens a new one. Nothing is retried.
// A Set is safe for concurrent use.
type Set struct {
	opts    Options
	order   []string
	plugins map[string]*entry

	mu     sync.Mutex
	closed bool
}

// entry is one plugin and its session.
type entry struct {
	Plugin
	mu      sync.Mutex // held while opening the session
	session *mcp.ClientSession
}

// NewSet checks plugins and options and returns a Set that has opened no
// session yet.
func NewSet(plugins []Plugin, opts Options) (*Set, error) {
	if opts.ConnectTimeout < 0 || opts.CallTimeout < 0 {
		return nil, fmt.Errorf("plugin options: timeouts must not be negative (connect %s, call %s)", opts.ConnectTimeout, opts.CallTimeout)
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	s := &Set{opts: opts, plugins: map[string]*entry{}}
	for i, p := range plugins {
		m := p.Manifest
		if m == nil {
			return nil, fmt.Errorf("plugin %d has no manifest", i)
		}
		if _, dup := s.plugins[m.ID]; dup {
			return nil, fmt.Errorf("plugin manifest %s: id %s is already configured by %s", m.Path, m.ID, s.plugins[m.ID].Manifest.Path)
		}
		if len(p.Env) > 0 && !m.Stdio() {
			return nil, fmt.Errorf("plugin %s: an HTTP plugin takes no environment", m.ID)
		}
		keys := map[string]bool{}
		for _, kv := range p.Env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || strings.ContainsRune(kv, 0) {
				return nil, fmt.Errorf("plugin %s: environment entry %s is not KEY=VALUE", m.ID, strconv.Quote(kv))
			}
			if keys[k] {
				return nil, fmt.Errorf("plugin %s: environment variable %s is given twice", m.ID, k)
			}
			keys[k] = true
		}
		s.order = append(s.order, m.ID)
		s.plugins[m.ID] = &entry{Plugin: Plugin{Manifest: m, Env: slices.Clone(p.Env)}}
	}
	return s, nil
}

// IDs returns the configured plugin ids in the order given to NewSet.
func (s *Set) IDs() []string { return slices.Clone(s.order) }

// ListAll lists every plugin, concurrently, in the order given to NewSet.
// It fails if any plugin fails: an unavailable server is not left out.
func (s *Set) ListAll(ctx context.Context) ([]Listing, error) {
	out := make([]Listing, len(s.order))
	g, gctx := errgroup.WithContext(ctx)
	for i, id := range s.order {
		g.Go(func() error {
			l, err := s.List(gctx, id)
			out[i] = l
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// List lists the tools plugin id offers now: those its manifest allows
// among those its server advertises, in the server's order. An allowed
// tool is skipped when its name is not a valid MCP name (ToolNameRule), it
// is advertised twice, a schema is not a JSON object or exceeds
// MaxSchemaBytes, or its alias collides with an earlier tool's.
func (s *Set) List(ctx context.Context, id string) (Listing, error) {
	e, err := s.entry(id)
	if err != nil {
		return Listing{}, err
	}
	advertised, err := s.advertised(ctx, e)
	if err != nil {
		return Listing{}, err
	}
	return offer(e.Manifest, advertised), nil
}

// Call calls tool of plugin id with args, a JSON object (empty: {}). It is
// refused (ErrUnknownPlugin, ErrToolNotAllowed, ErrToolNotAdvertised)
// unless id is configured, its manifest allows tool, and a listing made
// for this call offers it. A server's error result is a completed call
// with Result.IsError; a failure to reach the server is a *HostError; the
// caller's cancellation is its context's error.
func (s *Set) Call(ctx context.Context, id, tool string, args json.RawMessage) (*Result, error) {
	e, err := s.entry(id)
	if err != nil {
		return nil, err
	}
	canonical := Canonical(id, tool)
	if !e.Manifest.Allows(tool) {
		return nil, fmt.Errorf("call %s: %w (%s allows %s)", canonical, ErrToolNotAllowed, e.Manifest.Path, strings.Join(e.Manifest.AllowTools, ", "))
	}
	arguments, err := callArguments(args)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", canonical, err)
	}
	advertised, err := s.advertised(ctx, e)
	if err != nil {
		return nil, err
	}
	l := offer(e.Manifest, advertised)
	if _, ok := Resolve(l.Tools, canonical); !ok {
		for _, sk := range l.Skipped {
			if sk.Name == tool {
				return nil, fmt.Errorf("call %s: %w: it is advertised but not offered: %s", canonical, ErrToolNotAdvertised, sk.Reason)
			}
		}
		return nil, fmt.Errorf("call %s: %w", canonical, ErrToolNotAdvertised)
	}
	session, err := s.session(ctx, e)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	res, err := session.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		return nil, s.failure(ctx, cctx, e, session, "call "+tool, err)
	}
	if res.NeedsInput() {
		return nil, &HostError{Plugin: id, Op: "call " + tool, Err: errors.New("the server asked for input (multi-round-trip), which axlr does not provide")}
	}
	out := &Result{Content: res.Content, IsError: res.IsError}
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	if res.StructuredContent != nil {
		if out.StructuredContent, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, &HostError{Plugin: id, Op: "call " + tool, Err: fmt.Errorf("encode structured content: %w", err)}
		}
	}
	return out, nil
}

// callArguments checks that args is one JSON object.
func callArguments(args json.RawMessage) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(args))) == 0 {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return nil, errors.New("arguments must be one JSON object")
	}
	return args, nil
}

// Close closes every open session (a stdio child gets its stdin closed and
// is waited for, then terminated) and refuses further use.
func (s *Set) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	var errs []error
	for _, id := range s.order {
		e := s.plugins[id]
		e.mu.Lock()
		if e.session != nil {
			if err := e.session.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close plugin %s: %w", id, err))
			}
			e.session = nil
		}
		e.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (s *Set) entry(id string) (*entry, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	e, ok := s.plugins[id]
	if !ok {
		configured := "none is configured"
		if len(s.order) > 0 {
			configured = "configured: " + strings.Join(s.order, ", ")
		}
		return nil, fmt.Errorf("plugin %s: %w (%s)", strconv.Quote(id), ErrUnknownPlugin, configured)
	}
	return e, nil
}

// advertised lists every tool the server of e advertises now.
func (s *Set) advertised(ctx context.Context, e *entry) ([]*mcp.Tool, error) {
	session, err := s.session(ctx, e)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	var (
		tools  []*mcp.Tool
		params = &mcp.ListToolsParams{}
	)
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, &HostError{Plugin: e.Manifest.ID, Op: "list tools", Err: fmt.Errorf("the listing goes on past %d pages", maxPages)}
		}
		res, err := session.ListTools(cctx, params)
		if err != nil {
			return nil, s.failure(ctx, cctx, e, session, "list tools", err)
		}
		tools = append(tools, res.Tools...)
		if len(tools) > MaxTools {
			return nil, &HostError{Plugin: e.Manifest.ID, Op: "list tools", Err: fmt.Errorf("the server advertises more than %d tools", MaxTools)}
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// session returns the open session of e, opening it if need be.
func (s *Set) session(ctx context.Context, e *entry) (*mcp.ClientSession, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if e.session != nil {
		return e.session, nil
	}
	m := e.Manifest
	var transport mcp.Transport
	if m.Stdio() {
		cmd := exec.Command(m.Command, m.Args...)
		// Not inherited: a nil Env would be this process's environment.
		cmd.Env = append([]string{}, e.Env...)
		cmd.Dir = s.opts.Dir
		cmd.Stderr = s.opts.Stderr
		// A grandchild holding stderr open must not stall Close.
		cmd.WaitDelay = time.Second
		transport = &mcp.CommandTransport{Command: cmd}
	} else {
		transport = &mcp.StreamableClientTransport{
			Endpoint:   m.URL,
			HTTPClient: s.opts.HTTPClient,
			// No reconnection: a broken stream fails the call, unretried.
			MaxRetries: -1,
			// Listings are made afresh, so no notification is awaited.
			DisableStandaloneSSE: true,
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "axlr", Version: "1"}, &mcp.ClientOptions{
		// Offer an untrusted server nothing: no roots, sampling or elicitation.
		Capabilities: &mcp.ClientCapabilities{},
		// The multi-round-trip middleware would call a tool again.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	session, err := client.Connect(cctx, transport, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("start plugin %s: %w", m.ID, context.Cause(ctx))
		}
		if cctx.Err() != nil {
			err = fmt.Errorf("no handshake within %s: %w", s.opts.ConnectTimeout, context.DeadlineExceeded)
		}
		return nil, &HostError{Plugin: m.ID, Op: "start", Err: err}
	}
	e.session = session
	return session, nil
}

// failure sorts a failed request on session: the caller's cancellation
// stays its context's error, anything else is a *HostError. Unless the
// server answered with a JSON-RPC error, the connection is taken for
// broken and the session dropped, so the next use opens a new one.
func (s *Set) failure(ctx, cctx context.Context, e *entry, session *mcp.ClientSession, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("plugin %s: %s: %w", e.Manifest.ID, op, context.Cause(ctx))
	}
	if cctx.Err() != nil {
		return &HostError{Plugin: e.Manifest.ID, Op: op, Err: fmt.Errorf("no answer within %s: %w", s.opts.CallTimeout, context.DeadlineExceeded)}
	}
	var answer *jsonrpc.Error
	if !errors.As(err, &answer) || errors.Is(err, mcp.ErrConnectionClosed) {
		e.mu.Lock()
		if e.session == session {
			e.session = nil
			session.Close()
		}
		e.mu.Unlock()
	}
	return &HostError{Plugin: e.Manifest.ID, Op: op, Err: err}
}

// offer picks, from the tools a server advertises, those m allows and a
// host can offer a model.
func offer(m *Manifest, advertised []*mcp.Tool) Listing {
	l := Listing{Plugin: m.ID, Tools: []Tool{}}
	names := map[string]bool{}
	aliases := map[string]string{}
	for _, t := range advertised {
		if t == nil || !m.Allows(t.Name) {
			continue
		}
		skip := func(format string, args ...any) {
			l.Skipped = append(l.Skipped, Skipped{Name: t.Name, Reason: fmt.Sprintf(format, args...)})
		}
		if !ValidToolName(t.Name) {
			skip("the name is not %s", ToolNameRule)
			continue
		}
		if names[t.Name] {
			skip("the server advertises it twice")
			continue
		}
		names[t.Name] = true
		in, err := schema("input", t.InputSchema)
		if err != nil {
			skip("%v", err)
			continue
		}
		var out json.RawMessage
		if t.OutputSchema != nil {
			if out, err = schema("output", t.OutputSchema); err != nil {
				skip("%v", err)
				continue
			}
		}
		alias := Alias(m.ID, t.Name)
		if other, ok := aliases[alias]; ok {
			skip("its alias %s is already the alias of %s", alias, other)
			continue
		}
		aliases[alias] = t.Name
		l.Tools = append(l.Tools, Tool{
			Plugin:       m.ID,
			Name:         t.Name,
			Canonical:    Canonical(m.ID, t.Name),
			Alias:        alias,
			Description:  clipDescription(t.Description),
			InputSchema:  in,
			OutputSchema: out,
		})
	}
	return l
}

// schema encodes a tool's schema and checks that it is a JSON object of at
// most MaxSchemaBytes. A missing input schema stands for any object.
func schema(which string, v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("its %s schema cannot be encoded: %v", which, err)
	}
	if len(b) > MaxSchemaBytes {
		return nil, fmt.Errorf("its %s schema is %d bytes, over the %d byte limit", which, len(b), MaxSchemaBytes)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		return nil, fmt.Errorf("its %s schema is not a JSON object", which)
	}
	return b, nil
}

// clipDescription cuts a description to MaxDescriptionBytes at a character
// boundary, marking the cut with "…".
func clipDescription(d string) string {
	d = strings.ToValidUTF8(d, "\uFFFD")
	if len(d) <= MaxDescriptionBytes {
		return d
	}
	const mark = "…"
	cut := MaxDescriptionBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	return d[:cut] + mark
}
