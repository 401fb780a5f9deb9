// Package policy decides, outside the model, what a tool call may do: the
// execution's policy (level, allow and deny rules), the run's approval level,
// the settings' rules and the destructive list. Every function is pure and
// deterministic, so workflow code calls them directly and replays them.
//
// The chain, for one call:
//
//  1. the execution's policy forbids (deny rule, allow list, level), or the
//     work mode does (review changes no file, writer and research write
//     only documents): the call is refused outside the model;
//  2. the destructive list (approvals.always_ask) asks, under every level,
//     and so does every command in review, writer and research;
//  3. act-with-approval asks for every call that is not a read;
//  4. reads are approved;
//  5. the settings approve (approvals.autonomous, approvals.allowed);
//  6. the approval level approves: all every tool, local the workspace's
//     tools, none nothing;
//  7. anything else asks: the execution ends needs_decision.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Level is an execution's autonomy.
type Level string

// The levels of the runtime contract.
const (
	Observe         Level = "observe"
	Propose         Level = "propose"
	ActWithApproval Level = "act-with-approval"
	ActWithinPolicy Level = "act-within-policy"
)

// Levels lists the valid levels.
var Levels = []Level{Observe, Propose, ActWithApproval, ActWithinPolicy}

// Approval is the run's approval level (--approve).
type Approval string

// The approval levels.
const (
	ApproveNone  Approval = "none"
	ApproveLocal Approval = "local"
	ApproveAll   Approval = "all"
)

// ParseApproval checks an approval level.
func ParseApproval(s string) (Approval, error) {
	switch a := Approval(s); a {
	case ApproveNone, ApproveLocal, ApproveAll:
		return a, nil
	}
	return "", fmt.Errorf("unknown approval level %q: use none, local or all", s)
}

// Rule names a tool and, optionally, patterns its arguments must match.
type Rule struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}

// Tools holds the allow and deny rules.
type Tools struct {
	Allow []Rule `json:"allow,omitempty"`
	Deny  []Rule `json:"deny,omitempty"`
}

// Policy narrows what an execution may do with tools.
type Policy struct {
	Level Level `json:"level,omitempty"`
	Tools Tools `json:"tools,omitzero"`
}

// MaxSize is the largest policy document accepted.
const MaxSize = 64 << 10

// Parse reads a policy document, with or without the {"policy": …} wrapper.
// Unknown fields refuse it, as the service refuses unknown fields.
func Parse(data []byte) (*Policy, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("policy is over the %d KiB limit", MaxSize>>10)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("policy is not a JSON object: %w", err)
	}
	if inner, ok := probe["policy"]; ok {
		if len(probe) != 1 {
			return nil, errors.New("policy wrapper holds fields beside \"policy\"")
		}
		data = inner
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the level and every rule.
func (p *Policy) Validate() error {
	if p.Level != "" && !slices.Contains(Levels, p.Level) {
		return fmt.Errorf("policy: unknown level %q (observe, propose, act-with-approval or act-within-policy)", p.Level)
	}
	for _, set := range []struct {
		name  string
		rules []Rule
	}{{"allow", p.Tools.Allow}, {"deny", p.Tools.Deny}} {
		for i, r := range set.rules {
			if strings.TrimSpace(r.Name) == "" {
				return fmt.Errorf("policy: tools.%s[%d] has no name", set.name, i)
			}
			if err := checkPattern(r.Name); err != nil {
				return fmt.Errorf("policy: tools.%s[%d].name: %w", set.name, i, err)
			}
			// Sorted: of several bad patterns, the same one is reported
			// every time (validators run in workflow code).
			for _, arg := range sortedKeys(r.Arguments) {
				if err := checkPattern(r.Arguments[arg]); err != nil {
					return fmt.Errorf("policy: tools.%s[%d].arguments.%s: %w", set.name, i, arg, err)
				}
			}
		}
	}
	return nil
}

// Class sorts tools by what they can touch.
type Class int

// Tool classes.
const (
	// ClassRead reads the workspace or the host and changes nothing.
	ClassRead Class = iota
	// ClassWrite changes workspace files.
	ClassWrite
	// ClassExec runs a local command.
	ClassExec
	// ClassOther is any other tool (MCP tools, host tools with effects).
	ClassOther
)

// readTools are the read-only tools, local and host. The web tools are not
// among them: a fetch or a search sends the URL or the query out.
var readTools = []string{
	"local_read", "local_search", "local_list",
	"axlr_tools", "axlr_history", "axlr_skill", "axlr_session", "axlr_logs",
	"axlr_catalog", "axlr_repair_status", "axlr_recall", "axlr_judge",
}

// ClassOf returns a tool's class.
func ClassOf(tool string) Class {
	switch {
	case slices.Contains(readTools, tool):
		return ClassRead
	case tool == "local_write" || tool == "local_edit":
		return ClassWrite
	case tool == "local_exec":
		return ClassExec
	}
	return ClassOther
}

// Local reports whether a tool is one of the workspace's own tools.
func Local(tool string) bool { return strings.HasPrefix(tool, "local_") }

// Value is one argument of a call as the policy sees it: its text (a string
// as it is, anything else as its JSON) and whether that text was cut before
// it reached workflow code.
type Value struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Call is a tool call as the policy sees it.
type Call struct {
	Tool string `json:"tool"`
	// Names are the tool's other names a rule may use: an MCP plugin's
	// tool is <plugin>/<tool>, called by the alias in Tool.
	Names []string         `json:"names,omitempty"`
	Args  map[string]Value `json:"args,omitempty"`
}

// named reports whether a rule's name pattern covers a tool by any of its
// names.
func named(pattern, tool string, names []string) bool {
	return Match(pattern, tool) || slices.ContainsFunc(names, func(n string) bool { return Match(pattern, n) })
}

// Settings are the settings' approval rules.
type Settings struct {
	Autonomous bool     `json:"autonomous,omitempty"`
	Allowed    []string `json:"allowed,omitempty"`
	AlwaysAsk  []string `json:"always_ask,omitempty"`
}

// Verdict is what happens to a call.
type Verdict string

// Verdicts.
const (
	// Forbid refuses the call outside the model.
	Forbid Verdict = "forbid"
	// Ask waits for a person's decision.
	Ask Verdict = "ask"
	// Approve runs the call without asking.
	Approve Verdict = "approve"
)

// Decision is the verdict on one call with its reason.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// Input is everything a decision depends on.
type Input struct {
	Policy   *Policy
	Approval Approval
	Settings Settings
	// Mode is the work mode; empty is normal.
	Mode Mode
	Call Call
}

// Decide runs the whole chain for one call.
func Decide(in Input) Decision {
	if forbidden, reason := Forbidden(in.Policy, in.Call); forbidden {
		return Decision{Verdict: Forbid, Reason: reason}
	}
	mode := WorkMode(string(in.Mode))
	if forbidden, reason := ModeForbidden(mode, in.Call); forbidden {
		return Decision{Verdict: Forbid, Reason: reason}
	}
	if reason, ok := DestructiveReason(in.Settings.AlwaysAsk, in.Call); ok {
		return Decision{Verdict: Ask, Reason: reason}
	}
	if modeAsks(mode, in.Call) {
		return Decision{Verdict: Ask, Reason: string(mode) + " mode asks before every command"}
	}
	class := ClassOf(in.Call.Tool)
	if in.Policy != nil && in.Policy.Level == ActWithApproval && class != ClassRead {
		return Decision{Verdict: Ask, Reason: "the execution's policy is act-with-approval"}
	}
	if class == ClassRead {
		return Decision{Verdict: Approve, Reason: "reads are approved"}
	}
	if in.Settings.Autonomous {
		return Decision{Verdict: Approve, Reason: "approvals.autonomous"}
	}
	if i := slices.IndexFunc(in.Settings.Allowed, func(a string) bool { return a == in.Call.Tool || slices.Contains(in.Call.Names, a) }); i >= 0 {
		return Decision{Verdict: Approve, Reason: "approvals.allowed names " + in.Settings.Allowed[i]}
	}
	switch in.Approval {
	case ApproveAll:
		return Decision{Verdict: Approve, Reason: "--approve all"}
	case ApproveLocal:
		if Local(in.Call.Tool) {
			return Decision{Verdict: Approve, Reason: "--approve local"}
		}
		return Decision{Verdict: Ask, Reason: "--approve local does not cover " + in.Call.Tool}
	}
	return Decision{Verdict: Ask, Reason: "--approve none"}
}

// Offered reports whether a tool may be offered to the model at all: a tool
// the policy forbids by name (any of its names) is left out of the tool
// list.
func Offered(p *Policy, tool string, names ...string) bool {
	if p == nil {
		return true
	}
	for _, r := range p.Tools.Deny {
		if len(r.Arguments) == 0 && named(r.Name, tool, names) {
			return false
		}
	}
	if len(p.Tools.Allow) > 0 && !slices.ContainsFunc(p.Tools.Allow, func(r Rule) bool { return named(r.Name, tool, names) }) {
		return false
	}
	switch ClassOf(tool) {
	case ClassRead:
		return true
	case ClassWrite:
		return p.Level != Observe
	default:
		return p.Level != Observe && p.Level != Propose
	}
}

// Forbidden reports whether the execution's policy refuses a call, and why.
func Forbidden(p *Policy, c Call) (bool, string) {
	if p == nil {
		return false, ""
	}
	for _, r := range p.Tools.Deny {
		// A deny rule whose argument was cut matches: the policy cannot
		// prove the call is outside it.
		if matchRule(r, c, true) {
			return true, fmt.Sprintf("%s is denied by a rule for %s", c.Tool, describeRule(r))
		}
	}
	if len(p.Tools.Allow) > 0 && !slices.ContainsFunc(p.Tools.Allow, func(r Rule) bool { return matchRule(r, c, false) }) {
		return true, fmt.Sprintf("%s is not allowed by the allow list%s", c.Tool, truncationNote(p.Tools.Allow, c))
	}
	switch ClassOf(c.Tool) {
	case ClassRead:
		return false, ""
	case ClassWrite:
		switch p.Level {
		case Observe:
			return true, "level observe allows reads only"
		case Propose:
			if v, ok := c.Args["path"]; !ok || v.Truncated || !Document(v.Text) {
				return true, "level propose writes only documents (.md, .mdx, .txt, .rst, docs/) and .diff or .patch files"
			}
		}
	default:
		switch p.Level {
		case Observe:
			return true, "level observe allows reads only"
		case Propose:
			return true, "level propose allows reads and document writes only"
		}
	}
	return false, ""
}

// Document reports whether a workspace path is a plan or a diff the propose
// level may write.
func Document(p string) bool {
	p = path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if strings.HasPrefix(p, "../") || p == ".." || strings.HasPrefix(p, "/") {
		return false
	}
	if strings.HasPrefix(p, "docs/") {
		return true
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".mdx", ".txt", ".rst", ".diff", ".patch":
		return true
	}
	return false
}

func describeRule(r Rule) string {
	if len(r.Arguments) == 0 {
		return r.Name
	}
	keys := sortedKeys(r.Arguments)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, r.Arguments[k])
	}
	return r.Name + " with " + strings.Join(parts, ", ")
}

func truncationNote(rules []Rule, c Call) string {
	for _, r := range rules {
		if !named(r.Name, c.Tool, c.Names) {
			continue
		}
		for _, arg := range sortedKeys(r.Arguments) {
			if v, ok := c.Args[arg]; ok && v.Truncated {
				return fmt.Sprintf(" (argument %s is too long to check against the policy)", arg)
			}
		}
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	//workflowcheck:ignore the keys are sorted before they are used
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// matchRule reports whether a rule covers a call. A rule with argument
// patterns matches only a call that carries every named argument with a
// matching value; a value cut before it reached the policy matches when
// truncatedMatches is set and never otherwise.
func matchRule(r Rule, c Call, truncatedMatches bool) bool {
	if !named(r.Name, c.Tool, c.Names) {
		return false
	}
	//workflowcheck:ignore every argument must match: the order does not change the answer
	for arg, pat := range r.Arguments {
		v, ok := c.Args[arg]
		if !ok {
			return false
		}
		if v.Truncated {
			if !truncatedMatches {
				return false
			}
			continue
		}
		if !Match(pat, v.Text) {
			return false
		}
	}
	return true
}
