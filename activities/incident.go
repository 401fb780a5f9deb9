package activities

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// An incident's activities: the checks of its model steps, which read the
// workspace; the reviewer's request, in a fresh context; and the draft's
// digest on disk at the approval. Each revision's bytes are kept in
// axlrd's state (Drafts, by digest) when AXLR records its digest, so what
// the reviewer reads, the person approves and the publication writes are
// the same bytes, whatever happens to the workspace's draft afterwards.

// evReview is a review's saved result in the session log.
const evReview = "review.result"

// IncidentCheck checks a hand-back of an incident's model step: the
// triage's severity and slug, the timeline's order, zones and evidence
// paths, the actions' owners, kinds, due dates and verifications, the
// draft's path and size (keeping its bytes and recording its digest), and
// the publication of the approved bytes. A rule the hand-back breaks is
// its refusal, not an error.
func (a *Ceremony) IncidentCheck(ctx context.Context, in workflows.IncidentCheckInput) (workflows.IncidentCheckResult, error) {
	hb, err := a.handBack(in.SessionID, in.CallKey, "axlr_incident", "1.0", in.Step, false, false)
	if err != nil {
		var refused handBackError
		if errors.As(err, &refused) {
			return workflows.IncidentCheckResult{Refused: refused.Error()}, nil
		}
		return workflows.IncidentCheckResult{}, err
	}
	ws, err := a.Workspaces.Get(in.Root)
	if err != nil {
		return workflows.IncidentCheckResult{}, err
	}
	var rec map[string]any
	switch in.Step {
	case "revise":
		rec, err = a.keepDraft(ws, in.Slug, hb.Fields["draft_path"].(string))
	case "publish":
		rec, err = a.publish(ctx, ws, in)
	default:
		rec, err = ceremonies.CheckIncidentFields(in.Step, hb.Fields, ceremonies.IncidentDay{Now: in.Now, Exists: ws.Exists})
		if err != nil {
			err = refusal{err}
		}
	}
	var refused refusal
	if errors.As(err, &refused) {
		return workflows.IncidentCheckResult{Refused: refused.Error()}, nil
	}
	if err != nil {
		return workflows.IncidentCheckResult{}, err
	}
	return workflows.IncidentCheckResult{Recorded: rec}, nil
}

// refusal is a rule a hand-back breaks: the model's to mend.
type refusal struct{ error }

// keepDraft checks the draft a revision hands back and keeps its bytes
// under their digest.
func (a *Ceremony) keepDraft(ws *tools.Workspace, slug, path string) (map[string]any, error) {
	if want := ceremonies.DraftPath(slug); filepath.Clean(path) != want {
		return nil, refusal{fmt.Errorf("draft_path %q: the draft is %s", path, want)}
	}
	data, err := ws.ReadWhole(path, ceremonies.MaxDraftBytes)
	var te *tools.Error
	if errors.As(err, &te) {
		return nil, refusal{fmt.Errorf("the draft %s: %s", path, te.Message)}
	}
	if err != nil {
		return nil, err
	}
	if err := ceremonies.CheckDraft(slug, path, int64(len(data))); err != nil {
		return nil, refusal{err}
	}
	digest := sha256Hex(data)
	if err := a.keep(digest, data); err != nil {
		return nil, err
	}
	return map[string]any{"draft_path": path, "draft_digest": digest, "draft_bytes": len(data)}, nil
}

// keep saves a draft's bytes under their digest, once.
func (a *Ceremony) keep(digest string, data []byte) error {
	if a.Drafts == "" {
		return temporal.NewNonRetryableApplicationError("axlrd keeps no drafts (no drafts directory)", workflows.ErrTypeBadRequest, nil)
	}
	file := filepath.Join(a.Drafts, digest+".md")
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return writeWhole(file, data)
}

// KeptDraft reads the bytes of a draft kept under digest, checking them.
func KeptDraft(dir, digest string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, digest+".md"))
	if err != nil {
		return nil, fmt.Errorf("read the kept draft %s: %w", digest, err)
	}
	if got := sha256Hex(data); got != digest {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the kept draft %s reads back with sha256 %s", digest, got), workflows.ErrTypeBadRequest, nil)
	}
	return data, nil
}

// publish writes the approved bytes, kept under their digest, to
// docs/incidents/<day>-<slug>.md, whole, and reads them back. A write
// error or a read-back that differs fails the activity, and the step stays
// open for the next attempt.
func (a *Ceremony) publish(ctx context.Context, ws *tools.Workspace, in workflows.IncidentCheckInput) (map[string]any, error) {
	if in.Approved == "" {
		return nil, refusal{errors.New("no draft was approved: the person approves it before it is published")}
	}
	data, err := KeptDraft(a.Drafts, in.Approved)
	if err != nil {
		return nil, err
	}
	day, err := time.Parse(time.DateOnly, in.Day)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the approval's day %q: %v", in.Day, err), workflows.ErrTypeBadRequest, err)
	}
	path := ceremonies.PublishedPath(day, in.Slug)
	if err := ws.Publish(ctx, path, data, in.Approved); err != nil {
		return nil, fmt.Errorf("publish %s: %w", path, err)
	}
	return map[string]any{"path": path, "draft_digest": in.Approved}, nil
}

// IncidentReview asks the reviewer for its review of the draft kept under
// the digest: a model request with the review instruction, the draft and
// the triage, timeline and analysis MADE holds, and nothing else (no
// tools, none of the author's transcript). Its model is reviewer_model,
// else the session's. The verdict is saved under the key and returned
// again on a retry; an answer that does not parse is an error, retried,
// never an acceptance.
func (a *Ceremony) IncidentReview(ctx context.Context, in workflows.IncidentReviewInput) (workflows.IncidentReviewResult, error) {
	log, err := openLog(a.Store, in.SessionID)
	if err != nil {
		return workflows.IncidentReviewResult{}, err
	}
	key := "review:" + in.Key
	if ev, ok := log.ByKey(key); ok {
		return decode[workflows.IncidentReviewResult](ev)
	}
	draft, err := KeptDraft(a.Drafts, in.Digest)
	if err != nil {
		return workflows.IncidentReviewResult{}, err
	}
	inst, err := a.Made.Get(ctx, in.InstanceID)
	if err != nil {
		return workflows.IncidentReviewResult{}, madeError("read "+in.InstanceID, err)
	}
	fields := map[string]json.RawMessage{}
	for _, step := range []string{"triage", "timeline", "analysis"} {
		st, _ := inst.Step(step)
		if fields[step], err = json.Marshal(st.Output); err != nil {
			return workflows.IncidentReviewResult{}, fmt.Errorf("encode the %s output: %w", step, err)
		}
	}
	model := cmp.Or(a.ReviewerModel, in.Model)
	stop := heartbeat(ctx, a.HeartbeatEvery, func() any { return in.Key })
	resp, err := a.Model.Complete(ctx, agent.Request{Model: model, MaxTokens: a.MaxTokens, Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: ceremonies.ReviewInstruction},
		{Role: agent.RoleUser, Content: ceremonies.ReviewPrompt(in.Path, draft, fields["triage"], fields["timeline"], fields["analysis"])},
	}}, nil)
	stop()
	if err != nil {
		if ctx.Err() == nil && !agent.Transient(err) {
			return workflows.IncidentReviewResult{}, temporal.NewNonRetryableApplicationError("the reviewer's provider refused: "+err.Error(), workflows.ErrTypeProviderRejected, err)
		}
		return workflows.IncidentReviewResult{}, fmt.Errorf("the reviewer's request: %w", err)
	}
	review, err := ceremonies.ParseReview(resp.Text)
	if err != nil {
		a.Log.Warn().Err(err).Str("session", in.SessionID).Str("key", in.Key).Msg("the reviewer's answer does not parse; asking again")
		return workflows.IncidentReviewResult{}, fmt.Errorf("the reviewer's answer: %w", err)
	}
	res := workflows.IncidentReviewResult{Accepted: review.Accepted, Findings: review.Findings, ReviewerModel: cmp.Or(resp.Model, model)}
	if res.Findings == nil {
		res.Findings = []string{}
	}
	if _, err := appendEvent(log, evReview, key, res); err != nil {
		return workflows.IncidentReviewResult{}, err
	}
	return res, nil
}

// DraftDigest reads the sha256 of a draft on disk now; empty when it is
// gone.
func (a *Ceremony) DraftDigest(ctx context.Context, in workflows.DraftDigestInput) (workflows.DraftDigestResult, error) {
	ws, err := a.Workspaces.Get(in.Root)
	if err != nil {
		return workflows.DraftDigestResult{}, err
	}
	data, err := ws.ReadWhole(in.Path, ceremonies.MaxDraftBytes)
	var te *tools.Error
	if errors.As(err, &te) {
		// Gone, or past the limit: not the bytes that were reviewed.
		return workflows.DraftDigestResult{}, nil
	}
	if err != nil {
		return workflows.DraftDigestResult{}, err
	}
	return workflows.DraftDigestResult{Digest: sha256Hex(data)}, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
