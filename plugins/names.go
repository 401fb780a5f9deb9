package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxAliasBytes bounds an alias: function names in OpenAI-style tool lists
// match ^[a-zA-Z0-9_-]{1,64}$.
const MaxAliasBytes = 64

// aliasSeparator ends the plugin id in an alias; a valid id never holds it.
const aliasSeparator = "__"

// aliasHashHex is how many hex digits of SHA-256 an altered alias carries.
const aliasHashHex = 8

// Canonical returns the canonical name of a plugin's tool: <plugin>/<tool>.
func Canonical(plugin, tool string) string { return plugin + "/" + tool }

// SplitCanonical splits a canonical name <plugin>/<tool> at its first '/'.
// ok is false unless plugin is a valid id and tool a valid tool name.
func SplitCanonical(name string) (plugin, tool string, ok bool) {
	plugin, tool, found := strings.Cut(name, "/")
	if !found || !ValidID(plugin) || !ValidToolName(tool) {
		return "", "", false
	}
	return plugin, tool, true
}

// Alias returns the name a model calls a plugin's tool by: it matches
// ^[a-zA-Z0-9_-]{1,64}$ for a valid id and tool name.
//
// A tool whose name already fits gets <plugin>__<tool>. Any other (a '.' in
// it, or too long) gets <plugin>__<tool with each other byte as '_', cut to
// fit>_<the first 8 hex digits of the SHA-256 of the tool name>. The plugin
// id ends at the first "__", which a valid id never holds, so aliases of
// different plugins never collide. Two tools of one plugin collide only if
// an altered alias equals another tool's alias; a listing then skips the
// later tool, so every alias offered resolves to one tool (Resolve).
func Alias(plugin, tool string) string {
	prefix := plugin + aliasSeparator
	if fits(tool) && len(prefix)+len(tool) <= MaxAliasBytes {
		return prefix + tool
	}
	sum := sha256.Sum256([]byte(tool))
	suffix := "_" + hex.EncodeToString(sum[:])[:aliasHashHex]
	body := []byte(tool)
	for i, c := range body {
		if !toolNameByte(c) {
			body[i] = '_'
		}
	}
	if room := MaxAliasBytes - len(prefix) - len(suffix); len(body) > room {
		body = body[:room]
	}
	return prefix + string(body) + suffix
}

// fits reports whether name is made only of bytes a function name allows.
func fits(name string) bool {
	for i := range len(name) {
		if !toolNameByte(name[i]) {
			return false
		}
	}
	return true
}

// Resolve finds the tool that name names among tools (one or more
// listings): its alias or its canonical name. An altered alias cannot be
// turned back into a tool name without the listing it came from, so the
// mapping goes through the tools a host offered.
func Resolve(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Alias == name || t.Canonical == name {
			return t, true
		}
	}
	return Tool{}, false
}
