package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/service"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// apiDoc validates the API's answers against its OpenAPI document: one
// validator for the tests of the package.
var apiDoc = sync.OnceValues(func() (validator.Validator, error) {
	doc, err := libopenapi.NewDocument(service.OpenAPI())
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return v, nil
})

// conforms fails the test when an answer is not one the document allows
// for its request.
func conforms(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	v, err := apiDoc()
	if err != nil {
		t.Fatal(err)
	}
	req = req.Clone(context.Background())
	req.URL.Scheme, req.URL.Host, req.Host = "http", "127.0.0.1:7280", "127.0.0.1:7280"
	resp := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	if ok, errs := v.ValidateHttpResponse(req, resp); !ok {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Message+": "+e.Reason)
			for _, se := range e.SchemaValidationErrors {
				msgs = append(msgs, "  "+se.FieldPath+": "+se.Reason)
			}
		}
		t.Errorf("%s %s answered %d, which the document does not allow:\n%s\n%s", req.Method, req.URL.Path, status, strings.Join(msgs, "\n"), body)
	}
}

// api is a client of one axlrd's service API with a bearer token.
type api struct {
	t     testing.TB
	url   string
	token string
	http  *http.Client
}

// localAPI reaches the service of the axlrd whose state dir is stateDir
// at url, with the local token axlrd made there.
func localAPI(t testing.TB, url, stateDir string) *api {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "service", "token"))
	if err != nil {
		t.Fatalf("read the local token: %v", err)
	}
	return &api{t: t, url: url, token: strings.TrimSpace(string(b)), http: &http.Client{Timeout: 30 * time.Second}}
}

// reply is an answer of the API: its status and its JSON body.
type reply struct {
	status int
	body   map[string]any
	raw    []byte
}

func (r reply) str(path ...string) string {
	var v any = r.body
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// do sends one request; body is JSON-encoded unless it is a string.
func (a *api) do(method, path string, body any, headers ...string) reply {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	conforms(a.t, req, resp.StatusCode, resp.Header, raw)
	r := reply{status: resp.StatusCode, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// must fails the test unless the reply has status.
func (r reply) must(t testing.TB, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// sseEvent is one event of a stream.
type sseEvent struct {
	id, typ string
	data    json.RawMessage
}

// stream follows an event stream, handing its events to a channel until
// the stream or the test ends.
type stream struct {
	events chan sseEvent
	cancel context.CancelFunc
	done   chan error
}

func (a *api) stream(path, lastID string) *stream {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", a.url+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		a.t.Fatalf("GET %s: status %d: %s", path, resp.StatusCode, raw)
	}
	s := &stream{events: make(chan sseEvent, 4096), cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.typ != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			}
		}
		s.done <- sc.Err()
		close(s.events)
	}()
	a.t.Cleanup(cancel)
	return s
}

// until collects events until one of type typ arrives (included), or
// fails the test after d.
func (s *stream) until(t testing.TB, typ string, d time.Duration) []sseEvent {
	t.Helper()
	var got []sseEvent
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended before a %s event; got %s", typ, types(got))
			}
			got = append(got, ev)
			if ev.typ == typ {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s event in %s; got %s", typ, d, types(got))
		}
	}
}

func types(evs []sseEvent) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.typ)
	}
	return strings.Join(out, " ")
}

// durable keeps the events with an id.
func durable(evs []sseEvent) []sseEvent {
	var out []sseEvent
	for _, e := range evs {
		if e.id != "" {
			out = append(out, e)
		}
	}
	return out
}

// serviceSettings is settings.json for a service test: model m, the
// workspace as the API's one root, and extra keys of "service".
func serviceSettings(workspace, extra string) string {
	return fmt.Sprintf(`{"model": "m", "service": {"roots": [%q]%s}}`, workspace, extra)
}

// TestServiceSessionTurn: a session made through the API runs a turn
// whose answer streams; the stream gives the deltas as they come, then
// the durable events; a retried turn with the same key is the same
// execution, another body under it is refused; a reconnect from a cursor
// gets the rest once.
func TestServiceSessionTurn(t *testing.T) {
	answer := "Here is **the plan**: read, then write."
	model := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Text: answer, ChunkBytes: 4, ChunkDelay: 15 * time.Millisecond}))
	e := newEnv(t, model.URL)
	e.writeSettings(serviceSettings(e.workspace, ""))
	d := e.start()
	a := localAPI(t, d.info.ServiceURL, e.stateDir)

	for path, want := range map[string]string{"/livez": `"status":"ok"`, "/readyz": `"status":"ready"`} {
		resp, err := http.Get("http://" + d.info.ProbeAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if path == "/readyz" {
			for _, part := range []string{"temporal", "model", "made", "memory"} {
				if !strings.Contains(string(body), `"name":"`+part+`","ok":true`) {
					t.Fatalf("/readyz does not check %s: %s", part, body)
				}
			}
		}
	}
	anon := &api{t: t, url: a.url, http: a.http}
	if r := anon.do("POST", "/v1/sessions", map[string]any{}); r.status != 401 || r.str("error", "code") != "unauthenticated" || r.str("error", "request_id") == "" {
		t.Fatalf("without a token: %d %s", r.status, r.raw)
	}
	s := a.do("POST", "/v1/sessions", map[string]any{"mode": "normal"}, "Idempotency-Key", "create-session-0001").must(t, 201)
	sid := s.str("id")
	if again := a.do("POST", "/v1/sessions", map[string]any{"mode": "normal"}, "Idempotency-Key", "create-session-0001").must(t, 201); again.str("id") != sid {
		t.Fatalf("a retried creation made session %s, not %s", again.str("id"), sid)
	}
	if r := a.do("POST", "/v1/sessions", map[string]any{"mode": "review"}, "Idempotency-Key", "create-session-0001"); r.status != 409 || r.str("error", "code") != "idempotency_conflict" {
		t.Fatalf("another creation under the key: %d %s", r.status, r.raw)
	}
	if s.str("state") != "idle" || s.str("root") == "" || s.str("created_by") != "local" {
		t.Fatalf("created: %s", s.raw)
	}
	events := a.stream("/v1/sessions/"+sid+"/events", "")
	if first := events.until(t, "stream.opened", 10*time.Second); len(first) != 1 {
		t.Fatalf("the stream did not open with stream.opened: %s", types(first))
	}
	key := "turn-0000000000000001"
	turn := a.do("POST", "/v1/sessions/"+sid+"/turns", map[string]any{"prompt": "plan it"}, "Idempotency-Key", key).must(t, 202)
	exec := turn.str("execution_id")
	again := a.do("POST", "/v1/sessions/"+sid+"/turns", `{"prompt":   "plan it"}`, "Idempotency-Key", key).must(t, 202)
	if again.str("execution_id") != exec {
		t.Fatalf("the same key and body started %s, then %s", exec, again.str("execution_id"))
	}
	if r := a.do("POST", "/v1/sessions/"+sid+"/turns", map[string]any{"prompt": "something else"}, "Idempotency-Key", key); r.status != 409 || r.str("error", "code") != "idempotency_conflict" {
		t.Fatalf("another body under the key: %d %s", r.status, r.raw)
	}
	got := events.until(t, "completed", 30*time.Second)
	var streamed strings.Builder
	textAt, lastDelta := -1, -1
	for i, ev := range got {
		switch ev.typ {
		case "text.delta":
			if ev.id != "" {
				t.Fatalf("a delta has an id: %s", ev.id)
			}
			var d contract.Event
			_ = json.Unmarshal(ev.data, &d)
			streamed.WriteString(d.Text)
			lastDelta = i
		case "text":
			textAt = i
		}
	}
	if streamed.String() != answer {
		t.Fatalf("the deltas make %q, want %q (events %s)", streamed.String(), answer, types(got))
	}
	if lastDelta < 0 || textAt < lastDelta {
		t.Fatalf("the text event (at %d) came before the last delta (at %d): %s", textAt, lastDelta, types(got))
	}
	var end contract.Event
	_ = json.Unmarshal(got[len(got)-1].data, &end)
	if end.Result == nil || end.Result.Status != contract.Completed || end.Result.Answer != answer {
		t.Fatalf("the completed event carries no completed result: %s", got[len(got)-1].data)
	}
	if model.Count() != 1 {
		t.Fatalf("the model was asked %d times for one turn", model.Count())
	}
	view := a.do("GET", "/v1/sessions/"+sid, nil).must(t, 200)
	if view.str("state") != "idle" || view.str("result", "answer") != answer || view.str("execution_id") != exec {
		t.Fatalf("after the turn: %s", view.raw)
	}

	// A reconnect from the second durable event gets the rest, once.
	all := durable(got)
	again2 := a.stream("/v1/sessions/"+sid+"/events", all[1].id)
	rest := durable(again2.until(t, "completed", 10*time.Second))
	if len(rest) != len(all)-2 {
		t.Fatalf("from %s: %d events, want %d (%s, then %s)", all[1].id, len(rest), len(all)-2, types(all), types(rest))
	}
	for i := range rest {
		if rest[i].id != all[i+2].id || !bytes.Equal(rest[i].data, all[i+2].data) {
			t.Fatalf("event %s after the reconnect differs: %s, want %s", rest[i].id, rest[i].data, all[i+2].data)
		}
	}
}

// tokenSHA is the hex sha256 of a token, as settings hold it.
func tokenSHA(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TestServiceDecisions: a call waits for a decision; a session client may
// not take it, an approver may, at the revision that waits and for the
// call that waits; the result records who decided, and so does history.
func TestServiceDecisions(t *testing.T) {
	model := agenttest.NewServer(t, agenttest.Queue(
		agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write", Arguments: `{"path":"notes.md","content":"hi\n","mode":"create"}`}}},
		agenttest.Reply{Text: "Wrote notes.md."},
	))
	e := newEnv(t, model.URL)
	e.writeSettings(serviceSettings(e.workspace, fmt.Sprintf(`, "tokens": [
		{"name": "ci", "sha256": %q, "roles": ["session_client"]},
		{"name": "boss", "sha256": %q, "roles": ["approver"]}]`, tokenSHA("ci-secret-token-1"), tokenSHA("boss-secret-token-1"))))
	d := e.start()
	local := localAPI(t, d.info.ServiceURL, e.stateDir)
	ci := &api{t: t, url: local.url, token: "ci-secret-token-1", http: local.http}
	boss := &api{t: t, url: local.url, token: "boss-secret-token-1", http: local.http}

	sid := ci.do("POST", "/v1/sessions", map[string]any{}).must(t, 201).str("id")
	if r := boss.do("POST", "/v1/sessions", map[string]any{}); r.status != 403 || r.str("error", "code") != "forbidden" {
		t.Fatalf("an approver created a session: %d %s", r.status, r.raw)
	}
	events := ci.stream("/v1/sessions/"+sid+"/events", "")
	ci.do("POST", "/v1/sessions/"+sid+"/turns", map[string]any{"prompt": "write notes.md"}, "Idempotency-Key", "decide-turn-000001").must(t, 202)
	waits := events.until(t, "decision.required", 30*time.Second)
	var asked contract.Event
	_ = json.Unmarshal(waits[len(waits)-1].data, &asked)
	if asked.Result == nil || asked.Result.Status != contract.NeedsDecision || asked.Result.Pending == nil || asked.Result.Pending.CallID != "w1" {
		t.Fatalf("decision.required carries no needs_decision result: %s", waits[len(waits)-1].data)
	}
	view := ci.do("GET", "/v1/sessions/"+sid, nil).must(t, 200)
	rev := int(view.body["revision"].(float64))
	if view.str("state") != "needs_decision" || view.str("pending", "call_id") != "w1" {
		t.Fatalf("the session does not wait: %s", view.raw)
	}
	decide := func(a *api, call string, revision int) reply {
		return a.do("POST", "/v1/sessions/"+sid+"/decisions", map[string]any{"call_id": call, "decision": "approve", "revision": revision})
	}
	if r := decide(ci, "w1", rev); r.status != 403 {
		t.Fatalf("a session client decided: %d %s", r.status, r.raw)
	}
	if r := decide(boss, "w1", rev+5); r.status != 409 || !strings.Contains(r.str("error", "message"), "call w1") {
		t.Fatalf("a stale revision: %d %s", r.status, r.raw)
	}
	if r := decide(boss, "w9", rev); r.status != 409 || !strings.Contains(r.str("error", "message"), "w1") {
		t.Fatalf("another call: %d %s", r.status, r.raw)
	}
	fromNow := ci.stream("/v1/sessions/"+sid+"/events?after=now", "")
	fromNow.until(t, "stream.opened", 10*time.Second)
	ok := decide(boss, "w1", rev).must(t, 202)
	if ok.str("decided_by") != "boss" {
		t.Fatalf("decided: %s", ok.raw)
	}
	if again := decide(boss, "w1", rev).must(t, 202); again.str("execution_id") != ok.str("execution_id") {
		t.Fatalf("a retried decision started %s, then %s", ok.str("execution_id"), again.str("execution_id"))
	}
	done := events.until(t, "completed", 30*time.Second)
	var end contract.Event
	_ = json.Unmarshal(done[len(done)-1].data, &end)
	if end.Result == nil || len(end.Result.ToolCalls) != 1 || end.Result.ToolCalls[0].DecidedBy != "boss" || end.Result.ToolCalls[0].Status != contract.CallCompleted {
		t.Fatalf("the result does not record who decided: %s", done[len(done)-1].data)
	}
	cursor := int(view.body["cursor"].(float64))
	if now := durable(fromNow.until(t, "completed", 30*time.Second)); now[0].id != fmt.Sprint(cursor+1) {
		t.Fatalf("a stream from now, opened at event %d, began with %s (%s)", cursor, now[0].id, types(now))
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "notes.md")); err != nil || string(b) != "hi\n" {
		t.Fatalf("notes.md: %q %v", b, err)
	}
	hist := e.tui(context.Background(), "history", sid, "--json")
	if !strings.Contains(hist.stdout, "boss") {
		t.Fatalf("history does not name the decider:\n%s", hist.stdout)
	}
}

// serviceURL reads the service API's address from a spawned axlrd's
// ready line.
func serviceURL(t testing.TB, p *process) string {
	t.Helper()
	for _, line := range strings.Split(p.stdout.String(), "\n") {
		if _, rest, ok := strings.Cut(line, " service "); ok && strings.HasPrefix(line, "axlrd ready:") {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no service in the ready line: %s", p.stdout)
	return ""
}

// TestServiceRestartMidStream kills axlrd with SIGKILL after a turn was
// accepted and while its model request is in flight, and starts it
// again. The client reconnects with its cursor: it gets each durable
// event once, in order, the same ones a reader from the start gets. The
// turn's request sent again with its key is the same execution, and the
// turn runs once.
func TestServiceRestartMidStream(t *testing.T) {
	held := make(chan struct{})
	var mu sync.Mutex
	answers := 0
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "user" {
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "r1", Name: "local_read", Arguments: `{"path":"notes.md"}`}}}
		}
		mu.Lock()
		answers++
		first := answers == 1
		mu.Unlock()
		if first {
			// The first answer never comes: axlrd is killed meanwhile.
			return agenttest.Reply{Text: "never", Wait: held}
		}
		return agenttest.Reply{Text: "notes.md says hello.", ChunkBytes: 5}
	})
	t.Cleanup(func() { close(held) })
	e := newEnv(t, model.URL)
	if err := os.WriteFile(filepath.Join(e.workspace, "notes.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.writeSettings(serviceSettings(e.workspace, ""))
	p := e.spawn()
	a := localAPI(t, serviceURL(t, p), e.stateDir)
	sid := a.do("POST", "/v1/sessions", map[string]any{}).must(t, 201).str("id")
	s1 := a.stream("/v1/sessions/"+sid+"/events", "")
	turn := map[string]any{"prompt": "what does notes.md say?", "approval": "local"}
	key := "restart-turn-00000001"
	exec := a.do("POST", "/v1/sessions/"+sid+"/turns", turn, "Idempotency-Key", key).must(t, 202).str("execution_id")
	before := durable(s1.until(t, "tool.completed", 30*time.Second))
	asked := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return answers > 0
	}
	for deadline := time.Now().Add(30 * time.Second); !asked(); {
		if time.Now().After(deadline) {
			t.Fatal("the second model request never came")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	s1.cancel()

	p2 := e.spawn()
	a = localAPI(t, serviceURL(t, p2), e.stateDir)
	if again := a.do("POST", "/v1/sessions/"+sid+"/turns", turn, "Idempotency-Key", key).must(t, 202); again.str("execution_id") != exec {
		t.Fatalf("after the restart the key started %s, not %s", again.str("execution_id"), exec)
	}
	last := before[len(before)-1].id
	after := durable(a.stream("/v1/sessions/"+sid+"/events", last).until(t, "completed", 60*time.Second))
	got := append(append([]sseEvent{}, before...), after...)
	all := durable(a.stream("/v1/sessions/"+sid+"/events", "0").until(t, "completed", 30*time.Second))
	if len(got) != len(all) {
		t.Fatalf("before the kill %s and after it %s; from the start %s", types(before), types(after), types(all))
	}
	for i := range all {
		if got[i].id != all[i].id || !bytes.Equal(got[i].data, all[i].data) {
			t.Fatalf("event %d: %s %s, from the start %s %s", i, got[i].id, got[i].data, all[i].id, all[i].data)
		}
	}
	view := a.do("GET", "/v1/sessions/"+sid, nil).must(t, 200)
	if view.str("result", "answer") != "notes.md says hello." || view.str("execution_id") != exec {
		t.Fatalf("after the restart: %s", view.raw)
	}
	starts := 0
	for _, ev := range all {
		if ev.typ == "session" {
			starts++
		}
	}
	prompts := 0
	for _, r := range model.Requests() {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "user" {
			prompts++
		}
	}
	if starts != 1 || prompts != 1 {
		t.Fatalf("the turn ran %d times (%d prompts to the model)", starts, prompts)
	}
}

// jobChange decodes a job.status event.
func jobChange(t testing.TB, ev sseEvent) jobs.Record {
	t.Helper()
	var c struct {
		Job *jobs.Record `json:"job"`
	}
	if err := json.Unmarshal(ev.data, &c); err != nil || c.Job == nil {
		t.Fatalf("a job.status event without its job: %s", ev.data)
	}
	return *c.Job
}

// untilJob reads a job's stream until its status is want, returning the
// events read.
func (s *stream) untilJob(t testing.TB, want jobs.Status) []sseEvent {
	t.Helper()
	var got []sseEvent
	for {
		evs := s.until(t, "job.status", 2*time.Minute)
		got = append(got, evs...)
		if jobChange(t, evs[len(evs)-1]).Status == want {
			return got
		}
	}
}

// TestServiceJob starts a repair through the API, follows its status
// changes on its event stream, approves its check and its merge as a
// control plane would, and reconnects from a cursor: one pull request,
// one merge, and every change once.
func TestServiceJob(t *testing.T) {
	gh, repo, e := repairWorld(t, fleetFiles(3), 1, fleetGrepReply)
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"},
		"repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() + `", "poll_seconds": 1},
		"service": {"roots": ["` + e.workspace + `"], "tokens": [
			{"name": "bot", "sha256": "` + tokenSHA("bot-secret-token-1") + `", "roles": ["job_operator", "approver"]},
			{"name": "viewer", "sha256": "` + tokenSHA("viewer-token-00001") + `", "roles": ["session_client"]}]}}`)
	d := e.start()
	local := localAPI(t, d.info.ServiceURL, e.stateDir)
	bot := &api{t: t, url: local.url, token: "bot-secret-token-1", http: local.http}
	viewer := &api{t: t, url: local.url, token: "viewer-token-00001", http: local.http}
	if r := viewer.do("POST", "/v1/jobs", map[string]any{"kind": "repair", "brief": "TestN1 fails"}); r.status != 403 {
		t.Fatalf("a session client started a job: %d %s", r.status, r.raw)
	}
	if r := bot.do("POST", "/v1/jobs", map[string]any{"kind": "mend", "brief": "x"}); r.status != 400 {
		t.Fatalf("kind mend: %d %s", r.status, r.raw)
	}
	id := bot.do("POST", "/v1/jobs", map[string]any{"kind": "repair", "brief": "TestN1 fails"}).must(t, 201).str("job", "id")
	events := bot.stream("/v1/jobs/"+id+"/events", "")
	waiting := events.untilJob(t, jobs.AwaitingApproval)
	if rec := jobChange(t, waiting[len(waiting)-1]); rec.Pending == nil || rec.Pending.Kind != jobs.PendingCheck {
		t.Fatalf("awaiting approval without a check: %s", waiting[len(waiting)-1].data)
	}
	if r := bot.do("POST", "/v1/jobs/"+id+"/decisions", map[string]any{"decision": "approve", "pending": "merge"}); r.status != 409 {
		t.Fatalf("a merge approved while the check waits: %d %s", r.status, r.raw)
	}
	bot.do("POST", "/v1/jobs/"+id+"/decisions", map[string]any{"decision": "approve", "pending": "check"}).must(t, 200)
	merging := events.untilJob(t, jobs.AwaitingMerge)
	if r := bot.do("POST", "/v1/jobs/"+id+"/decisions", map[string]any{"decision": "approve", "pending": "merge"}).must(t, 200); r.str("decided_by") != "bot" {
		t.Fatalf("merge approved: %s", r.raw)
	}
	done := events.untilJob(t, jobs.Completed)
	got := durable(append(append(waiting, merging...), done...))
	if calls := gh.Calls(); calls.PullRequestsOpened != 1 || calls.Merges != 1 {
		t.Fatalf("forge calls %+v", calls)
	}
	for i := 1; i < len(got); i++ {
		if got[i].id == got[i-1].id {
			t.Fatalf("change %s came twice", got[i].id)
		}
	}
	// From the second change on, a reconnect gets the rest, once.
	rest := durable(bot.stream("/v1/jobs/"+id+"/events", got[1].id).untilJob(t, jobs.Completed))
	if len(rest) != len(got)-2 || rest[0].id != got[2].id || rest[len(rest)-1].id != got[len(got)-1].id {
		t.Fatalf("from %s: %d changes, want %d", got[1].id, len(rest), len(got)-2)
	}
	hist := e.tui(context.Background(), "history", workflows.JobWorkflowID(id), "--json")
	if !strings.Contains(hist.stdout, "approve the merge by bot") {
		t.Fatalf("history does not name who approved the merge:\n%s", hist.stdout)
	}
}

// TestServicePlan runs a plan through the API: its status changes come
// on its stream; approving its commands and then declining its card end
// it declined; a decision that names the card while the commands wait is
// a conflict.
func TestServicePlan(t *testing.T) {
	model := agenttest.NewServer(t, planReply)
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(serviceSettings(e.workspace, ""))
	d := e.start()
	a := localAPI(t, d.info.ServiceURL, e.stateDir)
	id := a.do("POST", "/v1/plans", map[string]any{"brief": planBrief}, "Idempotency-Key", "create-plan-000001").must(t, 201).str("plan", "id")
	if again := a.do("POST", "/v1/plans", map[string]any{"brief": planBrief}, "Idempotency-Key", "create-plan-000001").must(t, 201); again.str("plan", "id") != id {
		t.Fatalf("a retried launch started plan %s, not %s", again.str("plan", "id"), id)
	}
	events := a.stream("/v1/plans/"+id+"/events", "")
	status := func(ev sseEvent) string {
		var c struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(ev.data, &c)
		return c.Status
	}
	until := func(want string) []sseEvent {
		var got []sseEvent
		for {
			evs := events.until(t, "plan.status", 3*time.Minute)
			got = append(got, evs...)
			if status(evs[len(evs)-1]) == want {
				return got
			}
		}
	}
	first := until("awaiting_approval")
	if r := a.do("POST", "/v1/plans/"+id+"/decisions", map[string]any{"decision": "decline"}); r.status != 409 {
		t.Fatalf("the card declined while the commands wait: %d %s", r.status, r.raw)
	}
	a.do("POST", "/v1/plans/"+id+"/decisions", map[string]any{"decision": "approve"}).must(t, 200)
	for {
		r := a.do("GET", "/v1/plans/"+id, nil).must(t, 200)
		if r.str("plan", "status") == "awaiting_approval" && r.str("plan", "pending", "kind") == "approval" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := a.do("POST", "/v1/plans/"+id+"/decisions", map[string]any{"decision": "decline", "reason": "not now"}).must(t, 200); r.str("plan", "status") != "declined" {
		t.Fatalf("declined: %s", r.raw)
	}
	rest := until("declined")
	all := durable(append(first, rest...))
	if status(all[0]) != "decomposing" && status(all[0]) != "awaiting_approval" {
		t.Fatalf("the first change: %s", all[0].data)
	}
	again := durable(a.stream("/v1/plans/"+id+"/events", all[0].id).until(t, "plan.status", time.Minute))
	if again[0].id != all[1].id {
		t.Fatalf("after %s the stream gave %s, not %s", all[0].id, again[0].id, all[1].id)
	}
}

// TestServiceCancel cancels a running turn by its execution id: the
// turn ends interrupted; another execution's id is refused.
func TestServiceCancel(t *testing.T) {
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	model := agenttest.NewServer(t, func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "late", Wait: held} })
	e := newEnv(t, model.URL)
	e.writeSettings(serviceSettings(e.workspace, `, "heartbeat_seconds": 1`))
	d := e.start()
	a := localAPI(t, d.info.ServiceURL, e.stateDir)
	sid := a.do("POST", "/v1/sessions", map[string]any{}).must(t, 201).str("id")
	events := a.stream("/v1/sessions/"+sid+"/events", "")
	exec := a.do("POST", "/v1/sessions/"+sid+"/turns", map[string]any{"prompt": "wait"}, "Idempotency-Key", "cancel-turn-0000001").must(t, 202).str("execution_id")
	events.until(t, "session", 30*time.Second)
	// While the model holds its answer, the stream's heartbeats keep it
	// open: a comment each second.
	req, _ := http.NewRequest("GET", a.url+"/v1/sessions/"+sid+"/events?after=now", nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	beats := 0
	sc := bufio.NewScanner(resp.Body)
	for deadline := time.Now().Add(10 * time.Second); beats < 2 && time.Now().Before(deadline) && sc.Scan(); {
		if sc.Text() == ": heartbeat" {
			beats++
		}
	}
	resp.Body.Close()
	if beats < 2 {
		t.Fatalf("%d heartbeats on an idle stream", beats)
	}
	if r := a.do("POST", "/v1/sessions/"+sid+"/cancel", map[string]any{"execution_id": "api-other"}); r.status != 409 || !strings.Contains(r.str("error", "message"), exec) {
		t.Fatalf("another execution cancelled: %d %s", r.status, r.raw)
	}
	a.do("POST", "/v1/sessions/"+sid+"/cancel", map[string]any{"execution_id": exec}).must(t, 202)
	end := events.until(t, "failed", 30*time.Second)
	var ev contract.Event
	_ = json.Unmarshal(end[len(end)-1].data, &ev)
	if ev.Result == nil || ev.Result.Status != contract.Interrupted {
		t.Fatalf("the cancelled turn ended %s", end[len(end)-1].data)
	}
}
