// Package card is the TUI's approval card: what waits for the person (a
// session's call, a job's check command or merge, a plan's commands or the
// plan itself) shown exactly, with a to approve and d (and x, for a plan)
// to refuse with a reason typed in place. The card calls nothing: it
// emits a DecisionMsg that the parent turns into the client's call.
package card

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// Subject is what a card decides.
type Subject int

// The subjects of a card.
const (
	Call Subject = iota
	Job
	PlanCommands
	Plan
)

// Verdict is the person's answer.
type Verdict string

// The verdicts: approve; deny (a call or a command), decline a merge, or
// return a plan to its planner; decline a plan.
const (
	Approve Verdict = "approve"
	Deny    Verdict = "deny"
	Decline Verdict = "decline"
)

// Request is what the card shows and the ids its decision names.
type Request struct {
	Subject Subject
	// Session and CallID name a session's pending call.
	Session, CallID string
	// Job, PendingKind and HeadSHA name a job's wait.
	Job         string
	PendingKind jobs.PendingKind
	HeadSHA     string
	// Plan names a plan.
	Plan string
	// Digest is the sha256 of the incident draft the card shows: its
	// approval names it.
	Digest string
	Title  string
	Lines  []string
}

// DecisionMsg is the person's decision on the card's request.
type DecisionMsg struct {
	Request Request
	Verdict Verdict
	Reason  string
}

// DecideRequest is the session's decide update for a call's decision.
func (d DecisionMsg) DecideRequest() workflows.DecideRequest {
	dec := contract.Approve
	if d.Verdict != Approve {
		dec = contract.Deny
	}
	return workflows.DecideRequest{CallID: d.Request.CallID, Decision: dec, Reason: d.Reason, Digest: d.Request.Digest}
}

// JobDecision is the job's decide update for a job's decision.
func (d DecisionMsg) JobDecision() workflows.JobDecision {
	dec := workflows.JobDecision{Job: d.Request.Job, Kind: d.Request.PendingKind, Approve: d.Verdict == Approve, Reason: d.Reason}
	if dec.Approve {
		dec.HeadSHA = d.Request.HeadSHA
	}
	return dec
}

// PlanDecision is the plan's decide update for a plan's decision: on the
// plan card d returns it to its planner and x declines it.
func (d DecisionMsg) PlanDecision() workflows.PlanDecision {
	dec := workflows.PlanDecision{Plan: d.Request.Plan, Kind: workflows.PlanDecidePlan, Reason: d.Reason}
	if d.Request.Subject == PlanCommands {
		dec.Kind = workflows.PlanDecideCommands
	}
	switch {
	case d.Verdict == Approve:
		dec.Decision = workflows.PlanApprove
	case d.Request.Subject == PlanCommands:
		dec.Decision = workflows.PlanDeny
	case d.Verdict == Decline:
		dec.Decision = workflows.PlanDecline
	default:
		dec.Decision = workflows.PlanReturn
	}
	return dec
}

// ForCall is the card of a session's pending call: the tool and its
// arguments, indented.
func ForCall(session string, pc contract.PendingCall) Request {
	if pc.Tool == workflows.ApproveTool {
		return forDraft(session, pc)
	}
	var g workflows.GuardApproval
	if pc.Tool == workflows.GrantTool && json.Unmarshal(pc.Arguments, &g) == nil {
		return Request{Subject: Call, Session: session, CallID: pc.CallID,
			Title: fmt.Sprintf("Grant guard %s of %s %s?", g.Guard, g.Definition, g.Version),
			Lines: []string{fmt.Sprintf("instance %s waits in %s for your approval.", g.InstanceID, g.State),
				fmt.Sprintf("a grants it as %s, your approver identity; d declines it, and AXLR stops driving the instance.", g.Role)}}
	}
	lines := []string{"tool: " + pc.Tool}
	var args bytes.Buffer
	if json.Indent(&args, pc.Arguments, "", "  ") == nil {
		lines = append(lines, strings.Split(args.String(), "\n")...)
	} else if len(pc.Arguments) > 0 {
		lines = append(lines, string(pc.Arguments))
	}
	return Request{Subject: Call, Session: session, CallID: pc.CallID, Title: "Approve call " + pc.CallID + "?", Lines: lines}
}

// forDraft is the card of an incident's reviewed draft: a approves these
// exact bytes (by their digest), d returns them with a reason.
func forDraft(session string, pc contract.PendingCall) Request {
	var d workflows.DraftPending
	r := Request{Subject: Call, Session: session, CallID: pc.CallID}
	if err := json.Unmarshal(pc.Arguments, &d); err != nil {
		r.Title, r.Lines = "Approve call "+pc.CallID+"?", []string{"the pending draft does not read: " + err.Error()}
		return r
	}
	r.Digest = d.Digest
	r.Title = "Approve the postmortem draft " + d.Path + "?"
	r.Lines = append([]string{fmt.Sprintf("sha256 %s, %d bytes, as reviewed: a approves these bytes; d returns them with a reason", d.Digest, d.Bytes), ""},
		strings.Split(d.Content, "\n")...)
	return r
}

// ForJob is the card of what a job waits for: its check command, or the
// merge of its pull request at the head the merge is guarded by.
func ForJob(rec jobs.Record) (Request, error) {
	p := rec.Pending
	if p == nil {
		return Request{}, fmt.Errorf("job %s waits for no decision (it is %s)", rec.ID, rec.Status)
	}
	r := Request{Subject: Job, Job: rec.ID, PendingKind: p.Kind, HeadSHA: p.HeadSHA}
	if p.Kind == jobs.PendingMerge {
		r.Title = fmt.Sprintf("Merge %s's pull request?", rec.ID)
		r.Lines = []string{fmt.Sprintf("pull request #%d at %s, squashed", p.PullRequest, p.HeadSHA)}
		if rec.URL != "" {
			r.Lines = append(r.Lines, rec.URL)
		}
		if rec.Candidate != nil {
			r.Lines = append(r.Lines, "candidate: "+rec.Candidate.Version+" in "+rec.Candidate.Path)
		}
		if p.Behind {
			r.Lines = append(r.Lines, "behind its base again, which must be up to date: m in the jobs panel queues it")
		}
		return r, nil
	}
	r.Title = fmt.Sprintf("Run %s's check command?", rec.ID)
	r.Lines = []string{p.Command}
	return r, nil
}

// ForPlan is the card of what a plan waits for: its commands, or the
// plan's task table.
func ForPlan(rec plans.Record) (Request, error) {
	if rec.Pending == nil && rec.Status != plans.AwaitingApproval {
		return Request{}, fmt.Errorf("plan %s waits for no decision (it is %s)", rec.ID, rec.Status)
	}
	if rec.Pending != nil && rec.Pending.Kind == plans.PendingCommand {
		return Request{Subject: PlanCommands, Plan: rec.ID, Title: fmt.Sprintf("Run plan %s's commands?", rec.ID), Lines: rec.Pending.Commands}, nil
	}
	lines := []string{"brief: " + common.OneLine(rec.Brief)}
	for _, t := range rec.Tasks {
		line := fmt.Sprintf("wave %d  %s  %s", t.Wave, t.ID, common.OneLine(t.Goal))
		if len(t.DependsOn) > 0 {
			line += "  (after " + strings.Join(t.DependsOn, ", ") + ")"
		}
		lines = append(lines, line)
	}
	return Request{Subject: Plan, Plan: rec.ID, Title: fmt.Sprintf("Approve plan %s (%d tasks, %d waves)?", rec.ID, len(rec.Tasks), rec.Waves), Lines: lines}, nil
}

// Model is a card on screen.
type Model struct {
	common.Common
	req     Request
	refuse  Verdict
	input   textinput.Model
	warning string
}

// New returns the card of req.
func New(com common.Common, req Request) Model {
	return Model{Common: com, req: req, input: com.Input("why")}
}

// Request returns what the card decides.
func (m Model) Request() Request { return m.req }

// Editing reports whether a reason is being typed: Esc then cancels it.
func (m Model) Editing() bool { return m.refuse != "" }

// Update handles a, d, x and the reason's keys.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	key, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return m, nil
	}
	if m.refuse != "" {
		switch key.String() {
		case "esc":
			m.refuse, m.warning = "", ""
			m.input.Blur()
			return m, nil
		case "enter":
			reason := strings.TrimSpace(m.input.Value())
			if reason == "" {
				m.warning = "a reason is needed: type why, or Esc cancels"
				return m, nil
			}
			d := DecisionMsg{Request: m.req, Verdict: m.refuse, Reason: reason}
			return m, func() tea.Msg { return d }
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	switch key.String() {
	case "a":
		d := DecisionMsg{Request: m.req, Verdict: Approve}
		return m, func() tea.Msg { return d }
	case "d":
		m.refuse = Deny
		if m.req.PendingKind == jobs.PendingMerge {
			m.refuse = Decline
		}
	case "x":
		if m.req.Subject != Plan {
			return m, nil
		}
		m.refuse = Decline
	default:
		return m, nil
	}
	m.input.Reset()
	return m, m.input.Focus()
}

// View draws the card in a box Width wide, its lines wrapped, never cut.
func (m Model) View() string {
	inner := max(m.Width-4, 10)
	var body []string
	body = append(body, m.Styles.Title.Render(ansi.Hardwrap(m.req.Title, inner, true)))
	for _, l := range m.req.Lines {
		body = append(body, ansi.Hardwrap(l, inner, true))
	}
	body = append(body, "")
	switch {
	case m.refuse != "":
		body = append(body, ansi.Hardwrap(m.refuseLabel()+" (Enter sends, Esc cancels): "+m.input.View(), inner, true))
		if m.warning != "" {
			body = append(body, m.Styles.Error.Render(m.warning))
		}
	default:
		body = append(body, m.Styles.Dim.Render(m.keys()))
	}
	var b strings.Builder
	b.WriteString(m.Styles.Border.Render("┌" + strings.Repeat("─", inner+2) + "┐"))
	for _, chunk := range body {
		for _, l := range strings.Split(chunk, "\n") {
			b.WriteString("\n" + m.Styles.Border.Render("│") + " " + common.Fit(l, inner) + " " + m.Styles.Border.Render("│"))
		}
	}
	b.WriteString("\n" + m.Styles.Border.Render("└"+strings.Repeat("─", inner+2)+"┘"))
	return b.String()
}

func (m Model) keys() string {
	switch {
	case m.req.Subject == Plan:
		return "a approve · d return with a reason · x decline with a reason"
	case m.req.PendingKind == jobs.PendingMerge:
		return "a merge · d decline with a reason"
	}
	return "a approve · d deny with a reason"
}

func (m Model) refuseLabel() string {
	switch {
	case m.req.Subject == Plan && m.refuse == Deny:
		return "return, because"
	case m.refuse == Decline:
		return "decline, because"
	}
	return "deny, because"
}
