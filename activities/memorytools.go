package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/workflows"
)

// The model's memory tools: axlr_recall reads, axlr_remember writes a
// memory in the workspace's about, judged by the policy like any write.
const (
	recallBytes         = 2 << 10
	maxRememberSummary  = 1000
	maxRememberEvidence = 4000
)

var (
	recallSpec = agent.ToolSpec{Name: workflows.RecallTool,
		Description: "Recall what memory holds for an intent: about this workspace's repository unless about names another (repo:<owner>/<name>, ws:<session id>). Each line starts with its ref.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"about":{"type":"string","description":"The memory's about; default this workspace's."},` +
			`"intent":{"type":"string","description":"What you are about to do or need to know."}},` +
			`"required":["intent"],"additionalProperties":false}`)}
	rememberSpec = agent.ToolSpec{Name: workflows.RememberTool,
		Description: "Record one durable fact in this workspace's memory, for later sessions and jobs: what was settled, with its evidence. The result says what was kept.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"kind":{"type":"string","enum":["` + strings.Join(kmp.Kinds, `","`) + `"]},` +
			`"summary":{"type":"string","maxLength":1000,"description":"The fact, in one or two sentences."},` +
			`"evidence":{"type":"string","maxLength":4000,"description":"What shows it: a file and line, a command and its exit, a message."}},` +
			`"required":["kind","summary","evidence"],"additionalProperties":false}`)}
)

type recallArgs struct {
	About  string `json:"about"`
	Intent string `json:"intent"`
}

type rememberArgs struct {
	Kind     string `json:"kind"`
	Summary  string `json:"summary"`
	Evidence string `json:"evidence"`
}

// decodeStrict decodes a tool's arguments, refusing unknown fields.
func decodeStrict(tool, raw string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(orEmptyObject(raw))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %v", tool, err)
	}
	return nil
}

// checkMemoryArgs checks a memory tool's arguments as the model sent them.
func checkMemoryArgs(name, raw string) error {
	switch name {
	case workflows.RecallTool:
		var a recallArgs
		if err := decodeStrict(name, raw, &a); err != nil {
			return err
		}
		if strings.TrimSpace(a.Intent) == "" {
			return fmt.Errorf("%s needs \"intent\"", name)
		}
	case workflows.RememberTool:
		var a rememberArgs
		if err := decodeStrict(name, raw, &a); err != nil {
			return err
		}
		switch {
		case !kmp.KnownKind(a.Kind):
			return fmt.Errorf("%s: kind %q is one of %s", name, a.Kind, strings.Join(kmp.Kinds, ", "))
		case strings.TrimSpace(a.Summary) == "" || strings.TrimSpace(a.Evidence) == "":
			return fmt.Errorf("%s needs a summary and its evidence", name)
		case len(a.Summary) > maxRememberSummary:
			return fmt.Errorf("%s: summary is %d bytes, at most %d", name, len(a.Summary), maxRememberSummary)
		case len(a.Evidence) > maxRememberEvidence:
			return fmt.Errorf("%s: evidence is %d bytes, at most %d", name, len(a.Evidence), maxRememberEvidence)
		}
	}
	return nil
}

// memoryCall runs axlr_recall or axlr_remember for a session's call. A
// remember is keyed by the call, so a retried attempt replays it.
func (h *HostTools) memoryCall(ctx context.Context, tc agent.ToolCall, in workflows.ToolCallInput) hostCall {
	if err := checkMemoryArgs(tc.Name, tc.Arguments); err != nil {
		return hostCall{contract.CallFailed, toolError("invalid_request", err.Error())}
	}
	about := WorkspaceAbout(in.Root)
	switch tc.Name {
	case workflows.RecallTool:
		var a recallArgs
		decodeStrict(tc.Name, tc.Arguments, &a)
		if a.About != "" {
			about = a.About
		}
		res, err := h.Memory.Wake(ctx, workflows.MemoryWakeInput{About: about, Intent: a.Intent, MaxBytes: recallBytes})
		if err != nil {
			return hostCall{contract.CallFailed, toolError("internal_error", err.Error())}
		}
		return answered(map[string]any{"about": about, "recall": res.Text, "refs": res.Refs, "note": res.Note})
	default:
		var a rememberArgs
		decodeStrict(tc.Name, tc.Arguments, &a)
		res, err := h.Memory.Write(ctx, workflows.MemoryWriteInput{SessionID: in.SessionID, Request: kmp.WriteRequest{
			About: about, Actor: "axlr", SourceKind: "agent", IdempotencyKey: "remember:" + in.SessionID + ":" + in.Key,
			Labels:   map[string][]string{"session": {in.SessionID}, "ws": {workflows.SessionAbout(in.SessionID)}, "source": {"model"}},
			Memories: []kmp.Memory{{ID: "memory", Kind: a.Kind, Summary: a.Summary, Evidence: a.Evidence}},
		}})
		switch {
		case err != nil:
			return hostCall{contract.CallFailed, toolError("internal_error", err.Error())}
		case res.Refused != "":
			return hostCall{contract.CallFailed, toolError("memory_refused", res.Refused)}
		}
		out := map[string]any{"kept": true, "about": about, "kind": a.Kind}
		if ref := res.Refs["memory"]; ref != "" {
			out["ref"], out["refs"] = ref, []string{ref}
		}
		if res.Pending {
			out["note"] = "memory is not reachable now: the memory waits in the session's sidecar and is written when it is back"
		}
		return answered(out)
	}
}
