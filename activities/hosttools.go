package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/plugins"
	"github.com/underpass-ai/axlr/web"
	"github.com/underpass-ai/axlr/workflows"
)

// The host tools that reach the plugins' tools: a model that cannot see a
// plugin's tool by its alias lists them and calls one by name.
const (
	ToolsTool    = "axlr_tools"
	CallToolTool = "axlr_call_tool"
)

// HostTools are the tools a session offers beside the workspace's: the web
// tools, the tools of the MCP plugins and the job request tools. Any part
// may be nil.
type HostTools struct {
	Web     *web.Tools
	Plugins *plugins.Set
	// Jobs, when set, offers axlr_request_repair, axlr_request_improvement
	// and axlr_repair_status (Session.RequestJob runs their calls): it
	// gives the job registry's client for an activity's context (axlrd:
	// client.New over activity.GetClient).
	Jobs func(context.Context) JobClient
	// Memory, when set, offers axlr_recall and axlr_remember.
	Memory *Memory
	Log    zerolog.Logger

	mu sync.Mutex
	// listed are the plugins' tools of the last listing, by which an alias
	// resolves to its plugin and tool; listedOnce says whether this
	// process has listed them yet.
	listed     []plugins.Tool
	listedOnce bool
}

var (
	toolsSpec = agent.ToolSpec{Name: ToolsTool,
		Description: "List the host's tools beside the workspace's: the web tools and each MCP plugin's tools, with the <plugin>/<tool> name axlr_call_tool takes.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}
	callToolSpec = agent.ToolSpec{Name: CallToolTool,
		Description: "Call an MCP plugin's tool by its <plugin>/<tool> name (axlr_tools lists them) with its arguments.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"tool":{"type":"string","description":"The tool's <plugin>/<tool> name, or the name it is offered under."},"arguments":{"type":"object","description":"The tool's arguments, as its schema in axlr_tools says."}},"required":["tool"],"additionalProperties":false}`)}
)

// offer lists the host tools a turn may offer now. A plugin whose server
// fails to list is logged and left out of this turn; the others are
// offered.
func (h *HostTools) offer(ctx context.Context) []workflows.HostTool {
	if h == nil {
		return nil
	}
	var out []workflows.HostTool
	if h.Web != nil {
		for _, name := range web.Names() {
			out = append(out, workflows.HostTool{Name: name, Web: true})
		}
	}
	listed := h.list(ctx)
	for _, t := range listed {
		out = append(out, workflows.HostTool{Name: t.Alias, Canonical: t.Canonical})
	}
	if len(listed) > 0 {
		out = append(out, workflows.HostTool{Name: ToolsTool}, workflows.HostTool{Name: CallToolTool})
	}
	if h.Jobs != nil {
		for _, s := range jobSpecs {
			out = append(out, workflows.HostTool{Name: s.Name})
		}
	}
	if h.Memory != nil {
		out = append(out, workflows.HostTool{Name: workflows.RecallTool}, workflows.HostTool{Name: workflows.RememberTool})
	}
	return out
}

// ListTimeout bounds a turn's listing of the plugins: a server that does
// not answer in time is left out of the turn rather than holding it.
const ListTimeout = 20 * time.Second

// list lists every plugin, keeping what lists.
func (h *HostTools) list(ctx context.Context) []plugins.Tool {
	if h.Plugins == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	var tools []plugins.Tool
	for _, id := range h.Plugins.IDs() {
		l, err := h.Plugins.List(ctx, id)
		if err != nil {
			h.Log.Warn().Err(err).Str("plugin", id).Msg("plugin not offered this turn")
			continue
		}
		for _, s := range l.Skipped {
			h.Log.Debug().Str("plugin", id).Str("tool", s.Name).Str("reason", s.Reason).Msg("plugin tool skipped")
		}
		for _, t := range l.Tools {
			if ok, _ := made.ModelMayCall(t.Name); !ok {
				h.Log.Debug().Str("plugin", id).Str("tool", t.Name).Msg("plugin tool not offered: the model sees MADE's read surface only")
				continue
			}
			tools = append(tools, t)
		}
	}
	h.mu.Lock()
	h.listed, h.listedOnce = tools, true
	h.mu.Unlock()
	return tools
}

// ensureListed lists the plugins when this process has not yet. A turn
// begun by an earlier axlrd offers their tools, and its model request and
// calls name them after a restart: an empty listing would call them
// unknown, a refusal no retry undoes.
func (h *HostTools) ensureListed(ctx context.Context) {
	if h == nil || h.Plugins == nil {
		return
	}
	h.mu.Lock()
	done := h.listedOnce
	h.mu.Unlock()
	if !done {
		h.list(ctx)
	}
}

// cached finds a plugin's tool by its alias or <plugin>/<tool> in the
// last listing.
func (h *HostTools) cached(name string) (plugins.Tool, bool) {
	if h == nil || h.Plugins == nil {
		return plugins.Tool{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return plugins.Resolve(h.listed, name)
}

// madeRefusal is why the model may not call the plugin tool name names,
// when it names one of MADE's that is off MADE's read surface
// (made.ModelMayCall); refused is false for any other name. name is an
// alias <plugin>__<tool> or a <plugin>/<tool> of a configured plugin, or
// the tool's own name.
//
// MADE is recognised by its tools' names, not by the plugin's id: every
// tool made-mcp advertises is named made_<verb>_…, while the id is
// whatever the person wrote in the manifest, so a MADE registered as
// "ledger" would slip past a rule on the id "made", and a server that
// names its tools made_* is judged by MADE's rule, which at worst refuses.
// A refused tool is never listed, so the name is parsed here rather than
// resolved through a listing; an alias altered to fit (Alias) keeps its
// made_ and its words, and is judged by them.
func (h *HostTools) madeRefusal(name string) (refusal string, refused bool) {
	if h == nil || h.Plugins == nil {
		return "", false
	}
	tool := name
	if p, t, ok := plugins.SplitCanonical(name); ok && slices.Contains(h.Plugins.IDs(), p) {
		tool = t
	} else if p, t, ok := strings.Cut(name, "__"); ok && slices.Contains(h.Plugins.IDs(), p) {
		tool = t
	}
	ok, why := made.ModelMayCall(tool)
	return why, !ok
}

// resolve finds a plugin's tool as cached does, listing again when the
// last listing does not hold it (axlrd restarted since).
func (h *HostTools) resolve(ctx context.Context, name string) (plugins.Tool, bool) {
	if t, ok := h.cached(name); ok || h == nil || h.Plugins == nil {
		return t, ok
	}
	return plugins.Resolve(h.list(ctx), name)
}

// spec is the function offered for a host tool's name.
func (h *HostTools) spec(name string) (agent.ToolSpec, bool) {
	if h == nil {
		return agent.ToolSpec{}, false
	}
	if h.Web != nil && slices.Contains(web.Names(), name) {
		for _, s := range h.Web.Specs() {
			if s.Name == name {
				return agent.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters}, true
			}
		}
	}
	switch name {
	case ToolsTool:
		return toolsSpec, h.Plugins != nil
	case CallToolTool:
		return callToolSpec, h.Plugins != nil
	case workflows.RecallTool:
		return recallSpec, h.Memory != nil
	case workflows.RememberTool:
		return rememberSpec, h.Memory != nil
	}
	if workflows.JobRequestTool(name) {
		i := slices.IndexFunc(jobSpecs, func(s agent.ToolSpec) bool { return s.Name == name })
		return jobSpecs[i], h.Jobs != nil
	}
	t, ok := h.cached(name)
	if !ok || t.Alias != name {
		return agent.ToolSpec{}, false
	}
	// MCP descriptions are the server's, not ours: say whose they are.
	return agent.ToolSpec{Name: t.Alias, Description: fmt.Sprintf("[MCP plugin %s, tool %s] %s", t.Plugin, t.Name, t.Description), Parameters: t.InputSchema}, true
}

// inspect fills in a host tool's call as workflow code sees it; it reports
// false for a name that is no host tool.
func (h *HostTools) inspect(tc agent.ToolCall, mc *workflows.ModelCall) bool {
	if h == nil {
		return false
	}
	switch {
	case h.Web != nil && slices.Contains(web.Names(), tc.Name):
		mc.Host = true
		if err := web.Check(tc.Name, json.RawMessage(orEmptyObject(tc.Arguments))); err != nil {
			mc.Invalid = "invalid arguments: " + err.Error()
		}
		return true
	case h.Plugins != nil && tc.Name == ToolsTool:
		return true
	case h.Memory != nil && workflows.MemoryTool(tc.Name):
		mc.Host = true
		if err := checkMemoryArgs(tc.Name, tc.Arguments); err != nil {
			mc.Invalid = "invalid arguments: " + err.Error()
		}
		return true
	case h.Jobs != nil && workflows.JobRequestTool(tc.Name):
		// The arguments are checked with the request, whose refusal names
		// the session's citable calls.
		mc.Host = true
		return true
	case h.Plugins != nil && tc.Name == CallToolTool:
		mc.Host = true
		target, _, err := callToolArgs(tc.Arguments)
		if err != nil {
			mc.Invalid = "invalid arguments: " + err.Error()
			return true
		}
		if why, refused := h.madeRefusal(target); refused {
			mc.Invalid = why
			return true
		}
		t, ok := h.cached(target)
		if !ok {
			mc.Invalid = fmt.Sprintf("no plugin tool %q: axlr_tools lists them", target)
			return true
		}
		mc.Names = []string{t.Canonical, t.Alias}
		return true
	}
	if why, refused := h.madeRefusal(tc.Name); refused {
		mc.Host = true
		mc.Invalid = why
		return true
	}
	if t, ok := h.cached(tc.Name); ok && t.Alias == tc.Name {
		mc.Host = true
		mc.Names = []string{t.Canonical}
		return true
	}
	return false
}

// callToolArgs reads axlr_call_tool's arguments: the tool and its own
// arguments (an object; absent is {}).
func callToolArgs(raw string) (string, json.RawMessage, error) {
	var a struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(strings.NewReader(orEmptyObject(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", nil, fmt.Errorf(`%s takes {"tool": "<plugin>/<tool>", "arguments": {...}}: %v`, CallToolTool, err)
	}
	if strings.TrimSpace(a.Tool) == "" {
		return "", nil, fmt.Errorf("%s needs \"tool\"", CallToolTool)
	}
	if len(a.Arguments) == 0 || string(a.Arguments) == "null" {
		a.Arguments = json.RawMessage(`{}`)
	}
	if a.Arguments[0] != '{' {
		return "", nil, fmt.Errorf("%s: \"arguments\" must be an object", CallToolTool)
	}
	return a.Tool, a.Arguments, nil
}

// hostCall is a host tool's outcome for the transcript.
type hostCall struct {
	status  contract.CallStatus
	content string
}

// effectful reports whether a host tool may change something outside: a
// plugin's tool may; the web tools and axlr_tools only read.
func (h *HostTools) effectful(name string) bool {
	return h != nil && !slices.Contains(web.Names(), name) && name != ToolsTool && name != workflows.RecallTool
}

// call runs a host tool; handled is false for a name that is no host tool.
func (h *HostTools) call(ctx context.Context, name, rawArgs string) (hostCall, bool) {
	if h == nil {
		return hostCall{}, false
	}
	args := json.RawMessage(orEmptyObject(rawArgs))
	switch {
	case h.Web != nil && slices.Contains(web.Names(), name):
		out, err := h.Web.Call(ctx, name, args)
		if err != nil {
			var we *web.Error
			if errors.As(err, &we) {
				return hostCall{contract.CallFailed, toolError(we.Code, we.Message)}, true
			}
			return hostCall{contract.CallFailed, toolError("internal_error", err.Error())}, true
		}
		return hostCall{contract.CallCompleted, string(out)}, true
	case h.Plugins != nil && name == ToolsTool:
		return hostCall{contract.CallCompleted, h.catalogue(ctx)}, true
	case h.Plugins != nil && name == CallToolTool:
		target, inner, err := callToolArgs(rawArgs)
		if err != nil {
			return hostCall{contract.CallFailed, toolError("invalid_request", err.Error())}, true
		}
		return h.callPlugin(ctx, target, inner), true
	}
	// A MADE tool off the read surface is never listed, so it would not
	// resolve: it is refused by its name, as in callPlugin.
	if why, refused := h.madeRefusal(name); refused {
		return hostCall{contract.CallFailed, why}, true
	}
	if t, ok := h.resolve(ctx, name); ok && t.Alias == name {
		return h.callPlugin(ctx, name, args), true
	}
	return hostCall{}, false
}

// callPlugin calls a plugin's tool once: a server's error result is a
// failed call the model reads; a server that cannot be reached is too,
// and the call is not tried again.
func (h *HostTools) callPlugin(ctx context.Context, name string, args json.RawMessage) hostCall {
	// inspect refuses these before they run; a call an older axlrd
	// inspected reaches here, and is refused in the same words.
	if why, refused := h.madeRefusal(name); refused {
		return hostCall{contract.CallFailed, why}
	}
	t, ok := h.resolve(ctx, name)
	if !ok {
		return hostCall{contract.CallFailed, toolError("unknown_plugin_tool", fmt.Sprintf("no plugin tool %q: axlr_tools lists them", name))}
	}
	res, err := h.Plugins.Call(ctx, t.Plugin, t.Name, args)
	if err != nil {
		code := "plugin_unavailable"
		switch {
		case errors.Is(err, plugins.ErrUnknownPlugin), errors.Is(err, plugins.ErrToolNotAllowed), errors.Is(err, plugins.ErrToolNotAdvertised):
			code = "unknown_plugin_tool"
		case ctx.Err() != nil:
			code = "cancelled"
		}
		return hostCall{contract.CallFailed, toolError(code, err.Error())}
	}
	out, err := json.Marshal(struct {
		Content           any             `json:"content"`
		StructuredContent json.RawMessage `json:"structured_content,omitempty"`
		IsError           bool            `json:"is_error"`
	}{res.Content, res.StructuredContent, res.IsError})
	if err != nil {
		return hostCall{contract.CallFailed, toolError("internal_error", "encode the plugin's result: "+err.Error())}
	}
	if res.IsError {
		return hostCall{contract.CallFailed, string(out)}
	}
	return hostCall{contract.CallCompleted, string(out)}
}

// catalogue is axlr_tools' answer: every host tool with what a call needs.
func (h *HostTools) catalogue(ctx context.Context) string {
	type entry struct {
		Name        string          `json:"name"`
		Canonical   string          `json:"canonical,omitempty"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var out []entry
	if h.Web != nil {
		for _, s := range h.Web.Specs() {
			out = append(out, entry{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
		}
	}
	for _, t := range h.list(ctx) {
		out = append(out, entry{Name: t.Alias, Canonical: t.Canonical, Description: t.Description, Parameters: t.InputSchema})
	}
	b, err := json.Marshal(map[string]any{"tools": out})
	if err != nil {
		return toolError("internal_error", err.Error())
	}
	return string(b)
}
