package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// An incident (--mode incident, /incident) runs axlr_incident 1.0 in a
// session, with what the session adds to it as its CeremonyHooks: the
// checks of the model's steps, which read the workspace and the day, and
// the two console steps, which run between the model's requests. The
// review asks a reviewer in a fresh context; the presentation ends the
// execution needs_decision with the exact draft pending, and the person's
// decision names its digest. Everything the hooks keep is in the
// ceremony's records: the triage's slug, each revision's digest, each
// review's, each decision's.

// Activity names of the incident's checks and review, registered with the
// "ceremony." prefix by activities.Ceremony.
const (
	ActivityIncidentCheck  = "ceremony.IncidentCheck"
	ActivityIncidentReview = "ceremony.IncidentReview"
	ActivityDraftDigest    = "ceremony.DraftDigest"
)

// ApproveTool names the incident's draft waiting for the person's
// approval in a result's pending call.
const ApproveTool = "axlr_approve_draft"

// IncidentCheckInput checks an incident step's hand-back, read from the
// transcript, against the workspace and the day.
type IncidentCheckInput struct {
	SessionID string `json:"session_id"`
	CallKey   string `json:"call_key"`
	Root      string `json:"root"`
	Step      string `json:"step"`
	// Now is the workflow's time when the step was handed back: actions
	// are due after its day.
	Now time.Time `json:"now"`
	// Slug is the triage's, for a revision and the publication.
	Slug string `json:"slug,omitempty"`
	// Approved is the digest the person approved and Day the day of the
	// approval (YYYY-MM-DD), for the publication.
	Approved string `json:"approved,omitempty"`
	Day      string `json:"day,omitempty"`
}

// IncidentCheckResult is the check's verdict: why the hand-back is
// refused, or what AXLR records beside its fields.
type IncidentCheckResult struct {
	Refused  string         `json:"refused,omitempty"`
	Recorded map[string]any `json:"recorded,omitempty"`
}

// IncidentReviewInput asks the reviewer for its review of a draft: a
// model request in a fresh context, once per key.
type IncidentReviewInput struct {
	SessionID  string `json:"session_id"`
	Key        string `json:"key"`
	InstanceID string `json:"instance_id"`
	Path       string `json:"path"`
	Digest     string `json:"digest"`
	// Model is the session's, which reviewer_model in settings overrides.
	Model string `json:"model"`
}

// IncidentReviewResult is the reviewer's verdict on the draft it read.
type IncidentReviewResult struct {
	Accepted      bool     `json:"accepted"`
	Findings      []string `json:"findings"`
	ReviewerModel string   `json:"reviewer_model"`
}

// DraftDigestInput reads a draft's digest as it is on disk now.
type DraftDigestInput struct {
	Root string `json:"root"`
	Path string `json:"path"`
}

// DraftDigestResult is a draft's sha256 on disk; empty when it is gone.
type DraftDigestResult struct {
	Digest string `json:"digest"`
}

// DraftApproval is the reviewed draft that waits for the person's
// approval: the pending call's arguments, with its bytes (which the
// result carries, read from axlrd's kept copy).
type DraftApproval struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path"`
	Digest     string `json:"sha256"`
	Bytes      int    `json:"bytes"`
}

// DraftPending is a result's pending call of a draft waiting for approval:
// the DraftApproval and the draft's bytes as they were reviewed.
type DraftPending struct {
	DraftApproval
	Content string `json:"content"`
}

// IncidentOptions run an incident's check: short, on the workspace.
var IncidentOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		MaximumAttempts:        5,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeSessionDiverged},
	},
}

// ReviewOptions run the reviewer's request: a provider that is down or an
// answer that does not parse is asked again, and after the last attempt
// the execution fails with the review still pending, for the next prompt
// to ask again. It never counts as an acceptance.
var ReviewOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        2 * time.Second,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        6,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeSessionDiverged, ErrTypeProviderRejected},
	},
}

// ConsoleRunner is what a host's CeremonyHooks add when the host runs its
// ceremony's console steps between the model's requests (an incident's
// review and presentation): the driver runs each before the next request,
// and the host decides the call a console step made wait.
type ConsoleRunner interface {
	// RunConsole runs the console step open now: it completes it, or makes
	// the execution wait for the person (errPending).
	RunConsole(ctx workflow.Context, st ceremonies.Step) error
	// DecideConsole applies the person's decision on the call a console
	// step made wait.
	DecideConsole(ctx workflow.Context, p *PendingState, req *DecideRequest) error
}

// incidentHooks are the session's hooks of an incident.
type incidentHooks struct{ d *Driver }

var (
	_ CeremonyHooks = incidentHooks{}
	_ ConsoleRunner = incidentHooks{}
)

func (incidentHooks) TestFiles() ([]string, bool) { return nil, false }

// lastRecord is the output of a step's last completed record, nil when it
// has none.
func (c *CeremonyState) lastRecord(step string) map[string]any {
	for i := len(c.Records) - 1; i >= 0; i-- {
		if r := c.Records[i]; r.Step == step && r.Status == "completed" {
			return r.Output
		}
	}
	return nil
}

// recordedText is a text field of a step's last completed record.
func (c *CeremonyState) recordedText(step, field string) string {
	s, _ := c.lastRecord(step)[field].(string)
	return s
}

// CheckStep checks a hand-back of the incident's model steps in the
// workspace (ceremonies.CheckIncidentFields, the draft, the publication).
func (h incidentHooks) CheckStep(ctx workflow.Context, hb *StepHandBack) (string, error) {
	d, c := h.d, h.d.c()
	in := IncidentCheckInput{SessionID: d.t.Current(), CallKey: hb.Call.Key, Root: d.t.st.Root, Step: hb.Step.ID,
		Now: workflow.Now(ctx), Slug: c.recordedText("triage", "slug")}
	if hb.Step.ID == "publish" {
		in.Approved, in.Day = c.recordedText(ceremonies.IncidentPresentStep, "draft_digest"), c.recordedText(ceremonies.IncidentPresentStep, "approved_on")
	}
	var res IncidentCheckResult
	if err := executeActivity(ctx, IncidentOptions, ActivityIncidentCheck, in, &res); err != nil {
		return "", fmt.Errorf("check %s: %w", hb.Step.ID, err)
	}
	if res.Refused != "" {
		return res.Refused + ". MADE is unchanged: mend it and hand the step back again.", nil
	}
	//workflowcheck:ignore copying a map into a map does not depend on the order
	for k, v := range res.Recorded {
		hb.Recorded[k] = v
	}
	if hb.Step.ID == "revise" {
		hb.Tell(fmt.Sprintf("AXLR recorded the draft's sha256 %s; a reviewer in a fresh context reads it next. ", res.Recorded["draft_digest"]))
	}
	if p, ok := res.Recorded["path"].(string); ok && hb.Step.ID == "publish" {
		hb.Tell(fmt.Sprintf("AXLR published the approved bytes to %s and read them back with sha256 %s. ", p, in.Approved))
	}
	return "", nil
}

// RunConsole runs the review or the presentation.
func (h incidentHooks) RunConsole(ctx workflow.Context, st ceremonies.Step) error {
	switch st.ID {
	case ceremonies.IncidentReviewStep:
		return h.review(ctx)
	case ceremonies.IncidentPresentStep:
		return h.present()
	}
	return fmt.Errorf("the incident has no console step %q", st.ID)
}

// review asks the reviewer for its review of the last revision and
// completes the step with it: accepted, the draft goes to the person;
// findings go back to revise, or end the incident BLOCKED after the last
// round.
func (h incidentHooks) review(ctx workflow.Context) error {
	d, c := h.d, h.d.c()
	path, digest := c.recordedText("revise", "draft_path"), c.recordedText("revise", "draft_digest")
	var res IncidentReviewResult
	err := executeActivity(ctx, ReviewOptions, ActivityIncidentReview, IncidentReviewInput{
		SessionID: d.t.Current(), Key: c.key(c.Step, c.Iteration, c.Round), InstanceID: c.InstanceID,
		Path: path, Digest: digest, Model: d.t.st.Model,
	}, &res)
	if err != nil {
		return fmt.Errorf("review draft %s (sha256 %s); the review stays pending and is asked again on the next prompt: %w", path, digest, err)
	}
	round, limit := c.Iteration, max(c.Limits[c.Step], 1)
	out, err := d.CompleteConsole(ctx, map[string]any{
		"accepted": res.Accepted, "findings": res.Findings, "review_mode": ceremonies.ReviewMode,
		"reviewer_model": res.ReviewerModel, "draft_digest": digest,
	}, nil)
	if err != nil {
		return err
	}
	who := fmt.Sprintf("The reviewer (%s, in a fresh context with no tools and none of your transcript)", res.ReviewerModel)
	var msg string
	switch {
	case res.Accepted:
		msg = fmt.Sprintf("[AXLR] %s accepted draft %s (sha256 %s) in round %d of %d. It now waits for the person's approval of these exact bytes; change nothing in it.", who, path, digest, round, limit)
	default:
		msg = fmt.Sprintf("[AXLR] %s returned %d findings on draft %s (sha256 %s), round %d of %d:\n- %s", who, len(res.Findings), path, digest, round, limit, strings.Join(res.Findings, "\n- "))
		if out.Step == "revise" {
			msg += "\nRevise the draft to answer each finding, then hand revise back with " + StepDoneTool + "."
		}
	}
	return d.note(ctx, "review", msg+consoleEnd(out))
}

// consoleEnd is what a note after a console step adds when the ceremony
// ended: the state, and that the person is to be told.
func consoleEnd(out ConsoleOutcome) string {
	if !out.Ended {
		return ""
	}
	return fmt.Sprintf("\nThe ceremony ended %s; the session is back in normal mode. Tell the person why, and propose the next step.", out.State)
}

// present makes the execution wait for the person's decision on the
// reviewed draft: the pending call names its path, digest and size.
func (h incidentHooks) present() error {
	d, c := h.d, h.d.c()
	rev := c.lastRecord("revise")
	bytes, _ := rev["draft_bytes"].(float64)
	if n, ok := rev["draft_bytes"].(int); ok {
		bytes = float64(n)
	}
	a := DraftApproval{InstanceID: c.InstanceID, Path: c.recordedText("revise", "draft_path"),
		Digest: c.recordedText(ceremonies.IncidentReviewStep, "draft_digest"), Bytes: int(bytes)}
	key := "approve:" + c.key(c.Step, c.Iteration, c.Round)
	call := ModelCall{Key: key, CallID: fmt.Sprintf("approve-%d", c.Round+1), Tool: ApproveTool}
	args, _ := json.Marshal(a)
	return d.t.Wait(PendingState{Call: call, Reason: fmt.Sprintf("draft %s (sha256 %s) waits for the person's approval", a.Path, a.Digest), Approval: &a}, ApproveTool, args)
}

// DecideConsole applies the person's decision on the draft: an approval
// of the digest that waits is granted through the approver identity,
// unless the draft changed on disk since its review (then it goes back to
// review); a denial returns it with the reason, twice at most, and the
// third declines it.
func (h incidentHooks) DecideConsole(ctx workflow.Context, p *PendingState, req *DecideRequest) error {
	d, a := h.d, p.Approval
	call := ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: ApproveTool}
	if req.Decision == contract.Approve {
		var now DraftDigestResult
		err := executeLocal(ctx, LocalOptions, ActivityDraftDigest, DraftDigestInput{Root: d.t.st.Root, Path: a.Path}).Get(ctx, &now)
		if err != nil {
			return fmt.Errorf("read draft %s: %w", a.Path, err)
		}
		if now.Digest != a.Digest {
			d.t.SetCall(call, contract.Deny, contract.CallDenied)
			reason := fmt.Sprintf("the draft changed on disk after its review (sha256 %s now, %s reviewed)", digestOrGone(now.Digest), a.Digest)
			out, err := d.CompleteConsole(ctx, map[string]any{"decision": ceremonies.DecisionReturn, "reason": reason, "draft_digest": a.Digest, "changed": true}, nil)
			if err != nil {
				return err
			}
			return d.note(ctx, "changed", fmt.Sprintf("[AXLR] The person approved draft %s (sha256 %s), but %s: AXLR did not approve it, and it goes back to review. Hand revise back with the draft as it should be reviewed.%s", a.Path, a.Digest, reason, consoleEnd(out)))
		}
		d.t.SetCall(call, contract.Approve, contract.CallCompleted)
		out, err := d.CompleteConsole(ctx, map[string]any{"decision": ceremonies.DecisionApprove, "draft_digest": a.Digest,
			"approved_on": workflow.Now(ctx).UTC().Format(time.DateOnly)},
			&GrantInput{Guard: ceremonies.MergeApprovalGuard, Role: ceremonies.ApproverRole})
		if err != nil {
			return err
		}
		msg := fmt.Sprintf("[AXLR] The person approved draft %s (sha256 %s).", a.Path, a.Digest)
		if out.Step != "" && !out.Ended {
			msg += "\n" + d.c().stepNote(false)
		}
		return d.note(ctx, "approved", msg+consoleEnd(out))
	}
	d.t.SetCall(call, contract.Deny, contract.CallDenied)
	returns := h.returns()
	decision := ceremonies.DecisionReturn
	if returns >= ceremonies.MaxReturns {
		decision = ceremonies.DecisionDecline
	}
	out, err := d.CompleteConsole(ctx, map[string]any{"decision": decision, "reason": req.Reason, "draft_digest": a.Digest}, nil)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("[AXLR] The person returned draft %s (return %d of %d): %s\nRevise the draft to answer it, then hand revise back with %s.", a.Path, returns+1, ceremonies.MaxReturns, req.Reason, StepDoneTool)
	if decision == ceremonies.DecisionDecline {
		msg = fmt.Sprintf("[AXLR] The person declined draft %s after %d returns: %s", a.Path, returns, req.Reason)
	}
	return d.note(ctx, "returned", msg+consoleEnd(out))
}

// returns counts the person's returns of the draft: a draft that changed
// on disk went back without one.
func (h incidentHooks) returns() int {
	n := 0
	for _, r := range h.d.c().Records {
		if r.Step == ceremonies.IncidentPresentStep && r.Output["decision"] == ceremonies.DecisionReturn && r.Output["changed"] != true {
			n++
		}
	}
	return n
}

// digestOrGone names a digest, or says the draft is gone.
func digestOrGone(digest string) string {
	if digest == "" {
		return "none: the file is gone"
	}
	return digest
}
