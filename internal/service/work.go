package service

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// createJobRequest is POST /v1/jobs.
type createJobRequest struct {
	Kind  string `json:"kind"`
	Brief string `json:"brief"`
	Model string `json:"model,omitempty"`
}

// MaxBrief bounds a job's or a plan's brief.
const MaxBrief = 64 << 10

// jobOut is a job as the API answers it.
type jobOut struct {
	Job   jobs.Record          `json:"job"`
	Queue *workflows.QueueView `json:"queue,omitempty"`
	By    string               `json:"decided_by,omitempty"`
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	key, kerr := idempotencyKey(r, false)
	if kerr != nil {
		return kerr
	}
	var req createJobRequest
	if _, err := decode(w, r, &req); err != nil {
		return err
	}
	kind := jobs.Kind(req.Kind)
	switch {
	case kind != jobs.Repair && kind != jobs.Improve:
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "kind %q: use repair or improve", req.Kind)
	case strings.TrimSpace(req.Brief) == "":
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "brief is empty: say what fails, or what to improve (or \"#123\", an issue)")
	case len(req.Brief) > MaxBrief:
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "brief is %d bytes, over the limit of %d (64 KiB)", len(req.Brief), MaxBrief)
	}
	launch := workflows.LaunchRequest{Kind: kind, Brief: req.Brief, Model: req.Model, Person: true}
	if key != "" {
		sum := sha256.Sum256([]byte("job\x00" + id.Name + "\x00" + key))
		launch.RequestID = "api-" + hex.EncodeToString(sum[:16])
	}
	rec, err := s.o.Client.LaunchJob(r.Context(), launch)
	if err != nil {
		return fromClient(err)
	}
	writeJSON(w, http.StatusCreated, jobOut{Job: rec})
	return nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	all, err := s.o.Client.Jobs(r.Context())
	if err != nil {
		return fromClient(err)
	}
	writeJSON(w, http.StatusOK, map[string][]jobs.Record{"jobs": all})
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	rec, err := s.job(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, jobOut{Job: rec})
	return nil
}

// job reads a job's record: where its workflow stands now, else the
// registry's (a job whose workflow has not started, or is gone).
func (s *Server) job(r *http.Request, id string) (jobs.Record, *apiError) {
	if !workID(id) {
		return jobs.Record{}, errorf(http.StatusNotFound, CodeNotFound, "no job %q", id)
	}
	rec, err := s.o.Client.JobNow(r.Context(), id)
	if err != nil {
		if rec, err = s.o.Client.Job(r.Context(), id); err != nil {
			return jobs.Record{}, fromClient(err)
		}
	}
	return rec, nil
}

// jobDecisionRequest is POST /v1/jobs/{id}/decisions.
type jobDecisionRequest struct {
	// Decision is approve, deny or decline (what the job waits for), or
	// queue, unqueue or recover.
	Decision string `json:"decision"`
	// Pending, when set, is what the caller saw the job wait for (check
	// or merge): a decision for anything else is refused.
	Pending string `json:"pending,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Model runs a recovered job (default: its own).
	Model string `json:"model,omitempty"`
}

func (s *Server) decideJob(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	jid := r.PathValue("id")
	var req jobDecisionRequest
	if _, err := decode(w, r, &req); err != nil {
		return err
	}
	if !workID(jid) {
		return errorf(http.StatusNotFound, CodeNotFound, "no job %q", jid)
	}
	c, ctx := s.o.Client, r.Context()
	switch req.Decision {
	case "approve", "deny", "decline":
		if err := need(id, req.Decision+" a job's check or merge", settings.RoleApprover); err != nil {
			return err
		}
		rec, err := s.job(r, jid)
		if err != nil {
			return err
		}
		dec, derr := jobDecision(rec, req, id.Name)
		if derr != nil {
			return derr
		}
		after, cerr := c.DecideJob(ctx, dec)
		if cerr != nil {
			return fromClient(cerr)
		}
		writeJSON(w, http.StatusOK, jobOut{Job: after, By: id.Name})
	case "queue", "unqueue":
		if err := need(id, req.Decision+" a job", settings.RoleJobOperator); err != nil {
			return err
		}
		var view workflows.QueueView
		var err error
		if req.Decision == "queue" {
			view, err = c.QueueJob(ctx, jid)
		} else {
			view, err = c.UnqueueJob(ctx, jid, cmp.Or(req.Reason, "unqueued through the service API by "+id.Name))
		}
		if err != nil {
			return fromClient(err)
		}
		rec, aerr := s.job(r, jid)
		if aerr != nil {
			return aerr
		}
		writeJSON(w, http.StatusOK, jobOut{Job: rec, Queue: &view, By: id.Name})
	case "recover":
		if err := need(id, "recover a job", settings.RoleJobOperator); err != nil {
			return err
		}
		rec, err := c.RecoverJob(ctx, jid, req.Model)
		if err != nil {
			return fromClient(err)
		}
		writeJSON(w, http.StatusOK, jobOut{Job: rec, By: id.Name})
	default:
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "decision %q: use approve, deny, decline, queue, unqueue or recover", req.Decision)
	}
	return nil
}

// jobDecision is the decision req takes on what rec waits for: approve
// either, deny a check command, decline a merge.
func jobDecision(rec jobs.Record, req jobDecisionRequest, by string) (workflows.JobDecision, *apiError) {
	p := rec.Pending
	if p == nil {
		return workflows.JobDecision{}, errorf(http.StatusConflict, CodeConflict, "job %s waits for no decision: it is %s", rec.ID, rec.Status)
	}
	if req.Pending != "" && req.Pending != string(p.Kind) {
		return workflows.JobDecision{}, errorf(http.StatusConflict, CodeConflict, "job %s waits for its %s decision, not its %s", rec.ID, p.Kind, req.Pending)
	}
	switch {
	case req.Decision == "deny" && p.Kind != jobs.PendingCheck:
		return workflows.JobDecision{}, errorf(http.StatusConflict, CodeConflict, "job %s waits for its merge decision: decline it, not deny", rec.ID)
	case req.Decision == "decline" && p.Kind != jobs.PendingMerge:
		return workflows.JobDecision{}, errorf(http.StatusConflict, CodeConflict, "job %s waits for its check command (%s): deny it, not decline", rec.ID, p.Command)
	}
	return workflows.JobDecision{Job: rec.ID, Kind: p.Kind, Approve: req.Decision == "approve", Reason: req.Reason, By: by}, nil
}

// createPlanRequest is POST /v1/plans.
type createPlanRequest struct {
	Brief string `json:"brief"`
	Root  string `json:"root,omitempty"`
	Model string `json:"model,omitempty"`
}

func (s *Server) createPlan(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	key, kerr := idempotencyKey(r, false)
	if kerr != nil {
		return kerr
	}
	if key != "" {
		key = id.Name + "\x00" + key
	}
	var req createPlanRequest
	if _, err := decode(w, r, &req); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(req.Brief) == "":
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "brief is empty: say what the plan should do")
	case len(req.Brief) > MaxBrief:
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "brief is %d bytes, over the limit of %d (64 KiB)", len(req.Brief), MaxBrief)
	}
	root, err := s.allowedRoot(req.Root)
	if err != nil {
		return err
	}
	if cmp.Or(req.Model, s.o.Model) == "" {
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "model: name one; axlrd's settings give no default model")
	}
	rec, cerr := s.o.Client.LaunchPlan(r.Context(), client.PlanLaunch{Brief: req.Brief, Root: root, Model: req.Model, Key: key})
	if cerr != nil {
		return turnRefused(cerr)
	}
	writeJSON(w, http.StatusCreated, planOut{Plan: rec})
	return nil
}

// planOut is a plan as the API answers it.
type planOut struct {
	Plan plans.Record `json:"plan"`
	By   string       `json:"decided_by,omitempty"`
}

func (s *Server) listPlans(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	all, err := s.o.Client.Plans(r.Context())
	if err != nil {
		return fromClient(err)
	}
	writeJSON(w, http.StatusOK, map[string][]plans.Record{"plans": all})
	return nil
}

func (s *Server) getPlan(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	rec, err := s.plan(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, planOut{Plan: rec})
	return nil
}

func (s *Server) plan(r *http.Request, id string) (plans.Record, *apiError) {
	if !workID(id) {
		return plans.Record{}, errorf(http.StatusNotFound, CodeNotFound, "no plan %q", id)
	}
	rec, err := s.o.Client.Plan(r.Context(), id)
	if err != nil {
		return plans.Record{}, fromClient(err)
	}
	return rec, nil
}

// planDecisionRequest is POST /v1/plans/{id}/decisions.
type planDecisionRequest struct {
	// Decision is approve, return or decline (what the plan waits for),
	// or recover.
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

func (s *Server) decidePlan(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	pid := r.PathValue("id")
	var req planDecisionRequest
	if _, err := decode(w, r, &req); err != nil {
		return err
	}
	if !workID(pid) {
		return errorf(http.StatusNotFound, CodeNotFound, "no plan %q", pid)
	}
	c, ctx := s.o.Client, r.Context()
	switch req.Decision {
	case "approve", "return", "decline":
		if err := need(id, req.Decision+" a plan", settings.RoleApprover); err != nil {
			return err
		}
		rec, err := s.plan(r, pid)
		if err != nil {
			return err
		}
		dec, derr := planDecision(rec, req, id.Name)
		if derr != nil {
			return derr
		}
		after, cerr := c.DecidePlan(ctx, dec)
		if cerr != nil {
			return fromClient(cerr)
		}
		writeJSON(w, http.StatusOK, planOut{Plan: after, By: id.Name})
	case "recover":
		if err := need(id, "recover a plan", settings.RoleJobOperator); err != nil {
			return err
		}
		rec, err := c.RecoverPlan(ctx, pid)
		if err != nil {
			return fromClient(err)
		}
		writeJSON(w, http.StatusOK, planOut{Plan: rec, By: id.Name})
	default:
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "decision %q: use approve, return, decline or recover", req.Decision)
	}
	return nil
}

// planDecision is the decision req takes on what rec waits for: its
// commands (approve runs them, return sends the planner back) or its
// card (approve, return or decline).
func planDecision(rec plans.Record, req planDecisionRequest, by string) (workflows.PlanDecision, *apiError) {
	if !rec.NeedsPerson() {
		return workflows.PlanDecision{}, errorf(http.StatusConflict, CodeConflict, "plan %s waits for no decision: it is %s", rec.ID, rec.Status)
	}
	dec := workflows.PlanDecision{Plan: rec.ID, Kind: workflows.PlanDecidePlan, Reason: req.Reason, By: by}
	if rec.Pending != nil && rec.Pending.Kind == plans.PendingCommand {
		switch req.Decision {
		case "approve":
			dec.Kind, dec.Decision = workflows.PlanDecideCommands, workflows.PlanApprove
		case "return":
			dec.Kind, dec.Decision = workflows.PlanDecideCommands, workflows.PlanDeny
		default:
			return workflows.PlanDecision{}, errorf(http.StatusConflict, CodeConflict, "plan %s waits for its commands (%s): approve or return them", rec.ID, strings.Join(rec.Pending.Commands, "; "))
		}
		return dec, nil
	}
	dec.Decision = map[string]string{"approve": workflows.PlanApprove, "return": workflows.PlanReturn, "decline": workflows.PlanDecline}[req.Decision]
	if req.Decision == "return" && strings.TrimSpace(req.Reason) == "" {
		return workflows.PlanDecision{}, errorf(http.StatusBadRequest, CodeInvalidArgument, "a returned plan needs its reason, for the planner to revise against")
	}
	return dec, nil
}

// workID reports whether id can be a job's or a plan's id: lowercase
// letters, digits and dashes (their slugs), at most 128.
func workID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '-' {
		return false
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
