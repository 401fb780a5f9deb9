package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/jsonargs"
	"github.com/underpass-ai/axlr/plugins"
	"github.com/underpass-ai/axlr/tools"
)

const (
	codeUnknownPlugin     = "unknown_plugin"
	codeUnknownPluginTool = "unknown_plugin_tool"
)

// errNoPlugins answers plugins.list and plugins.call when no --plugin is
// given: rejected, since nothing was attempted. A configured server that
// cannot be reached is plugins_unavailable too, but failed.
var errNoPlugins = &tools.Error{Code: codePluginsUnavailable,
	Message: "no plugin is registered: pass --plugin /absolute/path/manifest.json"}

// parsePlugins reads the --plugin manifests and gives each stdio plugin the
// --plugin-env values of its id as its complete environment.
func parsePlugins(manifests, envs []string) ([]plugins.Plugin, error) {
	var out []plugins.Plugin
	index := map[string]int{}
	for _, path := range manifests {
		m, err := plugins.ReadManifest(path)
		if err != nil {
			return nil, fmt.Errorf("--plugin: %w", err)
		}
		if i, dup := index[m.ID]; dup {
			return nil, fmt.Errorf("--plugin %s: id %s is already the id of %s", path, m.ID, out[i].Manifest.Path)
		}
		index[m.ID] = len(out)
		out = append(out, plugins.Plugin{Manifest: m})
	}
	for _, v := range envs {
		id, kv, _ := strings.Cut(v, ":")
		i, ok := index[id]
		switch k, _, hasValue := strings.Cut(kv, "="); {
		case !plugins.ValidID(id) || !hasValue || k == "":
			return nil, fmt.Errorf("--plugin-env %q: want ID:KEY=VALUE", v)
		case !ok:
			return nil, fmt.Errorf("--plugin-env %q: no --plugin has id %s", v, id)
		case !out[i].Manifest.Stdio():
			return nil, fmt.Errorf("--plugin-env %q: plugin %s is reached over HTTP and takes no environment", v, id)
		}
		out[i].Env = append(out[i].Env, kv)
	}
	return out, nil
}

// callArgs are the arguments of plugins.call.
type callArgs struct {
	PluginID  string          `json:"plugin_id"`
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments"`
}

// checkPluginArgs checks the shape of the arguments of plugins.list (none)
// and plugins.call, as package tools checks its tools': exact names, the
// required ones present and not null, the JSON type of each.
func checkPluginArgs(tool string, args json.RawMessage) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return fmt.Errorf("arguments of %s must be one JSON object", tool)
	}
	accepted := []string{}
	if tool == pluginsCall {
		accepted = []string{"plugin_id", "tool_name", "arguments"}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if slices.Contains(accepted, name) {
			continue
		}
		if len(accepted) == 0 {
			return fmt.Errorf("unknown argument %s for %s; it takes none", strconv.Quote(clip(name)), tool)
		}
		return fmt.Errorf("unknown argument %s for %s; it takes %s", strconv.Quote(clip(name)), tool, strings.Join(accepted, ", "))
	}
	for _, name := range []string{"plugin_id", "tool_name"} {
		if tool != pluginsCall {
			break
		}
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			return fmt.Errorf("%s needs argument %s", tool, name)
		}
		if v[0] != '"' {
			return fmt.Errorf("argument %s of %s must be a string, not %s", name, tool, jsonType(v))
		}
	}
	if v, ok := fields["arguments"]; ok && string(v) != "null" && v[0] != '{' {
		return fmt.Errorf("argument arguments of %s must be a JSON object, not %s", tool, jsonType(v))
	}
	return nil
}

// jsonType names the JSON type of the valid value v.
func jsonType(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	default:
		return "number"
	}
}

// withPlugins answers plugins.list and plugins.call from set (nil: no
// plugin registered) and passes every other tool to the workspace.
type withPlugins struct {
	caller
	set *plugins.Set
}

// listedTool is a tool of plugins.list's output.
type listedTool struct {
	PluginID     string          `json:"plugin_id"`
	Name         string          `json:"name"`
	Alias        string          `json:"alias"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

type skippedTool struct {
	PluginID string `json:"plugin_id"`
	Name     string `json:"name"`
	Reason   string `json:"reason"`
}

type listOutput struct {
	Tools   []listedTool  `json:"tools"`
	Skipped []skippedTool `json:"skipped,omitempty"`
}

type callOutput struct {
	Content           []mcp.Content   `json:"content"`
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
	IsError           bool            `json:"is_error"`
}

func (w withPlugins) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	if tool != pluginsList && tool != pluginsCall {
		return w.caller.Call(ctx, tool, args)
	}
	if w.set == nil {
		return nil, errNoPlugins
	}
	var out any
	if tool == pluginsList {
		listings, err := w.set.ListAll(ctx)
		if err != nil {
			return nil, pluginError(err)
		}
		lo := listOutput{Tools: []listedTool{}}
		for _, l := range listings {
			for _, t := range l.Tools {
				lo.Tools = append(lo.Tools, listedTool{PluginID: t.Plugin, Name: t.Name, Alias: t.Alias,
					Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
			}
			for _, s := range l.Skipped {
				lo.Skipped = append(lo.Skipped, skippedTool{PluginID: l.Plugin, Name: s.Name, Reason: s.Reason})
			}
		}
		out = lo
	} else {
		var a callArgs
		// checkPluginArgs has checked the shape.
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		if string(a.Arguments) == "null" {
			a.Arguments = nil
		}
		res, err := w.set.Call(ctx, a.PluginID, a.ToolName, a.Arguments)
		if err != nil {
			return nil, pluginError(err)
		}
		out = callOutput{Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}
	}
	return jsonargs.Marshal(out)
}

// pluginError gives a failed listing or call its protocol code.
func pluginError(err error) *tools.Error {
	var host *plugins.HostError
	code := tools.CodeInternalError
	switch {
	case errors.Is(err, plugins.ErrUnknownPlugin):
		code = codeUnknownPlugin
	case errors.Is(err, plugins.ErrToolNotAllowed), errors.Is(err, plugins.ErrToolNotAdvertised):
		code = codeUnknownPluginTool
	case errors.Is(err, context.Canceled):
		code = tools.CodeCancelled
	case errors.Is(err, context.DeadlineExceeded):
		code = tools.CodeTimeout
	case errors.As(err, &host):
		code = codePluginsUnavailable
	}
	return &tools.Error{Code: code, Message: err.Error()}
}

// syncWriter serialises writes: the worker's own diagnostics and those of
// plugin children share stderr.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
