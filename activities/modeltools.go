package activities

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// modelPrefix names the workspace tools as the model calls them.
const modelPrefix = "local_"

// whyTools take a "why" argument: the reason the person reads on a card.
var whyTools = map[string]bool{tools.Write: true, tools.Edit: true, tools.Exec: true}

// workspaceTool maps a model tool name to the workspace tool.
func workspaceTool(name string) (string, bool) {
	short, ok := strings.CutPrefix(name, modelPrefix)
	if !ok {
		return "", false
	}
	switch short {
	case tools.Read, tools.Write, tools.Edit, tools.Exec, tools.Search, tools.List:
		return short, true
	}
	return "", false
}

// toolSpec returns the function tool offered to the model for a name;
// axlr_step_done's schema depends on the ceremony's open step.
func (a *Session) toolSpec(name string, stepDone *workflows.StepDoneSpec) (agent.ToolSpec, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.specs == nil {
		a.specs = map[string]agent.ToolSpec{}
	}
	cacheKey := name
	if name == workflows.StepDoneTool {
		if stepDone == nil {
			return agent.ToolSpec{}, false
		}
		cacheKey = fmt.Sprintf("%s/%s/%s/%s/%v/%v", name, stepDone.Definition, stepDone.Version, stepDone.Step, stepDone.Compact, stepDone.Published)
	}
	if spec, ok := a.specs[cacheKey]; ok {
		return spec, true
	}
	if name == workflows.StepDoneTool {
		params, err := ceremonies.StepDoneSchema(stepDone.Definition, stepDone.Version, stepDone.Step, stepDone.Compact)
		if stepDone.Published {
			params, err = ceremonies.PublishedStepDoneSchema()
		}
		if err != nil {
			return agent.ToolSpec{}, false
		}
		spec := agent.ToolSpec{Name: name, Description: ceremonies.StepDoneDescription, Parameters: params}
		a.specs[cacheKey] = spec
		return spec, true
	}
	if name == workflows.HistoryTool {
		return historySpec, true
	}
	short, ok := workspaceTool(name)
	if !ok {
		// A host tool's spec comes with its listing; it is not cached.
		return a.Hosts.spec(name)
	}
	params := tools.Schema(short)
	if whyTools[short] {
		params = withWhy(params)
	}
	spec := agent.ToolSpec{Name: name, Description: tools.Description(short), Parameters: params}
	a.specs[name] = spec
	return spec, true
}

// withWhy adds the optional "why" property to a schema object.
func withWhy(schema json.RawMessage) json.RawMessage {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(schema, &s); err != nil {
		return schema
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(s["properties"], &props); err != nil || props == nil {
		props = map[string]json.RawMessage{}
	}
	props["why"] = json.RawMessage(`{"type":"string","description":"One sentence the person reads when asked to approve: why this change or command is needed."}`)
	b, err := json.Marshal(props)
	if err != nil {
		return schema
	}
	s["properties"] = b
	out, err := json.Marshal(s)
	if err != nil {
		return schema
	}
	return out
}

// toolArgs strips the model-only "why" and returns the arguments the
// workspace tool takes; unquote removes one layer of wrapping quotes from
// local_exec's program and args (the compact profile's repair of a small
// model's malformed call).
func toolArgs(raw string, unquote bool) (json.RawMessage, error) {
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %s", cutUTF8(raw, 200))
	}
	if dec.More() {
		return nil, fmt.Errorf("the arguments hold more than one JSON value")
	}
	delete(obj, "why")
	if unquote {
		unquoteExec(obj)
	}
	return json.Marshal(obj)
}

// quotePairs are the wrapping quotes a small model puts around a program or
// an argument.
var quotePairs = [][2]string{{"`", "`"}, {"«", "»"}, {"“", "”"}, {"‘", "’"}, {`"`, `"`}, {"'", "'"}, {"<", ">"}}

func unwrapQuotes(s string) string {
	for _, q := range quotePairs {
		if len(s) >= len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			return s[len(q[0]) : len(s)-len(q[1])]
		}
	}
	return s
}

// unquoteExec unwraps local_exec's program and each argument, in place.
func unquoteExec(obj map[string]json.RawMessage) {
	var program string
	if json.Unmarshal(obj["program"], &program) == nil {
		obj["program"], _ = json.Marshal(unwrapQuotes(program))
	}
	var args []string
	if json.Unmarshal(obj["args"], &args) == nil && args != nil {
		for i, a := range args {
			args[i] = unwrapQuotes(a)
		}
		obj["args"], _ = json.Marshal(args)
	}
}

// inspectCall turns a saved tool call into the workflow's view of it: the
// arguments as the policy sees them, a preview for events, and the checks
// that read no file.
func inspectCall(hosts *HostTools, key string, tc agent.ToolCall, compact bool) workflows.ModelCall {
	mc := workflows.ModelCall{Key: key, CallID: tc.ID, Tool: tc.Name}
	unquote := compact && tc.Name == modelPrefix+tools.Exec
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(orEmptyObject(tc.Arguments)), &obj); err == nil && obj != nil {
		if unquote {
			unquoteExec(obj)
		}
		mc.Args = policyArgs(obj)
		mc.Preview = preview(obj)
	}
	if tc.Name == workflows.StepDoneTool {
		// The driver validates a hand-back against the open step.
		return mc
	}
	if tc.Name == workflows.HistoryTool {
		if _, _, err := parseHistoryArgs(tc.Arguments); err != nil {
			mc.Invalid = "invalid arguments: " + err.Error()
		}
		return mc
	}
	short, ok := workspaceTool(tc.Name)
	if !ok {
		if hosts.inspect(tc, &mc) {
			return mc
		}
		mc.Invalid = fmt.Sprintf("unknown tool %q: the tools are %s", tc.Name, strings.Join(workflows.LocalTools, ", "))
		return mc
	}
	args, err := toolArgs(tc.Arguments, unquote)
	if err != nil {
		mc.Invalid = "invalid arguments: " + err.Error()
		return mc
	}
	if err := tools.Check(short, args); err != nil {
		mc.Invalid = "invalid arguments: " + err.Error()
	}
	return mc
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

func policyArgs(obj map[string]json.RawMessage) map[string]policy.Value {
	out := make(map[string]policy.Value, len(obj))
	for k, raw := range obj {
		text := string(raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			text = s
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, raw) == nil {
				text = buf.String()
			}
		}
		v := policy.Value{Text: text}
		if len(text) > ArgLimit {
			v = policy.Value{Text: cutUTF8(text, ArgLimit), Truncated: true}
		}
		out[k] = v
	}
	return out
}

// preview is the arguments object with long strings cut, for events.
func preview(obj map[string]json.RawMessage) json.RawMessage {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		raw := obj[k]
		var s string
		if json.Unmarshal(raw, &s) == nil && len(s) > previewValueLimit {
			cut, _ := json.Marshal(fmt.Sprintf("%s… (%d bytes)", cutUTF8(s, previewValueLimit), len(s)))
			buf.Write(cut)
			continue
		}
		if len(raw) > previewValueLimit*4 {
			cut, _ := json.Marshal(fmt.Sprintf("(%d bytes of JSON)", len(raw)))
			buf.Write(cut)
			continue
		}
		var c bytes.Buffer
		if json.Compact(&c, raw) == nil {
			buf.Write(c.Bytes())
		} else {
			buf.WriteString("null")
		}
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// systemPrompt is the first message of every session. It names nothing that
// changes during the session, so a provider's prompt cache survives.
func systemPrompt(root string, box *tools.Sandbox) string {
	return `You are AXLR, a coding agent working for a person in the workspace ` + root + `.

You act through tools: local_read, local_search and local_list read the workspace; local_write, local_edit and local_exec change it. Paths are relative to the workspace.
- Read a file completely before you change it: local_write with mode "replace" and local_edit need its content_sha256 from that read. local_write with mode "create" never overwrites.
- local_exec runs a program with argv and no shell; use program "sh" with args ["-c", "..."] when you need shell syntax.
- Give a short "why" with every write, edit and command: the person may be asked to approve it.
- Other tools may be offered: web_fetch and web_search read the web; an MCP plugin's tools are named <plugin>__<tool>, and axlr_tools lists them.
- A call the execution's policy forbids, or the person denies, returns the reason: do not repeat it unchanged.
` + sandboxLine(box) + `When the work is done, answer the person briefly: what you did and what you found.`
}

// sandboxLine tells the model once, in the system prompt, what a
// confined command may reach, so it does not retry a denied path; empty
// when commands run unconfined.
func sandboxLine(box *tools.Sandbox) string {
	if box == nil || box.Plan.ABI == 0 {
		return ""
	}
	network, denied := "connect to no port the settings do not list", "your home, other repositories, the network"
	if box.OpenNetwork {
		network, denied = "may use the network", "your home, other repositories"
	}
	return "- Commands run in a sandbox (Landlock): they read the workspace, the system's directories and the toolchain, write only the workspace and $TMPDIR, and " + network + ". Anything else (" + denied + ") answers Permission denied: do not retry it; tell the person, who can allow it in settings.\n"
}
