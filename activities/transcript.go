package activities

import (
	"encoding/json"
	"fmt"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/session"
)

// Event types of a session log.
const (
	evCreated   = "session.created"
	evMessage   = "message"
	evStarted   = "tool.started"
	evContinued = "session.continued"
	evResult    = "execution.result"
)

// Idempotency keys of a session log.
const (
	keyCreated      = "created"
	keySystem       = "system"
	keyContinuation = "continuation"
)

func keyPrompt(executionID string) string { return "prompt:" + executionID }
func keyResponse(revision int) string     { return fmt.Sprintf("response:%d", revision) }
func keyTool(callKey string) string       { return "tool:" + callKey }
func keyStarted(callKey string) string    { return "started:" + callKey }
func keyContinued(revision int) string    { return fmt.Sprintf("continued:%d", revision) }
func keyResult(executionID string) string { return "result:" + executionID }

// createdData is the first event of a session.
type createdData struct {
	Root  string `json:"root"`
	Mode  string `json:"mode"`
	Model string `json:"model,omitempty"`
	// Predecessor and Request are set on a successor opened past the
	// context cap: the session it continues and the person's request.
	Predecessor string `json:"predecessor,omitempty"`
	Request     string `json:"request,omitempty"`
}

// messageData is a transcript message with what axlr knows about it.
type messageData struct {
	Message agent.Message `json:"message"`
	// Prompt marks the person's own prompt (and a successor's
	// continuation, which stands for it).
	Prompt bool `json:"prompt,omitempty"`
	// Response fields.
	Model        string       `json:"model,omitempty"`
	FinishReason string       `json:"finish_reason,omitempty"`
	Usage        *agent.Usage `json:"usage,omitempty"`
	// Tool result fields.
	Tool     string              `json:"tool,omitempty"`
	CallKey  string              `json:"call_key,omitempty"`
	Status   contract.CallStatus `json:"status,omitempty"`
	Decision contract.Decision   `json:"decision,omitempty"`
}

type startedData struct {
	CallKey string `json:"call_key"`
	Tool    string `json:"tool"`
	Attempt int32  `json:"attempt"`
}

type continuedData struct {
	Successor string `json:"successor"`
}

func decode[T any](ev session.Event) (T, error) {
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		return v, fmt.Errorf("decode %s event %d of session %s: %w", ev.Type, ev.Seq, ev.SessionID, err)
	}
	return v, nil
}

// interruptedResult is what the model reads for a call whose result never
// reached the transcript (the execution was interrupted or failed around
// it).
const interruptedResult = "no result: the execution was interrupted around this call; it may have run in part. Check before repeating it."

// transcript rebuilds the provider messages from a session's events. A tool
// call without a recorded result gets interruptedResult right after its
// message, so the transcript stays valid for any provider.
func transcript(events []session.Event) ([]agent.Message, error) {
	var msgs []agent.Message
	var open []string // call ids of the last assistant message still without a result
	flush := func() {
		for _, id := range open {
			msgs = append(msgs, agent.Message{Role: "tool", ToolCallID: id, Content: interruptedResult})
		}
		open = nil
	}
	for _, ev := range events {
		if ev.Type != evMessage {
			continue
		}
		d, err := decode[messageData](ev)
		if err != nil {
			return nil, err
		}
		m := d.Message
		m.Reasoning = ""
		switch m.Role {
		case "tool":
			idx := -1
			for i, id := range open {
				if id == m.ToolCallID {
					idx = i
					break
				}
			}
			if idx < 0 {
				// A result for no open call: drop it rather than send a
				// transcript the provider refuses.
				continue
			}
			open = append(open[:idx], open[idx+1:]...)
			msgs = append(msgs, m)
		case "assistant":
			flush()
			msgs = append(msgs, m)
			for _, tc := range m.ToolCalls {
				open = append(open, tc.ID)
			}
		default:
			flush()
			msgs = append(msgs, m)
		}
	}
	flush()
	return msgs, nil
}
