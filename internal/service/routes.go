package service

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/internal/settings"
)

// handler serves one route for an identity that holds its roles.
type handler func(w http.ResponseWriter, r *http.Request, id Identity) *apiError

// route is one method and path of the API, and the roles that may call
// it (nil: any identity; admin may call every route).
type route struct {
	method, path string
	roles        []string
	h            handler
}

// Who may read what.
var (
	sessionReaders = []string{settings.RoleSessionClient, settings.RoleApprover}
	workReaders    = []string{settings.RoleJobOperator, settings.RoleApprover}
	sessionClients = []string{settings.RoleSessionClient}
	approvers      = []string{settings.RoleApprover}
	operators      = []string{settings.RoleJobOperator}
	// deciders may call the decisions routes; each decision then checks
	// its own role (approve needs approver, recover job_operator).
	deciders = []string{settings.RoleApprover, settings.RoleJobOperator}
)

//go:embed openapi.json
var openAPI []byte

// routes registers the API. A path's other methods answer 405 with the
// ones it takes, and an unknown path 404, both as error bodies.
func (s *Server) routes() {
	methods := map[string][]string{}
	for _, rt := range s.table() {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt, false))
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	for path, allowed := range methods {
		s.mux.Handle(path, s.wrap(route{path: path, h: notAllowed(allowed)}, false))
	}
	s.mux.Handle("GET /v1/openapi.json", s.wrap(route{path: "/v1/openapi.json", h: func(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
		return nil
	}}, true))
	s.mux.Handle("/v1/openapi.json", s.wrap(route{path: "/v1/openapi.json", h: notAllowed([]string{"GET"})}, true))
	s.mux.Handle("/", s.wrap(route{path: "/", h: func(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
		return errorf(http.StatusNotFound, CodeNotFound, "no route %s %s: the API is under /v1 (GET /v1/openapi.json describes it)", r.Method, r.URL.Path)
	}}, false))
}

// table is the API's routes.
func (s *Server) table() []route {
	return []route{
		{"POST", "/v1/sessions", sessionClients, s.createSession},
		{"GET", "/v1/sessions/{id}", sessionReaders, s.getSession},
		{"POST", "/v1/sessions/{id}/turns", sessionClients, s.startTurn},
		{"POST", "/v1/sessions/{id}/decisions", approvers, s.decideSession},
		{"POST", "/v1/sessions/{id}/cancel", sessionClients, s.cancelTurn},
		{"GET", "/v1/sessions/{id}/events", sessionReaders, s.sessionEvents},
		{"POST", "/v1/jobs", operators, s.createJob},
		{"GET", "/v1/jobs", workReaders, s.listJobs},
		{"GET", "/v1/jobs/{id}", workReaders, s.getJob},
		{"POST", "/v1/jobs/{id}/decisions", deciders, s.decideJob},
		{"GET", "/v1/jobs/{id}/events", workReaders, s.jobEvents},
		{"POST", "/v1/plans", operators, s.createPlan},
		{"GET", "/v1/plans", workReaders, s.listPlans},
		{"GET", "/v1/plans/{id}", workReaders, s.getPlan},
		{"POST", "/v1/plans/{id}/decisions", deciders, s.decidePlan},
		{"GET", "/v1/plans/{id}/events", workReaders, s.planEvents},
	}
}

// notAllowed answers a method a path does not take.
func notAllowed(allowed []string) handler {
	slices.Sort(allowed)
	return func(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s takes %s, not %s", r.URL.Path, strings.Join(allowed, " or "), r.Method)
	}
}

// wrap gives a route its request id, its caller's identity (unless
// public), the roles check, the error body and the access log; a panic in
// a handler is a 500, logged, never a dropped connection.
func (s *Server) wrap(rt route, public bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := requestID(r)
		w.Header().Set(HeaderRequestID, rid)
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		var id Identity
		defer func() {
			if p := recover(); p != nil {
				s.o.Log.Error().Str("request_id", rid).Str("path", r.URL.Path).Interface("panic", p).Msg("service handler panicked")
				if !rec.wrote {
					writeError(rec, r, errorf(http.StatusInternalServerError, CodeInternal, "the handler failed; the request id names it in axlrd's log"))
				}
			}
			s.o.Log.Debug().Str("request_id", rid).Str("method", r.Method).Str("path", r.URL.Path).Int("status", rec.status).
				Str("identity", id.Name).Dur("took", time.Since(start)).Msg("service request")
		}()
		if !public {
			var err *apiError
			if id, err = s.auth.identify(r); err != nil {
				writeError(rec, r, err)
				return
			}
			if rt.roles != nil && !id.Can(rt.roles...) {
				writeError(rec, r, errorf(http.StatusForbidden, CodeForbidden, "%s (roles %s) may not %s %s: it needs %s", id.Name,
					strings.Join(id.Roles, ", "), r.Method, rt.path, strings.Join(append(rt.roles, settings.RoleAdmin), " or ")))
				return
			}
		}
		if err := rt.h(rec, r, id); err != nil {
			if rec.wrote {
				return
			}
			writeError(rec, r, err)
		}
	})
}

// recorder notes the status a handler wrote, and whether it wrote.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	r.status, r.wrote = code, true
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Flush lets an event stream flush through the recorder.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// need refuses an identity without one of roles for what it names.
func need(id Identity, what string, roles ...string) *apiError {
	if id.Can(roles...) {
		return nil
	}
	return errorf(http.StatusForbidden, CodeForbidden, "%s (roles %s) may not %s: it needs %s", id.Name, strings.Join(id.Roles, ", "), what,
		strings.Join(append(slices.Clone(roles), settings.RoleAdmin), " or "))
}

// probeHandler serves /livez (the process answers) and /readyz (every
// check of Options.Ready passes: 200, else 503 with the ones that fail).
func (s *Server) probeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		var checks []Check
		if s.o.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			checks = s.o.Ready(ctx)
			cancel()
		}
		status, code := "ready", http.StatusOK
		for _, c := range checks {
			if !c.OK {
				status, code = "not ready", http.StatusServiceUnavailable
			}
		}
		writeJSON(w, code, map[string]any{"status": status, "checks": checks})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errorBody{Error: errorDetail{Code: CodeNotFound, Message: fmt.Sprintf("the probe listener serves GET /livez and GET /readyz, not %s %s", r.Method, r.URL.Path)}})
	})
	return mux
}

// OpenAPI returns the API's OpenAPI 3.1 document, as /v1/openapi.json
// serves it.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }
