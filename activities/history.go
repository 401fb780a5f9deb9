package activities

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// The compact profile's context beyond the 80 KiB ceiling: a request that
// would pass the ceiling leaves out the step's oldest work, down to the low
// watermark, and a checkpoint of at most 4 KiB says what was left out.
const (
	CompactWatermark  = 56 << 10
	CompactCheckpoint = 4 << 10
)

// msgSize estimates what a message weighs in a request.
func msgSize(m agent.Message) int {
	n := 16 + len(m.Content) + len(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += 32 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}

// compactView fits a compact step's request under ceiling bytes. The head
// (the system prompt and the message after it: the ledger, or the request
// that began the workflow) always stays. Past the ceiling, the oldest
// exchanges of the rest are left out and a checkpoint stands for them. The
// cut moves in steps of ceiling-watermark bytes of the append-only
// transcript, so every request until the next step sends the same prefix (a
// provider's prompt cache survives) and each cut brings the request back to
// about the watermark. ok is false when even the last exchange does not fit
// (the session continues in a successor); a transcript of only the head is
// sent as it is.
func compactView(msgs []agent.Message, seqs []int, ceiling int) (out []agent.Message, ok bool) {
	total := 0
	for _, m := range msgs {
		total += msgSize(m)
	}
	if total <= ceiling {
		return msgs, true
	}
	head := 0
	for head < len(msgs) && msgs[head].Role == "system" {
		head++
	}
	head = min(head+1, len(msgs))
	if head == len(msgs) {
		// Nothing but the head (a successor's opening): there is nothing
		// to leave out, and a new session would open with the same.
		return msgs, true
	}
	headSize := 0
	for _, m := range msgs[:head] {
		headSize += msgSize(m)
	}
	budget := ceiling - headSize - CompactCheckpoint
	step := ceiling - ceiling*CompactWatermark/CompactCeiling
	if budget <= 0 || step <= 0 {
		return nil, false
	}
	body := total - headSize
	cut := (body - budget + step - 1) / step * step
	// The first exchange (a message other than a tool result) that starts
	// at or after cut bytes into the body.
	off := 0
	for i := head; i < len(msgs); i++ {
		if msgs[i].Role != "tool" && off >= cut && i > head {
			out = make([]agent.Message, 0, head+1+len(msgs)-i)
			out = append(out, msgs[:head]...)
			out = append(out, agent.Message{Role: "user", Content: checkpoint(msgs[head:i], seqs[head:i], ceiling)})
			return append(out, msgs[i:]...), true
		}
		off += msgSize(msgs[i])
	}
	return nil, false
}

// checkpoint says what the left-out messages held, one line each, the most
// recent kept when they do not all fit in CompactCheckpoint bytes.
func checkpoint(msgs []agent.Message, seqs []int, ceiling int) string {
	first, last := -1, -1
	var lines []string
	for i, m := range msgs {
		if seqs[i] >= 0 {
			if first < 0 {
				first = seqs[i]
			}
			last = seqs[i]
		}
		lines = append(lines, summaryLine(m, seqs[i]))
	}
	head := fmt.Sprintf("[AXLR · checkpoint] This step's context passed its %d KiB ceiling: messages #%d-#%d are left out of it. %s reads any of them by number. What they held:\n",
		ceiling>>10, first, last, workflows.HistoryTool)
	room := CompactCheckpoint - len(head) - 64
	keep := len(lines)
	for size := 0; keep > 0 && size+len(lines[keep-1])+1 <= room; keep-- {
		size += len(lines[keep-1]) + 1
	}
	var b strings.Builder
	b.WriteString(head)
	if keep > 0 {
		fmt.Fprintf(&b, "(%d earlier messages not listed)\n", keep)
	}
	for _, l := range lines[keep:] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

func summaryLine(m agent.Message, seq int) string {
	num := "-"
	if seq >= 0 {
		num = fmt.Sprintf("#%d", seq)
	}
	switch {
	case m.Role == "assistant" && len(m.ToolCalls) > 0:
		var calls []string
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.Name+" "+oneLine(tc.Arguments, 120))
		}
		line := num + " you called " + strings.Join(calls, "; ")
		if m.Content != "" {
			line += " saying " + oneLine(m.Content, 80)
		}
		return line
	case m.Role == "assistant":
		return num + " you wrote: " + oneLine(m.Content, 120)
	case m.Role == "tool":
		return fmt.Sprintf("%s result (%d bytes): %s", num, len(m.Content), oneLine(m.Content, 100))
	}
	return num + " note: " + oneLine(m.Content, 120)
}

// oneLine is s on one line, cut to n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return cutUTF8(s, n) + "…"
	}
	return s
}

// historyArgs are axlr_history's arguments: the first and last event
// numbers to read (to defaults to from+historyDefaultSpan-1).
type historyArgs struct {
	From *int `json:"from"`
	To   *int `json:"to"`
}

const historyDefaultSpan = 20

// historySpec is axlr_history as the model sees it.
var historySpec = agent.ToolSpec{
	Name:        workflows.HistoryTool,
	Description: "Read messages of this session's saved transcript by number (#N in the ledger and checkpoints): the model's calls and answers, tool results and notes. Output is cut at 8 KiB; read on from the number it names.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"from":{"type":"integer","minimum":0,"description":"First message number."},` +
		`"to":{"type":"integer","minimum":0,"description":"Last message number (default from+19)."}},` +
		`"required":["from"],"additionalProperties":false}`),
}

// parseHistoryArgs reads axlr_history's arguments, refusing unknown fields.
func parseHistoryArgs(raw string) (from, to int, err error) {
	var a historyArgs
	dec := json.NewDecoder(bytes.NewReader([]byte(orEmptyObject(raw))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return 0, 0, fmt.Errorf("%s takes {\"from\": N, \"to\": M}: %v", workflows.HistoryTool, err)
	}
	if a.From == nil {
		return 0, 0, fmt.Errorf("%s needs \"from\", the first message number", workflows.HistoryTool)
	}
	from, to = *a.From, *a.From+historyDefaultSpan-1
	if a.To != nil {
		to = *a.To
	}
	if from < 0 || to < from {
		return 0, 0, fmt.Errorf("%s reads messages from %d to %d: want 0 <= from <= to", workflows.HistoryTool, from, to)
	}
	return from, to, nil
}

// readHistory renders events from..to of a session log, cut at limit bytes.
func readHistory(log *session.Log, from, to, limit int) (string, error) {
	n := log.Len()
	if from >= n {
		return "", fmt.Errorf("message #%d is past the end of the transcript (#%d is the last)", from, n-1)
	}
	to = min(to, n-1)
	var b strings.Builder
	for _, ev := range log.Range(from, to+1) {
		var text string
		switch ev.Type {
		case evMessage, evView:
			d, err := decode[messageData](ev)
			if err != nil {
				return "", err
			}
			text = historyEntry(ev, d)
		default:
			continue
		}
		if b.Len()+len(text) > limit {
			if b.Len() == 0 {
				fmt.Fprintf(&b, "%s\n[AXLR] message #%d cut at %d of %d bytes", cutUTF8(text, limit), ev.Seq, limit, len(text))
				if ev.Seq < to {
					fmt.Fprintf(&b, "; read on from #%d", ev.Seq+1)
				}
				return b.String(), nil
			}
			fmt.Fprintf(&b, "[AXLR] output cut at %d bytes: read on from #%d", limit, ev.Seq)
			return b.String(), nil
		}
		b.WriteString(text)
	}
	if b.Len() == 0 {
		return fmt.Sprintf("messages #%d-#%d hold no transcript message (tool bookkeeping only)", from, to), nil
	}
	return b.String(), nil
}

func historyEntry(ev session.Event, d messageData) string {
	m := d.Message
	var b strings.Builder
	switch {
	case ev.Type == evView:
		fmt.Fprintf(&b, "#%d ledger:\n", ev.Seq)
	case m.Role == "tool":
		fmt.Fprintf(&b, "#%d result of %s (%s):\n", ev.Seq, d.Tool, d.Status)
	default:
		fmt.Fprintf(&b, "#%d %s:\n", ev.Seq, m.Role)
	}
	if m.Content != "" {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, "call %s %s\n", tc.Name, tc.Arguments)
	}
	b.WriteByte('\n')
	return b.String()
}
