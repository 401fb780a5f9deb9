package service

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/live"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// Event types the streams add to the durable ones.
const (
	// EventStreamOpened opens every stream: it says which events are
	// durable and how to resume. It has no id.
	EventStreamOpened = "stream.opened"
	// EventGap says the durable events between two cursors are gone (past
	// the session's journal bound) and were skipped.
	EventGap = "stream.gap"
	// EventStreamError ends a stream that cannot go on (its cursor is
	// gone, axlrd stopped answering): its data is an error's detail. It
	// has no id; the client may resume from its last one.
	EventStreamError = "stream.error"
	// EventJobStatus and EventPlanStatus are a job's and a plan's status
	// changes.
	EventJobStatus  = "job.status"
	EventPlanStatus = "plan.status"
)

// opened is the data of EventStreamOpened.
type opened struct {
	Durable string   `json:"durable"`
	Live    []string `json:"live"`
	Resume  string   `json:"resume"`
}

var openedNote = opened{
	Durable: "every event with an id is durable: after a disconnect or an axlrd restart, reconnect with Last-Event-ID (or ?after=) and get each one you missed, once, in order",
	Live:    []string{string(contract.EventTextDelta), string(contract.EventReasoningDelta)},
	Resume:  "live deltas have no id and are not durable: a delta lost in a disconnect is not sent again; the text (or reasoning) event of the completed response stands in for them",
}

// sse writes one stream's events: each durable event with its id, live
// ones without, a heartbeat comment when nothing else goes out.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// writeTimeout bounds one write to a client: one that takes no bytes
// for that long is cut off.
const writeTimeout = 10 * time.Second

func (s *sse) event(id, typ string, data []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	var b []byte
	if id != "" {
		b = append(b, "id: "+id+"\n"...)
	}
	b = append(b, "event: "+typ+"\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) comment(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) json(id, typ string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.event(id, typ, b)
}

// cursor is where a stream resumes: Last-Event-ID, else ?after=.
func cursor(r *http.Request) string {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	return r.URL.Query().Get("after")
}

// errSlow ends the stream of a client that fell more than StreamBuffer
// events behind.
var errSlow = errors.New("the client fell behind")

func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	sid := r.PathValue("id")
	after := 0
	switch c := cursor(r); c {
	case "":
	case AfterNow:
		after = -1
	default:
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, CodeInvalidCursor, "cursor %q: a session's event id is a number, or now", c)
		}
		after = n
	}
	if !session.ValidID(sid) {
		return errorf(http.StatusNotFound, CodeNotFound, "no session %q: a session id is a UUID", sid)
	}
	// The deltas first: a model request that streams while the session is
	// looked up is not missed.
	wid := workflows.SessionWorkflowID(sid)
	deltas, cancel := s.o.Live.Subscribe(wid, s.o.StreamBuffer)
	defer func() { cancel() }()
	found, err := s.o.Client.FindSession(r.Context(), sid)
	if err != nil {
		return fromClient(err)
	}
	if found != wid {
		// A successor's id: the deltas go by the workflow's.
		cancel()
		deltas, cancel = s.o.Live.Subscribe(found, s.o.StreamBuffer)
	}
	f, release := s.feeds.session(sid, found)
	defer release()
	out := newSSE(w)
	err = s.followSession(r.Context(), out, f, found, after, deltas)
	s.streamEnded(r, err)
	return nil
}

// AfterNow, as a session stream's cursor, sends only what comes after
// the stream opened: the events of a session from now on, and its deltas.
const AfterNow = "now"

// followSession sends a session's events after cursor after: those
// before what the shared feed holds straight from the session, then the
// feed's, with the live deltas and the heartbeats between them.
func (s *Server) followSession(ctx context.Context, out *sse, f *sessionFeed, wid string, after int, deltas *live.Sub) error {
	if err := out.json("", EventStreamOpened, openedNote); err != nil {
		return err
	}
	send := func(evs []numbered) error {
		for _, e := range evs {
			if e.n <= after {
				continue
			}
			if e.n > after+1 {
				if err := out.json("", EventGap, map[string]int{"after": after, "next": e.n - 1}); err != nil {
					return err
				}
			}
			if err := out.json(strconv.Itoa(e.n), string(e.ev.Type), e.ev); err != nil {
				return err
			}
			after = e.n
		}
		return nil
	}
	heartbeat := time.NewTicker(s.o.Heartbeat)
	defer heartbeat.Stop()
	// wait sends the live deltas and the heartbeats until changed is
	// closed, or ctx ends.
	wait := func(changed <-chan struct{}) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			return nil
		case d := <-deltas.C:
			return out.json("", string(d.Type), d)
		case <-heartbeat.C:
			return out.comment("heartbeat")
		}
	}
	caughtUp := false
	for after < 0 {
		// From now on: from the newest event the feed knows once it read
		// the session.
		head, changed, ready := f.head()
		if ready {
			after = head
			break
		}
		if err := wait(changed); err != nil {
			return err
		}
	}
	for {
		evs, changed, first := f.since(after)
		if first >= 0 && after+1 < first {
			// Older than what the feed holds: ask the session itself.
			page, err := s.o.Client.SessionEvents(ctx, wid, after)
			if err != nil {
				return err
			}
			var older []numbered
			for i, ev := range page.Events {
				if n := page.From + i + 1; n < first {
					older = append(older, numbered{n, ev})
				}
			}
			if len(older) == 0 {
				// Nothing the session holds before the feed: the rest
				// is gone.
				if err := out.json("", EventGap, map[string]int{"after": after, "next": first - 1}); err != nil {
					return err
				}
				after = first - 1
			}
			if err := send(older); err != nil {
				return err
			}
			continue
		}
		if caughtUp && len(evs) > s.o.StreamBuffer {
			return errSlow
		}
		if err := send(evs); err != nil {
			return err
		}
		caughtUp = first >= 0
		if err := wait(changed); err != nil {
			return err
		}
	}
}

// streamEnded logs why a stream ended, unless the client left.
func (s *Server) streamEnded(r *http.Request, err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	s.o.Log.Debug().Err(err).Str("path", r.URL.Path).Msg("event stream ended")
}

func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	id := r.PathValue("id")
	if !workID(id) {
		return errorf(http.StatusNotFound, CodeNotFound, "no job %q", id)
	}
	return s.followChanges(w, r, workflows.JobWorkflowID(id), func(ctx context.Context, after string, emit func(client.Change) error) error {
		return s.o.Client.FollowJob(ctx, id, after, true, emit)
	})
}

func (s *Server) planEvents(w http.ResponseWriter, r *http.Request, _ Identity) *apiError {
	id := r.PathValue("id")
	if !workID(id) {
		return errorf(http.StatusNotFound, CodeNotFound, "no plan %q", id)
	}
	return s.followChanges(w, r, workflows.PlanWorkflowID(id), func(ctx context.Context, after string, emit func(client.Change) error) error {
		return s.o.Client.FollowPlan(ctx, id, after, true, emit)
	})
}

// followChanges streams a job's or a plan's changes from its history,
// with the live deltas of its model requests on this axlrd. The first
// change (or the cursor's check) is read before the stream's header
// goes out, so an unknown job or cursor is still an error answer.
func (s *Server) followChanges(w http.ResponseWriter, r *http.Request, wid string, follow func(context.Context, string, func(client.Change) error) error) *apiError {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	after := cursor(r)
	if err := client.CheckChangeID(after); err != nil {
		return fromClient(err)
	}
	if err := s.o.Client.Exists(ctx, wid); err != nil {
		return fromClient(err)
	}
	changes := make(chan client.Change, s.o.StreamBuffer)
	ended := make(chan error, 1)
	deltas, unsubscribe := s.o.Live.Subscribe(wid, s.o.StreamBuffer)
	defer unsubscribe()
	go func() {
		ended <- follow(ctx, after, func(c client.Change) error {
			select {
			case changes <- c:
				return nil
			default:
				return errSlow
			}
		})
	}()
	out := newSSE(w)
	heartbeat := time.NewTicker(s.o.Heartbeat)
	defer heartbeat.Stop()
	err := func() error {
		if err := out.json("", EventStreamOpened, openedNote); err != nil {
			return err
		}
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-ended:
				// Say why the stream ends; the client resumes from
				// its cursor.
				err = cmp.Or(err, errors.New("the history's follow ended"))
				e := fromClient(err)
				_ = out.json("", EventStreamError, errorDetail{Code: e.code, Message: e.message, RequestID: w.Header().Get(HeaderRequestID)})
				return err
			case c := <-changes:
				typ := EventJobStatus
				if c.Job == nil {
					typ = EventPlanStatus
				}
				if err := out.json(c.ID, typ, c); err != nil {
					return err
				}
			case d := <-deltas.C:
				if err := out.json("", string(d.Type), d); err != nil {
					return err
				}
			case <-heartbeat.C:
				if err := out.comment("heartbeat"); err != nil {
					return err
				}
			}
		}
	}()
	s.streamEnded(r, err)
	return nil
}

// numbered is a session event with its id (its 1-based place in the
// session).
type numbered struct {
	n  int
	ev contract.Event
}

// feeds are the shared followers of the sessions streams watch: one per
// session however many streams follow it, so a new event is one query,
// not one per stream.
type feeds struct {
	ctx    context.Context
	client *client.Client
	live   *live.Broker
	log    zerolog.Logger

	mu       sync.Mutex
	sessions map[string]*sessionFeed
}

func newFeeds(ctx context.Context, c *client.Client, l *live.Broker, log zerolog.Logger) *feeds {
	return &feeds{ctx: ctx, client: c, live: l, log: log, sessions: map[string]*sessionFeed{}}
}

// feedHold is how many recent events a session's feed holds for its
// streams; one further behind reads the session itself.
const feedHold = 1024

// sessionFeed follows one session: it waits for its history to grow and
// asks for the events after the last it has.
type sessionFeed struct {
	mu      sync.Mutex
	events  []numbered
	first   int // the id of the first event the feed can give (events[0].n, or next when empty)
	changed chan struct{}
	refs    int
	stop    context.CancelFunc
}

// session returns the feed of a session, started on first use; release
// stops it once no stream uses it.
func (fs *feeds) session(sid, wid string) (*sessionFeed, func()) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.sessions[sid]
	if !ok {
		ctx, stop := context.WithCancel(fs.ctx)
		f = &sessionFeed{changed: make(chan struct{}), stop: stop, first: -1}
		fs.sessions[sid] = f
		go fs.follow(ctx, f, sid, wid)
	}
	f.refs++
	var once sync.Once
	return f, func() {
		once.Do(func() {
			fs.mu.Lock()
			defer fs.mu.Unlock()
			if f.refs--; f.refs == 0 {
				f.stop()
				delete(fs.sessions, sid)
			}
		})
	}
}

// since returns the feed's events after id after, the channel that is
// closed when more arrive, and the id of the first event it holds (a
// stream before it reads the session itself; -1 before the feed's first
// read, which a stream waits for).
func (f *sessionFeed) since(after int) ([]numbered, <-chan struct{}, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := f.first
	if first < 0 {
		return nil, f.changed, -1
	}
	var out []numbered
	for _, e := range f.events {
		if e.n > after {
			out = append(out, e)
		}
	}
	return out, f.changed, first
}

// head returns the id of the newest event the feed knows, and whether it
// read the session yet (when not, the channel says when it has).
func (f *sessionFeed) head() (int, <-chan struct{}, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first < 0 {
		return 0, f.changed, false
	}
	if n := len(f.events); n > 0 {
		return f.events[n-1].n, f.changed, true
	}
	return f.first - 1, f.changed, true
}

func (f *sessionFeed) add(evs []numbered, next int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first < 0 {
		f.first = next + 1
		if len(evs) > 0 {
			f.first = evs[0].n
		}
	}
	f.events = append(f.events, evs...)
	if over := len(f.events) - feedHold; over > 0 {
		f.events = append([]numbered(nil), f.events[over:]...)
	}
	if len(f.events) > 0 {
		f.first = f.events[0].n
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// follow reads the session's new events each time its history grows,
// from its cursor when the feed started.
func (fs *feeds) follow(ctx context.Context, f *sessionFeed, sid, wid string) {
	changed := fs.client.Changes(ctx, wid)
	next := -1
	for ctx.Err() == nil {
		if next < 0 {
			// A page from past the end is empty, and its Next is the
			// session's cursor: where the feed starts.
			page, err := fs.client.SessionEvents(ctx, wid, math.MaxInt32)
			if err != nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			next = page.Next
			f.add(nil, next)
		}
		for {
			page, err := fs.client.SessionEvents(ctx, wid, next)
			if err != nil {
				fs.log.Debug().Err(err).Str("session", sid).Msg("session feed: read events")
				break
			}
			var evs []numbered
			for i, ev := range page.Events {
				evs = append(evs, numbered{page.From + i + 1, ev})
			}
			if len(evs) > 0 {
				f.add(evs, page.Next)
			}
			if page.Next <= next || len(page.Events) == 0 {
				next = max(next, page.Next)
				break
			}
			next = page.Next
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(client.IdleQuery):
		}
	}
}
