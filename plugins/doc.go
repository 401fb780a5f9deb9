// Package plugins reaches MCP servers that a version 1 manifest names, as
// the tools of a host's model: the one-request worker (cmd/axlr) and axlrd.
//
// A manifest (ReadManifest) names one server, a child over stdio (an
// absolute command and its args) or a Streamable HTTP endpoint (url), and
// the tools of it a host may call (allow_tools: exact names, or ["*"] for
// every tool the server advertises, now or later):
//
//	{"manifest_version": 1, "id": "notes", "command": "/abs/notes-mcp", "args": [], "allow_tools": ["search"]}
//
// A Set holds the sessions of configured plugins, over the go-sdk client.
// A stdio child gets a complete environment, only what its Plugin.Env
// gives; nothing is inherited. Set.List offers the tools a manifest allows
// among those the server advertises now, with descriptions and schemas
// bounded, since they are untrusted data on their way to a model. Set.Call
// is refused unless the plugin is configured, its manifest allows the tool
// and the server advertises it at the time of the call. A server's error
// result (isError) is a completed call; a launch, connection or protocol
// failure is a *HostError. A call is never retried: a broken connection
// cannot tell whether its effect happened.
//
// Names: a tool's canonical name is <plugin>/<tool> (Canonical); a model
// calls it by an alias that fits ^[a-zA-Z0-9_-]{1,64}$ (Alias), and
// Resolve maps either back to the tool. What a host offers, refuses or
// asks a person about is the host's policy, not this package's.
package plugins
