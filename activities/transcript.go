package activities

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

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
	// evView starts the model's view of the transcript afresh: the system
	// prompt, then the event's text (a compact ceremony step's ledger). The
	// log keeps everything before it.
	evView = "transcript.view"
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

// builder rebuilds the provider messages from a session's events, one event
// at a time, so a long session is decoded once and extended per request.
type builder struct {
	// events is how many events were added.
	events int
	system *agent.Message
	// systemSeq is the system prompt's event; msgs the messages, seqs the
	// event each came from (-1 for an interruptedResult put in by flush).
	systemSeq int
	msgs      []agent.Message
	seqs      []int
	// open holds the call ids of the last assistant message still without
	// a result.
	open []string
	// For the context cap: responses seen, the tokens the last reporting
	// response used (prompt and completion), the bytes of messages since
	// it, and the bytes of all messages.
	responses   int
	used        int64
	since, size int64
}

// add takes the next events of the log.
func (b *builder) add(events []session.Event) error {
	for _, ev := range events {
		b.events++
		if ev.Type == evView {
			d, err := decode[messageData](ev)
			if err != nil {
				return err
			}
			b.msgs, b.seqs, b.open = nil, nil, nil
			if b.system != nil {
				b.push(*b.system, b.systemSeq)
			}
			b.push(d.Message, ev.Seq)
			b.used, b.since, b.size = 0, 0, int64(len(ev.Data))
			continue
		}
		if ev.Type != evMessage {
			continue
		}
		d, err := decode[messageData](ev)
		if err != nil {
			return err
		}
		m := d.Message
		m.Reasoning = ""
		b.measure(m, d.Usage, int64(len(ev.Data)))
		if m.Role == "system" && b.system == nil {
			b.system, b.systemSeq = &m, ev.Seq
		}
		switch m.Role {
		case "tool":
			idx := slices.Index(b.open, m.ToolCallID)
			if idx < 0 {
				// A result for no open call: drop it rather than send a
				// transcript the provider refuses.
				continue
			}
			b.open = slices.Delete(b.open, idx, idx+1)
			b.push(m, ev.Seq)
		case "assistant":
			b.flush()
			b.push(m, ev.Seq)
			for _, tc := range m.ToolCalls {
				b.open = append(b.open, tc.ID)
			}
		default:
			b.flush()
			b.push(m, ev.Seq)
		}
	}
	return nil
}

func (b *builder) push(m agent.Message, seq int) {
	b.msgs = append(b.msgs, m)
	b.seqs = append(b.seqs, seq)
}

// measure counts a message toward the context cap.
func (b *builder) measure(m agent.Message, u *agent.Usage, size int64) {
	b.size += size
	if m.Role == "assistant" {
		b.responses++
		if u != nil && u.PromptTokens+u.CompletionTokens > 0 {
			b.used, b.since = u.PromptTokens+u.CompletionTokens, 0
			return
		}
	}
	b.since += size
}

// pastCap reports whether the next request would exceed a context cap of
// limit tokens: the last response's reported prompt and completion tokens
// plus what was appended since, estimated from its size (all of the
// transcript when no response reported usage). A session without a
// response is never past its cap, so a successor can always start.
func (b *builder) pastCap(limit int) bool {
	if limit <= 0 || b.responses == 0 {
		return false
	}
	if b.used == 0 {
		return b.size/bytesPerToken > int64(limit)
	}
	return b.used+b.since/bytesPerToken > int64(limit)
}

// flush answers the open calls with interruptedResult.
func (b *builder) flush() {
	for _, id := range b.open {
		b.push(agent.Message{Role: "tool", ToolCallID: id, Content: interruptedResult}, -1)
	}
	b.open = nil
}

// messages returns the transcript and the event of each message: a tool
// call without a recorded result gets interruptedResult right after its
// message, so the transcript stays valid for any provider. resultLimit, when
// positive, cuts each tool result (the compact profile's 8 KiB).
func (b *builder) messages(resultLimit int) ([]agent.Message, []int) {
	out, seqs := slices.Clone(b.msgs), slices.Clone(b.seqs)
	if resultLimit > 0 {
		for i, m := range out {
			if m.Role == "tool" && len(m.Content) > resultLimit {
				out[i].Content = cutUTF8(m.Content, resultLimit) + fmt.Sprintf("\n[AXLR] result cut to %d of %d bytes", resultLimit, len(m.Content))
			}
		}
	}
	for _, id := range b.open {
		out = append(out, agent.Message{Role: "tool", ToolCallID: id, Content: interruptedResult})
		seqs = append(seqs, -1)
	}
	return out, seqs
}

// transcripts caches the builders of recently used sessions.
type transcripts struct {
	mu    sync.Mutex
	byID  map[string]*builder
	order []string // least recently used first
}

// maxCachedTranscripts bounds the cache; a session beyond it is rebuilt
// from its log on its next request.
const maxCachedTranscripts = 32

// get returns the transcript of a log, extending the cached one, with the
// event of each message, and whether it is past a context cap of limit
// tokens (0: no cap); resultLimit cuts tool results (0: whole).
func (c *transcripts) get(log *session.Log, limit, resultLimit int) ([]agent.Message, []int, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string]*builder{}
	}
	id := log.ID()
	b, ok := c.byID[id]
	if !ok || b.events > log.Len() {
		b = &builder{}
	}
	if err := b.add(log.Events(b.events)); err != nil {
		delete(c.byID, id)
		return nil, nil, false, err
	}
	c.byID[id] = b
	c.order = append(slices.DeleteFunc(c.order, func(s string) bool { return s == id }), id)
	if len(c.order) > maxCachedTranscripts {
		delete(c.byID, c.order[0])
		c.order = c.order[1:]
	}
	msgs, seqs := b.messages(resultLimit)
	return msgs, seqs, b.pastCap(limit), nil
}
