package activities

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// Bounds of a successor's opening message.
const (
	continuationLimit = 32 << 10
	resultLimit       = 4 << 10
	maxStepLines      = 200
)

// bytesPerToken estimates tokens from bytes where the provider reported none.
const bytesPerToken = 4

// ContinueSession opens the successor of a session past its context cap:
// a new session whose first messages carry the person's request, what was
// done, and the last results. It is idempotent on the predecessor's
// revision: the successor is named in the predecessor before it is written.
func (a *Session) ContinueSession(ctx context.Context, in workflows.ContinueSessionInput) (workflows.ContinueSessionResult, error) {
	pred, err := a.open(in.SessionID)
	if err != nil {
		return workflows.ContinueSessionResult{}, err
	}
	var succID string
	if ev, ok := pred.ByKey(keyContinued(in.Revision)); ok {
		d, err := decode[continuedData](ev)
		if err != nil {
			return workflows.ContinueSessionResult{}, err
		}
		succID = d.Successor
	} else {
		if n := pred.Len(); n != in.Revision {
			return workflows.ContinueSessionResult{}, diverged(in.SessionID, n, in.Revision)
		}
		id, err := session.NewID()
		if err != nil {
			return workflows.ContinueSessionResult{}, fmt.Errorf("new session id: %w", err)
		}
		if _, err := appendEvent(pred, evContinued, keyContinued(in.Revision), continuedData{Successor: id}); err != nil {
			return workflows.ContinueSessionResult{}, err
		}
		succID = id
	}
	events := pred.Events(0)
	var meta createdData
	if ev, ok := pred.ByKey(keyCreated); ok {
		if meta, err = decode[createdData](ev); err != nil {
			return workflows.ContinueSessionResult{}, err
		}
	}
	request, note, err := continuation(events, meta, in.SessionID, in.ContextCap)
	if err != nil {
		return workflows.ContinueSessionResult{}, err
	}
	succ, _, err := a.openOrCreate(succID)
	if err != nil {
		return workflows.ContinueSessionResult{}, err
	}
	if _, err := appendEvent(succ, evCreated, keyCreated, createdData{
		Root: meta.Root, Mode: meta.Mode, Model: in.Model, Predecessor: in.SessionID, Request: request,
	}); err != nil {
		return workflows.ContinueSessionResult{}, err
	}
	if err := a.appendMessage(succ, keySystem, messageData{Message: agent.Message{Role: "system", Content: systemPrompt(meta.Root, a.Workspaces.sandbox())}}); err != nil {
		return workflows.ContinueSessionResult{}, err
	}
	if err := a.appendMessage(succ, keyContinuation, messageData{Message: agent.Message{Role: "user", Content: note}, Prompt: true}); err != nil {
		return workflows.ContinueSessionResult{}, err
	}
	return workflows.ContinueSessionResult{SessionID: succID, Revision: succ.Len()}, nil
}

// continuation writes the successor's opening message from the
// predecessor's transcript: the person's request, one line per call since
// it, the results of the last response's calls and the last answer text.
func continuation(events []session.Event, meta createdData, from string, limit int) (request, note string, err error) {
	request = meta.Request
	type step struct{ call, status string }
	var steps []step
	var lastResults []string
	var lastText string
	for _, ev := range events {
		if ev.Type != evMessage {
			continue
		}
		d, err := decode[messageData](ev)
		if err != nil {
			return "", "", err
		}
		m := d.Message
		switch {
		case d.Prompt && m.Role == "user" && ev.Key != keyContinuation:
			request, steps, lastResults, lastText = m.Content, nil, nil, ""
		case m.Role == "assistant":
			lastResults = nil
			if strings.TrimSpace(m.Content) != "" {
				lastText = m.Content
			}
			for _, tc := range m.ToolCalls {
				steps = append(steps, step{call: tc.Name + " " + cutUTF8(tc.Arguments, 160)})
			}
		case m.Role == "tool":
			for i := len(steps) - 1; i >= 0; i-- {
				if steps[i].status == "" {
					steps[i].status = string(d.Status)
					break
				}
			}
			lastResults = append(lastResults, d.Tool+": "+cutUTF8(m.Content, resultLimit))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[AXLR] This session continues session %s, which reached its context cap (%d tokens).\n\n", from, limit)
	fmt.Fprintf(&b, "The person's request:\n%s\n\n", request)
	if len(steps) > 0 {
		b.WriteString("Calls made so far, in order:\n")
		if len(steps) > maxStepLines {
			fmt.Fprintf(&b, "(%d earlier calls omitted)\n", len(steps)-maxStepLines)
			steps = steps[len(steps)-maxStepLines:]
		}
		for _, s := range steps {
			fmt.Fprintf(&b, "- %s → %s\n", s.call, cmp.Or(s.status, "no result"))
		}
		b.WriteString("\n")
	}
	if len(lastResults) > 0 {
		b.WriteString("Results of the last calls:\n")
		for _, r := range lastResults {
			b.WriteString(r + "\n")
		}
		b.WriteString("\n")
	}
	if lastText != "" {
		fmt.Fprintf(&b, "Your last message:\n%s\n\n", cutUTF8(lastText, resultLimit))
	}
	b.WriteString("Continue the work from here; read files again where you need their content.")
	return request, cutUTF8(b.String(), continuationLimit), nil
}
