package activities

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/session"
)

// What a turn's record keeps of its texts.
const (
	recordTextBytes = 500
	recordWhyBytes  = 300
	recordTailBytes = 500
)

// turnFacts is what a turn did, read from its session's log: the prompt
// and the answer, every action but the reads (counted), and the memories
// the model recorded.
type turnFacts struct {
	Prompt  string
	Answer  string
	Actions []turnAction
	Reads   int
	// Memories are the refs axlr_remember recorded.
	Memories []string
}

// turnAction is one call of a turn that is not a read.
type turnAction struct {
	// Effect: write, command, external, decision or memory.
	Effect   string              `json:"effect"`
	Tool     string              `json:"tool"`
	What     string              `json:"what"`
	Why      string              `json:"why,omitempty"`
	Status   contract.CallStatus `json:"status"`
	Decision contract.Decision   `json:"decision,omitempty"`
	ExitCode *int                `json:"exit_code,omitempty"`
	Tail     string              `json:"tail,omitempty"`
	// Reason is why a call that did not complete did not: the refusal,
	// the person's denial, the error, as its result says.
	Reason string `json:"reason,omitempty"`
}

// Effects of an action.
const (
	effectWrite    = "write"
	effectCommand  = "command"
	effectExternal = "external"
	effectDecision = "decision"
	effectMemory   = "memory"
)

// readTools never change anything outside the model's context.
var readTools = map[string]bool{
	"local_read": true, "local_search": true, "local_list": true,
	"axlr_tools": true, "axlr_recall": true, "axlr_session": true,
}

// SideEffects reports whether the turn wrote, ran, called out or decided
// anything: a turn that only read records no memory.
func (f turnFacts) SideEffects() bool { return len(f.Actions) > 0 }

// readTurn reads an execution's turn from its sessions' logs, first to
// last: from its prompt (or, for an execution a decision resumed, from
// the end of the one before it) to its result, or the log's end.
func readTurn(logs []*session.Log, executionID string) (turnFacts, error) {
	var f turnFacts
	calls := map[string]struct{ name, args, why string }{}
	for i, log := range logs {
		events := log.Events(0)
		if i == 0 {
			events = turnEvents(log, executionID)
		}
		for _, ev := range events {
			if ev.Type != evMessage {
				continue
			}
			d, err := decode[messageData](ev)
			if err != nil {
				return f, err
			}
			m := d.Message
			switch {
			case d.Prompt:
				if f.Prompt == "" {
					f.Prompt = jobs.Bound(m.Content, recordTextBytes)
				}
			case m.Role == "assistant":
				if strings.TrimSpace(m.Content) != "" {
					f.Answer = jobs.Bound(m.Content, recordTextBytes)
				}
				for _, c := range m.ToolCalls {
					calls[c.ID] = struct{ name, args, why string }{c.Name, c.Arguments, oneLine(m.Content, recordWhyBytes)}
				}
			case m.Role == "tool":
				c := calls[m.ToolCallID]
				tool := cmp.Or(d.Tool, c.name)
				if readTools[tool] && d.Status == contract.CallCompleted {
					f.Reads++
					continue
				}
				a := action(tool, c.args, m.Content)
				a.Why, a.Status, a.Decision = c.why, d.Status, d.Decision
				if d.Status != contract.CallCompleted {
					a.Reason = oneLine(m.Content, recordWhyBytes)
				}
				if a.Effect == effectMemory {
					f.Memories = append(f.Memories, rememberedRefs(m.Content)...)
				}
				f.Actions = append(f.Actions, a)
			}
		}
	}
	return f, nil
}

// turnEvents are an execution's events in the log that holds its
// start: from its prompt on; for an execution a decision resumed (no
// prompt of its own), from the previous execution's result to its own.
// Only the turn is read, not the log before it.
func turnEvents(log *session.Log, executionID string) []session.Event {
	if ev, ok := log.ByKey(keyPrompt(executionID)); ok {
		return log.Events(ev.Seq)
	}
	end := log.Len()
	if ev, ok := log.ByKey(keyResult(executionID)); ok {
		end = ev.Seq
	}
	const chunk = 64
	for hi := end; hi > 0; hi -= chunk {
		evs := log.Range(max(hi-chunk, 0), hi)
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Type == evResult {
				return log.Range(evs[i].Seq+1, end)
			}
		}
	}
	return log.Range(0, end)
}

// action reads what a call did from its arguments and its result.
func action(tool, args, result string) turnAction {
	var in struct {
		Path    string   `json:"path"`
		Program string   `json:"program"`
		Args    []string `json:"args"`
		URL     string   `json:"url"`
		Query   string   `json:"query"`
		Step    string   `json:"step"`
		Kind    string   `json:"kind"`
		Summary string   `json:"summary"`
	}
	json.Unmarshal([]byte(args), &in)
	a := turnAction{Tool: tool, Effect: effectExternal, What: tool}
	switch tool {
	case "local_write", "local_edit":
		a.Effect, a.What = effectWrite, in.Path
	case "local_exec":
		a.Effect, a.What = effectCommand, strings.TrimSpace(in.Program+" "+strings.Join(in.Args, " "))
		var out struct {
			ExitCode *int   `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
		}
		if json.Unmarshal([]byte(result), &out) == nil {
			a.ExitCode = out.ExitCode
			a.Tail = tailOf(strings.TrimSpace(out.Stdout+"\n"+out.Stderr), recordTailBytes)
		}
	case "web_fetch":
		a.What = in.URL
	case "web_search":
		a.What = in.Query
	case "axlr_step_done", "axlr_check", "axlr_grant_guard":
		a.Effect = effectDecision
		var r struct {
			Step string `json:"step"`
		}
		json.Unmarshal([]byte(result), &r)
		a.What = strings.TrimSpace(tool + " " + r.Step)
	case "axlr_remember":
		a.Effect, a.What = effectMemory, strings.TrimSpace(in.Kind+": "+jobs.Bound(in.Summary, 200))
	}
	if a.What == "" {
		a.What = tool
	}
	return a
}

// rememberedRefs are the refs an axlr_remember result says were kept.
func rememberedRefs(result string) []string {
	var r struct {
		Refs []string `json:"refs"`
	}
	json.Unmarshal([]byte(result), &r)
	return r.Refs
}

// Evidence is one line per action: what it was, how it ended, and for a
// command its exit.
func (a turnAction) Evidence() string {
	verb := map[string]string{effectWrite: "wrote", effectCommand: "ran", effectExternal: "called", effectDecision: "decided", effectMemory: "remembered"}[a.Effect]
	line := fmt.Sprintf("%s %s (%s", verb, a.What, a.Status)
	if a.Decision != "" {
		line += ", " + string(a.Decision)
	}
	if a.ExitCode != nil {
		line += fmt.Sprintf(", exit %d", *a.ExitCode)
	}
	line += ")"
	if a.Reason != "" {
		line += ": " + a.Reason
	}
	return line
}

// Summary counts the turn's actions by effect.
func (f turnFacts) Summary() string {
	n := map[string]int{}
	for _, a := range f.Actions {
		n[a.Effect]++
	}
	var parts []string
	for _, e := range []struct{ effect, one, many string }{
		{effectWrite, "1 file written", "%d files written"}, {effectCommand, "1 command run", "%d commands run"},
		{effectExternal, "1 external call", "%d external calls"}, {effectDecision, "1 decision", "%d decisions"},
		{effectMemory, "1 memory recorded", "%d memories recorded"},
	} {
		switch n[e.effect] {
		case 0:
		case 1:
			parts = append(parts, e.one)
		default:
			parts = append(parts, fmt.Sprintf(e.many, n[e.effect]))
		}
	}
	return strings.Join(parts, ", ")
}

// tailOf is the last n bytes of s, cut on a line when it can be.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := s[len(s)-n:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
		t = t[i+1:]
	}
	return "…" + t
}
