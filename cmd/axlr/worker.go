package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/plugins"
	"github.com/underpass-ai/axlr/sandbox"
	"github.com/underpass-ai/axlr/tools"
)

const (
	protocolVersion  = 1
	maxRequestBytes  = 4 << 20
	maxResponseBytes = 4 << 20
	profile          = "trusted-local"

	pluginsList = "plugins.list"
	pluginsCall = "plugins.call"

	codeResponseTooLarge   = "response_too_large"
	codePluginsUnavailable = "plugins_unavailable"

	exitOK        = 0 // a valid protocol request, whatever the operation's outcome
	exitFatal     = 1 // a bad command line, or the request could not be read or the response written
	exitMalformed = 2 // malformed protocol input, answered with a rejection

	timeLayout = "2006-01-02T15:04:05.000Z07:00"
)

const usage = `usage: axlr --root DIR --profile trusted-local [--env KEY=VALUE]...
            [--plugin /ABS/MANIFEST.json]... [--plugin-env ID:KEY=VALUE]...
            [--sandbox auto|required|off]

axlr reads one JSON request on stdin, runs one workspace tool and writes one
JSON response on stdout:

  {"protocol_version":1,"request_id":"read-1","tool":"read","arguments":{"path":"README.md"}}

--env values are the complete environment of exec children: without --env
they get no variable at all, not even PATH or HOME, so that a bare program
name is not found; pass --env PATH=... or name the program by its path.

--sandbox confines exec children with Landlock as axlrd does (default
auto: where the kernel offers it): they read --root, the system's
directories and the Go toolchain, and write only --root and their own
TMPDIR; required refuses exec on a kernel without Landlock; off runs
them unconfined. exec's output says how the program ran ("sandbox").

Tools: read, write, edit, exec, search, list, and for MCP plugins
plugins.list (arguments {}) and plugins.call (plugin_id, tool_name and an
arguments object). --plugin names a version 1 manifest by its absolute path;
--plugin-env values of a stdio plugin are the complete environment of its
server (none without them). plugins.list fails if any plugin's server is
unavailable; a call is limited to a tool the manifest allows and the server
advertises (else unknown_plugin or unknown_plugin_tool, rejected). A
server's error result is a completed call with is_error true; a server that
cannot be reached is plugins_unavailable, failed, and a call is never
retried. Plugin sessions close after the response. Without --plugin both
answer plugins_unavailable, rejected.

Exit codes: 0 for a valid protocol request whatever the operation's outcome;
2 for malformed protocol input (an unknown, missing or mistyped field or
argument, a second document, a body over 4 MiB), answered with a rejection;
1 for a fatal worker error: a bad command line (nothing on stdout, the reason
on stderr), or a request that cannot be read or a response that cannot be
written.

Flags:
`

// request is the protocol's request document.
type request struct {
	ProtocolVersion int             `json:"protocol_version"`
	RequestID       string          `json:"request_id"`
	Tool            string          `json:"tool"`
	Arguments       json.RawMessage `json:"arguments"`
}

// response is the protocol's response document: Output or Error.
type response struct {
	ProtocolVersion int             `json:"protocol_version"`
	RequestID       string          `json:"request_id"`
	Tool            string          `json:"tool"`
	Status          string          `json:"status"`
	StartedAt       string          `json:"started_at"`
	FinishedAt      string          `json:"finished_at"`
	DurationMS      int64           `json:"duration_ms"`
	Output          json.RawMessage `json:"output,omitempty"`
	Error           *responseError  `json:"error,omitempty"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// caller runs one tool: a *tools.Workspace, which the worker wraps in
// withPlugins.
type caller interface {
	Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
}

// config is what the flags configure.
type config struct {
	root string
	// env is the complete environment of exec children, the --env values:
	// empty, not nil, without --env.
	env []string
	// plugins are the --plugin manifests with their --plugin-env values.
	plugins []plugins.Plugin
	// sandbox is --sandbox.
	sandbox sandbox.Mode
}

// run is the worker: flags in args, the request on stdin, the response on
// stdout and diagnostics on stderr. Exec children get the --env values as
// their whole environment, nothing of the worker's own. Cancelling ctx
// (SIGTERM, SIGINT) cancels the operation. It returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "axlr: %v\n", err)
		return exitFatal
	}
	// A non-nil Env: tools.Open would take nil for the restricted
	// environment of this process.
	box, _ := tools.NewSandbox(tools.SandboxConfig{Mode: cfg.sandbox}, cfg.env)
	ws, err := tools.Open(cfg.root, tools.Options{Env: cfg.env, Sandbox: box})
	if err != nil {
		fmt.Fprintf(stderr, "axlr: --root must name an existing workspace directory: %v\n", err)
		return exitFatal
	}
	defer ws.Close()
	// Plugin children write to stderr too.
	stderr = &syncWriter{w: stderr}
	c := withPlugins{caller: ws}
	if len(cfg.plugins) > 0 {
		if c.set, err = plugins.NewSet(cfg.plugins, plugins.Options{Stderr: stderr}); err != nil {
			fmt.Fprintf(stderr, "axlr: %v\n", err)
			return exitFatal
		}
		// Sessions close after the one response.
		defer func() {
			if err := c.set.Close(); err != nil {
				fmt.Fprintf(stderr, "axlr: %v\n", err)
			}
		}()
	}

	body, err := io.ReadAll(io.LimitReader(stdin, maxRequestBytes+1))
	if err != nil {
		fmt.Fprintf(stderr, "axlr: read the request from stdin: %v\n", err)
		return exitFatal
	}
	started := now()
	req, rejection := parseRequest(body)
	var (
		out  json.RawMessage
		terr *tools.Error
		code = exitOK
	)
	if rejection != nil {
		terr, code = rejection, exitMalformed
	} else if out, terr = dispatch(ctx, c, req); terr != nil && terr.Malformed() {
		// Arguments without the tool's shape are malformed protocol input.
		code = exitMalformed
	}
	b, err := respond(req, out, terr, started, now())
	if err != nil {
		fmt.Fprintf(stderr, "axlr: encode the response: %v\n", err)
		return exitFatal
	}
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintf(stderr, "axlr: write the response: %v\n", err)
		return exitFatal
	}
	return code
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("axlr", flag.ContinueOnError)
	// Errors are reported once, by run; only -h prints the usage.
	fs.SetOutput(io.Discard)
	var (
		cfg                        config
		prof, mode                 string
		env, manifests, pluginEnvs stringList
	)
	fs.StringVar(&cfg.root, "root", "", "workspace directory (required)")
	fs.StringVar(&prof, "profile", "", "execution profile; must be trusted-local")
	fs.Var(&env, "env", "KEY=VALUE of the exec environment; repeatable; the complete environment (none without --env)")
	fs.Var(&manifests, "plugin", "absolute path of an MCP plugin manifest (version 1); repeatable")
	fs.StringVar(&mode, "sandbox", "auto", "confine exec children with Landlock: auto, required or off")
	fs.Var(&pluginEnvs, "plugin-env", "ID:KEY=VALUE of the environment of stdio plugin ID; repeatable; the complete environment (none without it)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected argument %q: the request is read from stdin", fs.Arg(0))
	case cfg.root == "":
		return config{}, errors.New("--root is required: the workspace directory")
	case prof != profile:
		return config{}, fmt.Errorf("--profile %q is not supported: pass --profile %s", prof, profile)
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return config{}, fmt.Errorf("--env %q: want KEY=VALUE", kv)
		}
	}
	cfg.env = append([]string{}, env...)
	var err error
	if cfg.sandbox, err = sandbox.ParseMode(mode); err != nil {
		return config{}, fmt.Errorf("--sandbox: %w", err)
	}
	if cfg.plugins, err = parsePlugins(manifests, pluginEnvs); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// parseRequest decodes and checks the request document. A rejection comes
// with as much of the request as could be read, to echo its id and tool.
func parseRequest(body []byte) (request, *tools.Error) {
	var req request
	reject := func(format string, args ...any) (request, *tools.Error) {
		return req, &tools.Error{Code: tools.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
	}
	if len(body) > maxRequestBytes {
		return reject("the request body exceeds the %d byte limit", maxRequestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		if errors.Is(err, io.EOF) {
			return reject("the request body is empty; send one JSON object")
		}
		return reject("the request is not a JSON object: %v", err)
	}
	if fields == nil {
		return reject("the request is not a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return reject("the request body holds more than one JSON document")
	}
	// Echo what can be read, even if the request is rejected.
	json.Unmarshal(fields["request_id"], &req.RequestID)
	json.Unmarshal(fields["tool"], &req.Tool)

	known := []string{"protocol_version", "request_id", "tool", "arguments"}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(known, k) {
			return reject("unknown request field %q; a request has protocol_version, request_id, tool and arguments", clip(k))
		}
	}
	v, ok := fields["protocol_version"]
	if !ok {
		return reject("protocol_version is missing; this worker speaks protocol_version %d", protocolVersion)
	}
	if json.Unmarshal(v, &req.ProtocolVersion) != nil || req.ProtocolVersion != protocolVersion {
		return reject("protocol_version %s is not supported; this worker speaks protocol_version %d", clip(string(v)), protocolVersion)
	}
	var id string
	if json.Unmarshal(fields["request_id"], &id) != nil || id == "" {
		return reject("request_id must be a non-empty string")
	}
	var tool string
	if json.Unmarshal(fields["tool"], &tool) != nil || tool == "" {
		return reject("tool must be a non-empty string")
	}
	if !slices.Contains(tools.Names(), tool) && tool != pluginsList && tool != pluginsCall {
		return reject("unknown tool %q; the tools are %s, %s and %s", clip(tool), strings.Join(tools.Names(), ", "), pluginsList, pluginsCall)
	}
	args := bytes.TrimSpace(fields["arguments"])
	if len(args) == 0 || args[0] != '{' {
		return reject("arguments must be a JSON object")
	}
	if tool == pluginsList || tool == pluginsCall {
		if err := checkPluginArgs(tool, args); err != nil {
			return reject("%v", err)
		}
	}
	req.Arguments = args
	return req, nil
}

// clip shortens a value of the request quoted in a message to 64 bytes.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

// dispatch runs the request's tool.
func dispatch(ctx context.Context, c caller, req request) (json.RawMessage, *tools.Error) {
	out, err := c.Call(ctx, req.Tool, req.Arguments)
	if err != nil {
		var terr *tools.Error
		if errors.As(err, &terr) {
			return nil, terr
		}
		return nil, &tools.Error{Code: tools.CodeInternalError, Message: err.Error()}
	}
	return out, nil
}

// status is the protocol status of a failed operation: a plugin call
// refused before any server was asked is rejected; a server that cannot
// be reached (plugins_unavailable) failed.
func status(err *tools.Error) string {
	if err == errNoPlugins || err.Code == codeUnknownPlugin || err.Code == codeUnknownPluginTool {
		return tools.StatusRejected
	}
	return err.Status()
}

// respond encodes the response, newline-terminated. A response over the
// size limit becomes a response_too_large failure.
func respond(req request, out json.RawMessage, terr *tools.Error, started, finished time.Time) ([]byte, error) {
	resp := response{
		ProtocolVersion: protocolVersion,
		RequestID:       req.RequestID,
		Tool:            req.Tool,
		Status:          tools.StatusCompleted,
		StartedAt:       started.UTC().Format(timeLayout),
		FinishedAt:      finished.UTC().Format(timeLayout),
		DurationMS:      finished.Sub(started).Milliseconds(),
		Output:          out,
	}
	if terr != nil {
		resp.Status = status(terr)
		resp.Error = &responseError{Code: terr.Code, Message: terr.Message}
	}
	b, err := encode(resp)
	if err != nil {
		return nil, err
	}
	if n := len(b) - 1; n > maxResponseBytes {
		resp.Status, resp.Output = tools.StatusFailed, nil
		resp.Error = &responseError{Code: codeResponseTooLarge,
			Message: fmt.Sprintf("the response would be %d bytes, over the %d byte limit, since JSON escaping expands the output; ask for less (smaller max_bytes or max_output_bytes, or a narrower path)", n, maxResponseBytes)}
		return encode(resp)
	}
	return b, nil
}

func encode(resp response) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
