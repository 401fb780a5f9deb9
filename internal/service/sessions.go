package service

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// createSessionRequest is POST /v1/sessions.
type createSessionRequest struct {
	Model  string          `json:"model,omitempty"`
	Root   string          `json:"root,omitempty"`
	Mode   string          `json:"mode,omitempty"`
	Policy json.RawMessage `json:"policy,omitempty"`
	Web    *bool           `json:"web,omitempty"`
}

// sessionOut is a session as the API answers it.
type sessionOut struct {
	ID       string   `json:"id"`
	State    string   `json:"state"`
	Revision int      `json:"revision"`
	Model    string   `json:"model"`
	Root     string   `json:"root"`
	Mode     string   `json:"mode"`
	Current  string   `json:"current"`
	Sessions []string `json:"sessions"`
	// Execution is the current or last execution, "" before the first.
	Execution string                `json:"execution_id"`
	Pending   *contract.PendingCall `json:"pending"`
	Result    *contract.Result      `json:"result"`
	// Cursor is the id of the session's last event so far: its events
	// after it are still to come.
	Cursor    int    `json:"cursor"`
	CreatedBy string `json:"created_by,omitempty"`
}

// sessionDefaults are what a session's turns take when they name
// nothing: its creation's, and whether a turn ran already (after the
// first, the session keeps its own model, root, mode and policy).
type sessionDefaults struct {
	d       workflows.SessionDefaults
	started bool
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	key, kerr := idempotencyKey(r, false)
	if kerr != nil {
		return kerr
	}
	var req createSessionRequest
	if _, err := decode(w, r, &req); err != nil {
		return err
	}
	d := workflows.SessionDefaults{Model: cmp.Or(req.Model, s.o.Model), Mode: req.Mode, Web: req.Web, By: id.Name}
	if d.Model == "" {
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "model: name one; axlrd's settings give no default model")
	}
	if err := checkMode(req.Mode); err != nil {
		return err
	}
	if len(req.Policy) > 0 && string(req.Policy) != "null" {
		p, perr := policy.Parse(req.Policy)
		if perr != nil {
			return errorf(http.StatusBadRequest, CodeInvalidArgument, "%s", perr.Error())
		}
		d.Policy = p
	}
	root, err := s.allowedRoot(req.Root)
	if err != nil {
		return err
	}
	d.Root = root
	if key != "" {
		// A caller's keys are its own.
		key = id.Name + "\x00" + key
	}
	sid, cerr := s.o.Client.CreateSession(r.Context(), d, key)
	if cerr != nil {
		return fromClient(cerr)
	}
	if key != "" {
		// A retry gets the session the key made, if it was made with
		// the same request.
		v, verr := s.view(r, sid)
		if verr != nil {
			return verr
		}
		if was, _ := json.Marshal(v.Defaults); v.Defaults == nil || string(was) != mustJSON(d) {
			return errorf(http.StatusConflict, CodeIdempotencyConflict, "%s: session %s was created by another request under the same key", workflows.IdempotencyConflict, sid)
		}
		writeJSON(w, http.StatusCreated, sessionFrom(v))
		return nil
	}
	s.keepDefaults(sid, sessionDefaults{d: d})
	writeJSON(w, http.StatusCreated, sessionOut{ID: sid, State: workflows.SessionIdle, Model: d.Model, Root: d.Root,
		Mode: cmp.Or(d.Mode, "normal"), Current: sid, Sessions: []string{sid}, CreatedBy: id.Name})
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	v, err := s.view(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionFrom(v))
	return nil
}

// sessionFrom is a session's answer from its view.
func sessionFrom(v workflows.SessionView) sessionOut {
	out := sessionOut{ID: v.SessionID, State: v.State, Revision: v.Revision, Model: v.Model, Root: v.Root, Mode: cmp.Or(v.Mode, "normal"),
		Current: v.Current, Sessions: v.Sessions, Execution: v.Execution, Pending: v.Pending, Result: v.Result, Cursor: v.Cursor}
	if d := v.Defaults; d != nil {
		out.Model, out.Root, out.CreatedBy = cmp.Or(out.Model, d.Model), cmp.Or(out.Root, d.Root), d.By
		if v.Execution == "" {
			out.Mode = cmp.Or(d.Mode, out.Mode)
		}
	}
	return out
}

// view reads a session's view; an id that is not a session's is 404.
func (s *Server) view(r *http.Request, sid string) (workflows.SessionView, *apiError) {
	if !session.ValidID(sid) {
		return workflows.SessionView{}, errorf(http.StatusNotFound, CodeNotFound, "no session %q: a session id is a UUID", sid)
	}
	v, err := s.o.Client.SessionView(r.Context(), sid)
	if err != nil {
		return workflows.SessionView{}, fromClient(err)
	}
	return v, nil
}

// turnRequest is POST /v1/sessions/{id}/turns.
type turnRequest struct {
	Prompt   string `json:"prompt"`
	Model    string `json:"model,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Approval string `json:"approval,omitempty"`
	Ceremony string `json:"ceremony,omitempty"`
}

// accepted answers an admitted turn or decision.
type accepted struct {
	ExecutionID string            `json:"execution_id"`
	SessionID   string            `json:"session_id"`
	State       string            `json:"state"`
	CallID      string            `json:"call_id,omitempty"`
	Decision    contract.Decision `json:"decision,omitempty"`
	By          string            `json:"decided_by,omitempty"`
}

// HeaderIdempotencyKey names a turn (and, optionally, a decision): the
// same key with the same body is the same execution, applied once.
const HeaderIdempotencyKey = "Idempotency-Key"

// Idempotency keys are 16 to 128 visible ASCII characters.
const (
	MinKey = 16
	MaxKey = 128
)

// MaxPrompt bounds a turn's prompt.
const MaxPrompt = 256 << 10

func (s *Server) startTurn(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	sid := r.PathValue("id")
	key, kerr := idempotencyKey(r, true)
	if kerr != nil {
		return kerr
	}
	var req turnRequest
	digest, err := decode(w, r, &req)
	if err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(req.Prompt) == "":
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "prompt is empty")
	case len(req.Prompt) > MaxPrompt:
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "prompt is %d bytes, over the limit of %d (256 KiB)", len(req.Prompt), MaxPrompt)
	}
	if err := checkMode(req.Mode); err != nil {
		return err
	}
	approval, perr := policy.ParseApproval(cmp.Or(req.Approval, string(policy.ApproveNone)))
	if perr != nil {
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "approval %q: use none, local or all", req.Approval)
	}
	if !session.ValidID(sid) {
		return errorf(http.StatusNotFound, CodeNotFound, "no session %q: a session id is a UUID", sid)
	}
	def, derr := s.sessionDefaults(r, sid)
	if derr != nil {
		return derr
	}
	ex := workflows.ExecuteRequest{ExecutionID: executionID(sid, key), Prompt: req.Prompt, Model: req.Model, Mode: req.Mode,
		Ceremony: req.Ceremony, Approval: approval, RequestDigest: digest, By: id.Name}
	if !def.started {
		d := def.d
		ex.Root, ex.Model, ex.Mode, ex.Policy, ex.Web = d.Root, cmp.Or(ex.Model, d.Model), cmp.Or(ex.Mode, d.Mode), d.Policy, d.Web
	}
	got, cerr := s.o.Client.ExecuteKeyed(r.Context(), sid, ex.ExecutionID+"."+digest[:16], ex)
	if cerr != nil {
		return turnRefused(cerr)
	}
	def.started = true
	s.keepDefaults(sid, def)
	writeJSON(w, http.StatusAccepted, accepted{ExecutionID: got.ExecutionID, SessionID: got.SessionID, State: workflows.SessionRunning})
	return nil
}

// turnRefused is a turn's or decision's refusal: an idempotency conflict
// is its own code.
func turnRefused(err error) *apiError {
	var refused *client.RefusedError
	if errors.As(err, &refused) && strings.Contains(refused.Message, workflows.IdempotencyConflict) {
		return errorf(http.StatusConflict, CodeIdempotencyConflict, "%s", refused.Message)
	}
	return fromClient(err)
}

// sessionDefaults returns what a session's turns take: from the cache,
// else from its view.
func (s *Server) sessionDefaults(r *http.Request, sid string) (sessionDefaults, *apiError) {
	s.defaultsMu.Lock()
	d, ok := s.defaults[sid]
	s.defaultsMu.Unlock()
	if ok {
		return d, nil
	}
	v, err := s.view(r, sid)
	if err != nil {
		return sessionDefaults{}, err
	}
	d = sessionDefaults{started: v.Execution != ""}
	if v.Defaults != nil {
		d.d = *v.Defaults
	}
	s.keepDefaults(sid, d)
	return d, nil
}

// maxDefaults bounds the cache of session defaults.
const maxDefaults = 4096

func (s *Server) keepDefaults(sid string, d sessionDefaults) {
	s.defaultsMu.Lock()
	defer s.defaultsMu.Unlock()
	if len(s.defaults) >= maxDefaults {
		clear(s.defaults)
	}
	s.defaults[sid] = d
}

// decisionRequest is POST /v1/sessions/{id}/decisions.
type decisionRequest struct {
	CallID   string `json:"call_id"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	Revision int    `json:"revision"`
	// Digest is the sha256 of an incident's draft an approval approves.
	Digest string `json:"digest,omitempty"`
}

func (s *Server) decideSession(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	sid := r.PathValue("id")
	key, kerr := idempotencyKey(r, false)
	if kerr != nil {
		return kerr
	}
	var req decisionRequest
	digest, err := decode(w, r, &req)
	if err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(req.CallID) == "":
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "call_id is empty: name the call you decide (GET the session: pending.call_id)")
	case req.Decision != string(contract.Approve) && req.Decision != string(contract.Deny):
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "decision %q: use approve or deny", req.Decision)
	case req.Revision < 1:
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "revision: name the session's revision the decision was taken at (GET the session: revision)")
	}
	if !session.ValidID(sid) {
		return errorf(http.StatusNotFound, CodeNotFound, "no session %q: a session id is a UUID", sid)
	}
	if key == "" {
		key = "decide:" + req.CallID
	}
	dec := workflows.DecideRequest{ExecutionID: executionID(sid, key), CallID: req.CallID, Decision: contract.Decision(req.Decision),
		Reason: req.Reason, Digest: req.Digest, Revision: req.Revision, RequestDigest: digest, By: id.Name}
	got, cerr := s.o.Client.DecideKeyed(r.Context(), sid, dec.ExecutionID+"."+digest[:16], dec)
	if cerr != nil {
		return turnRefused(cerr)
	}
	writeJSON(w, http.StatusAccepted, accepted{ExecutionID: got.ExecutionID, SessionID: got.SessionID, State: workflows.SessionRunning,
		CallID: req.CallID, Decision: dec.Decision, By: id.Name})
	return nil
}

// cancelRequest is POST /v1/sessions/{id}/cancel.
type cancelRequest struct {
	ExecutionID string `json:"execution_id"`
	Reason      string `json:"reason,omitempty"`
}

func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request, id Identity) *apiError {
	sid := r.PathValue("id")
	var req cancelRequest
	if _, err := decode(w, r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.ExecutionID) == "" {
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "execution_id is empty: name the execution you cancel (GET the session: execution_id)")
	}
	if !session.ValidID(sid) {
		return errorf(http.StatusNotFound, CodeNotFound, "no session %q: a session id is a UUID", sid)
	}
	wid, err := s.o.Client.FindSession(r.Context(), sid)
	if err != nil {
		return fromClient(err)
	}
	reason := cmp.Or(req.Reason, "cancelled through the service API by "+id.Name)
	if err := s.o.Client.Interrupt(r.Context(), client.Execution{WorkflowID: wid, ExecutionID: req.ExecutionID, SessionID: sid}, reason); err != nil {
		return fromClient(err)
	}
	writeJSON(w, http.StatusAccepted, accepted{ExecutionID: req.ExecutionID, SessionID: sid, State: "cancelling"})
	return nil
}

// checkMode refuses a mode axlrd does not run.
func checkMode(mode string) *apiError {
	if mode != "" && !slices.Contains(workflows.SupportedModes, mode) {
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "mode %q: use %s", mode, strings.Join(workflows.SupportedModes, ", "))
	}
	return nil
}

// allowedRoot resolves a requested workspace (empty: the first of
// service.roots) and refuses one outside service.roots.
func (s *Server) allowedRoot(root string) (string, *apiError) {
	roots := s.o.Settings.Roots
	if len(roots) == 0 {
		return "", errorf(http.StatusForbidden, CodeRootNotAllowed, "service.roots names no directory: list the workspaces the API may open in axlrd's settings.json")
	}
	if root == "" {
		root = roots[0]
	}
	if !filepath.IsAbs(root) {
		return "", errorf(http.StatusBadRequest, CodeInvalidArgument, "root %q is not an absolute path", root)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(root))
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return "", errorf(http.StatusBadRequest, CodeInvalidArgument, "root %s is not a directory on this host", root)
	}
	for _, allowed := range roots {
		a, err := filepath.EvalSymlinks(allowed)
		if err != nil {
			continue
		}
		if real == a || strings.HasPrefix(real, a+string(filepath.Separator)) {
			return real, nil
		}
	}
	return "", errorf(http.StatusForbidden, CodeRootNotAllowed, "root %s is not inside service.roots (%s)", root, strings.Join(roots, ", "))
}

// idempotencyKey reads the Idempotency-Key header: required, or "" when
// absent and optional.
func idempotencyKey(r *http.Request, required bool) (string, *apiError) {
	key := r.Header.Get(HeaderIdempotencyKey)
	if key == "" && !required {
		return "", nil
	}
	if len(key) < MinKey || len(key) > MaxKey || strings.ContainsFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return "", errorf(http.StatusBadRequest, CodeInvalidArgument, "%s: want %d to %d visible ASCII characters, such as a UUID", HeaderIdempotencyKey, MinKey, MaxKey)
	}
	return key, nil
}

// executionID is the execution an idempotency key names in a session.
func executionID(sid, key string) string {
	sum := sha256.Sum256([]byte(sid + "\x00" + key))
	return "api-" + hex.EncodeToString(sum[:16])
}

// mustJSON is v's JSON, which a value of ours always has.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
