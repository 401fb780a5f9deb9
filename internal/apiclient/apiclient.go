// Package apiclient reaches the service API of the axlrd on this host for
// what only the API carries: the live deltas of a model request, which
// axlr-tui's transcript and --exec on a terminal show as they come. The
// durable events still come through Temporal (internal/client); a delta
// lost here is lost for good, and the completed text stands in for it.
//
// The axlrd of this host writes where its API listens and its local token
// into its state dir (service/url, service/token, 0600); FindLocal reads
// them, so only a user who can read the state dir gets in.
package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/contract"
)

// Local is the service API of this host's axlrd.
type Local struct {
	URL   string
	Token string
	HTTP  *http.Client
}

// ErrNoService is a state dir whose axlrd serves no API (service.listen
// off, or never started).
var ErrNoService = errors.New("axlrd serves no service API here")

// FindLocal reads where the axlrd of stateDir serves its API.
func FindLocal(stateDir string) (*Local, error) {
	dir := filepath.Join(stateDir, "service")
	u, err := os.ReadFile(filepath.Join(dir, "url"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoService
	}
	if err != nil {
		return nil, fmt.Errorf("find the service API: %w", err)
	}
	t, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return nil, fmt.Errorf("read the service API's local token: %w", err)
	}
	base := strings.TrimSpace(string(u))
	if base == "" || strings.HasPrefix(base, "https://") {
		// An API over TLS wants a client certificate or a token of the
		// settings', not the local one: axlr-tui does without deltas.
		return nil, ErrNoService
	}
	return &Local{URL: base, Token: strings.TrimSpace(string(t)), HTTP: &http.Client{}}, nil
}

// Event is one event of a stream, with its id ("" for a live one).
type Event struct {
	ID    string
	Type  string
	Event contract.Event
}

// Deltas hands fn each live delta (text.delta, reasoning.delta) of a
// session's model requests until ctx ends, reconnecting after a drop.
func (l *Local) Deltas(ctx context.Context, sessionID string, fn func(contract.Event)) error {
	for ctx.Err() == nil {
		err := l.Follow(ctx, sessionID, "now", func(e Event) {
			if e.ID == "" && (e.Event.Type == contract.EventTextDelta || e.Event.Type == contract.EventReasoningDelta) {
				fn(e.Event)
			}
		})
		if ctx.Err() != nil {
			return nil
		}
		var status *StatusError
		if errors.As(err, &status) && status.Code < 500 {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// StatusError is an answer other than 200 to a stream's request.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the service API answered %d: %s", e.Code, strings.TrimSpace(e.Body))
}

// Follow streams a session's events after cursor after (an event's id,
// or "now": only what comes from now on), handing each to fn, until the
// stream or ctx ends.
func (l *Local) Follow(ctx context.Context, sessionID, after string, fn func(Event)) error {
	req, err := http.NewRequestWithContext(ctx, "GET", l.URL+"/v1/sessions/"+url.PathEscape(sessionID)+"/events?after="+url.QueryEscape(after), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+l.Token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := l.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &StatusError{Code: resp.StatusCode, Body: string(b)}
	}
	return Read(resp.Body, fn)
}

// Read parses a stream of Server-Sent Events, handing fn each event
// whose data is an event of the runtime contract; comments (heartbeats)
// and the stream's own events pass unseen.
func Read(r io.Reader, fn func(Event)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var e Event
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if e.Type != "" && !strings.HasPrefix(e.Type, "stream.") {
				if err := json.Unmarshal([]byte(data.String()), &e.Event); err == nil {
					fn(e)
				}
			}
			e, data = Event{}, strings.Builder{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			e.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "event:"):
			e.Type = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return sc.Err()
}
