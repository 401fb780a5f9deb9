package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// MaxSidecar bounds what waits in a session's sidecar: past it, the
// oldest write is dropped (and logged).
const MaxSidecar = 50

// Memory runs memory's activities over a kmp.Store. Writes the store does
// not take (it is down or failing) wait in a sidecar per session,
// <Sidecars>/<session id>.json, and are written again, with their own
// keys, before the session's next write, at a flush (a turn's end, a
// job's end, a close) and when axlrd starts.
type Memory struct {
	Store    kmp.Store
	Sidecars string
	// Sessions is the session store a turn's entry is read from.
	Sessions *session.Store
	Log      zerolog.Logger

	mu sync.Mutex // the sidecars
}

// Wake recalls what memory holds about an about for an intent, as the
// lines a first step's message carries, cut to MaxBytes. It never fails:
// a memory that is down or refuses is logged and noted, and an about with
// no memory yet recalls nothing.
func (m *Memory) Wake(ctx context.Context, in workflows.MemoryWakeInput) (workflows.MemoryWakeResult, error) {
	res, err := m.Store.Wake(ctx, kmp.WakeRequest{About: in.About, Intent: jobs.Bound(in.Intent, 600),
		Budget: &kmp.Budget{MaxBytes: max(in.MaxBytes, kmp.MinBudgetBytes)}})
	switch {
	case kmp.CodeOf(err) == kmp.CodeNotFound:
		return workflows.MemoryWakeResult{}, nil
	case err != nil:
		m.Log.Warn().Str("about", in.About).Err(err).Msg("memory wake failed; the work goes on without it")
		return workflows.MemoryWakeResult{Note: "memory not recalled: " + err.Error()}, nil
	}
	var lines []string
	used := 0
	for _, l := range res.Wake.Lines() {
		if used+len(l)+1 > in.MaxBytes {
			break
		}
		used += len(l) + 1
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return workflows.MemoryWakeResult{}, nil
	}
	out := workflows.MemoryWakeResult{Text: fmt.Sprintf("[AXLR · memory] What memory holds about %s for this work, each line after its ref:\n%s",
		in.About, strings.Join(lines, "\n"))}
	out.Refs = kmp.Wake{CurrentState: lines}.Refs()
	return out, nil
}

// Write writes memories. It first writes what waits in the session's
// sidecar. A write the memory refuses is reported, not retried; one whose
// links are refused is written again without them; one the memory does
// not take (down, failing) waits in the sidecar.
func (m *Memory) Write(ctx context.Context, in workflows.MemoryWriteInput) (workflows.MemoryWriteResult, error) {
	if _, err := m.flush(ctx, in.SessionID); err != nil {
		return workflows.MemoryWriteResult{}, err
	}
	res, err := m.Store.Write(ctx, in.Request)
	if err != nil && memoryRefused(err) && hasLinks(in.Request) {
		linksRefused := err
		res, err = m.Store.Write(ctx, withoutLinks(in.Request))
		if err == nil {
			return workflows.MemoryWriteResult{Refs: res.LocalRefs, Status: res.Status, LinksRefused: linksRefused.Error()}, nil
		}
	}
	switch {
	case err == nil:
		return workflows.MemoryWriteResult{Refs: res.LocalRefs, Status: res.Status}, nil
	case memoryRefused(err):
		m.Log.Warn().Str("key", in.Request.IdempotencyKey).Err(err).Msg("memory refused a write")
		return workflows.MemoryWriteResult{Refused: err.Error()}, nil
	}
	m.Log.Warn().Str("key", in.Request.IdempotencyKey).Err(err).Msg("memory did not take a write; it waits in the sidecar")
	if err := m.keep(in.SessionID, in.Request); err != nil {
		return workflows.MemoryWriteResult{}, err
	}
	return workflows.MemoryWriteResult{Pending: true}, nil
}

// RecordTurn records a turn's entry (workflows.RecordTurnInput): its
// actions, one evidence line each, under its key; nothing for a turn that
// only read.
func (m *Memory) RecordTurn(ctx context.Context, in workflows.RecordTurnInput) (workflows.RecordTurnResult, error) {
	var logs []*session.Log
	for _, id := range in.Sessions {
		log, err := openLog(m.Sessions, id)
		if err != nil {
			return workflows.RecordTurnResult{}, err
		}
		logs = append(logs, log)
	}
	f, err := readTurn(logs, in.ExecutionID)
	if err != nil {
		return workflows.RecordTurnResult{}, err
	}
	res := workflows.RecordTurnResult{Actions: len(f.Actions), Reads: f.Reads}
	if !f.SideEffects() {
		// Even a turn that only read writes what waits from earlier ones.
		_, err := m.flush(ctx, in.SessionID)
		return res, err
	}
	var ev []string
	for _, a := range f.Actions {
		ev = append(ev, a.Evidence())
	}
	if f.Reads > 0 {
		ev = append(ev, fmt.Sprintf("read %d times", f.Reads))
	}
	if in.Step != "" {
		ev = append(ev, "MADE step "+in.Step)
	}
	summary := fmt.Sprintf("turn %d in %s mode: %s", in.Turn, cmp.Or(in.Mode, "normal"), f.Summary())
	w, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: in.SessionID, Request: kmp.WriteRequest{
		About: in.About, Actor: "axlr", SourceKind: "projection", Labels: in.Labels, IdempotencyKey: in.Key,
		Memories: []kmp.Memory{{ID: "turn", Kind: kmp.KindTurn, Summary: summary, Evidence: strings.Join(ev, "\n")}}}})
	if err != nil {
		return res, err
	}
	res.MemoryWriteResult = w
	return res, nil
}

// Flush writes what waits in a session's sidecar.
func (m *Memory) Flush(ctx context.Context, in workflows.MemoryFlushInput) (workflows.MemoryFlushResult, error) {
	return m.flush(ctx, in.SessionID)
}

// FlushAll writes what waits in every sidecar (axlrd's start). It
// returns how many writes landed and how many still wait.
func (m *Memory) FlushAll(ctx context.Context) (workflows.MemoryFlushResult, error) {
	files, err := filepath.Glob(filepath.Join(m.Sidecars, "*.json"))
	if err != nil {
		return workflows.MemoryFlushResult{}, fmt.Errorf("list the memory sidecars: %w", err)
	}
	var total workflows.MemoryFlushResult
	for _, f := range files {
		r, err := m.flush(ctx, strings.TrimSuffix(filepath.Base(f), ".json"))
		if err != nil {
			return total, err
		}
		total.Written += r.Written
		total.Waiting += r.Waiting
	}
	return total, nil
}

// Read runs an operator's read. The memory's refusal (no such about or
// ref, a bad argument) is a BadRequest with its words; a memory that is
// down can be retried.
func (m *Memory) Read(ctx context.Context, in workflows.MemoryReadInput) (workflows.MemoryReadResult, error) {
	var res workflows.MemoryReadResult
	var err error
	switch in.Op {
	case workflows.MemoryWake:
		var w kmp.WakeResult
		w, err = m.Store.Wake(ctx, kmp.WakeRequest{About: in.About, Intent: in.Intent, Budget: &kmp.Budget{MaxBytes: in.MaxBytes}})
		res.Wake = &w
	case workflows.MemoryList:
		var l kmp.ListResult
		l, err = m.Store.List(ctx, kmp.ListRequest{About: in.About, Kind: in.Kind, Limit: in.Limit})
		res.List = &l
	case workflows.MemoryShow:
		var s kmp.InspectResult
		s, err = m.Store.Inspect(ctx, kmp.InspectRequest{About: in.About, Ref: in.Ref})
		res.Show = &s
	default:
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("unknown memory read %q: wake, list or show", in.Op), workflows.ErrTypeBadRequest, nil)
	}
	if err != nil {
		if kmp.Retryable(err) {
			return workflows.MemoryReadResult{}, err
		}
		return workflows.MemoryReadResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeBadRequest, nil)
	}
	return res, nil
}

// memoryRefused reports whether the memory refused a write for what it holds
// (a retry cannot help): invalid arguments, a key reused with other
// content, a tool it does not have.
func memoryRefused(err error) bool {
	switch kmp.CodeOf(err) {
	case kmp.CodeInvalid, kmp.CodeConflict, kmp.CodeUnknownTool, kmp.CodeNotFound:
		return true
	}
	return false
}

func hasLinks(req kmp.WriteRequest) bool {
	for _, mem := range req.Memories {
		if len(mem.ConnectTo) > 0 {
			return true
		}
	}
	return false
}

func withoutLinks(req kmp.WriteRequest) kmp.WriteRequest {
	ms := make([]kmp.Memory, len(req.Memories))
	for i, mem := range req.Memories {
		mem.ConnectTo = nil
		ms[i] = mem
	}
	req.Memories = ms
	return req
}

// sidecar is a session's sidecar file.
func (m *Memory) sidecar(session string) (string, error) {
	if session == "" || strings.ContainsAny(session, `/\`) || session == "." || session == ".." {
		return "", fmt.Errorf("memory sidecar: session id %q is not a file name", session)
	}
	return filepath.Join(m.Sidecars, session+".json"), nil
}

// flush writes what waits in the session's sidecar, in order, until the
// memory fails to take one; refused writes are dropped (logged).
func (m *Memory) flush(ctx context.Context, session string) (workflows.MemoryFlushResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	path, err := m.sidecar(session)
	if err != nil {
		return workflows.MemoryFlushResult{}, err
	}
	waiting, err := readSidecar(path)
	if err != nil || len(waiting) == 0 {
		return workflows.MemoryFlushResult{}, err
	}
	var res workflows.MemoryFlushResult
	i := 0
	for ; i < len(waiting); i++ {
		_, err := m.Store.Write(ctx, waiting[i])
		if err != nil && !memoryRefused(err) {
			break
		}
		if err != nil {
			m.Log.Warn().Str("key", waiting[i].IdempotencyKey).Err(err).Msg("memory refused a write from the sidecar; dropped")
			continue
		}
		res.Written++
	}
	rest := waiting[i:]
	res.Waiting = len(rest)
	if res.Written > 0 {
		m.Log.Info().Str("session", session).Int("written", res.Written).Int("waiting", res.Waiting).Msg("memory sidecar written")
	}
	return res, writeSidecar(path, rest)
}

// keep adds a write to the session's sidecar, dropping the oldest past
// MaxSidecar.
func (m *Memory) keep(session string, req kmp.WriteRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	path, err := m.sidecar(session)
	if err != nil {
		return err
	}
	waiting, err := readSidecar(path)
	if err != nil {
		return err
	}
	for _, w := range waiting {
		if w.IdempotencyKey != "" && w.IdempotencyKey == req.IdempotencyKey {
			return nil // a retried activity: kept already
		}
	}
	waiting = append(waiting, req)
	if over := len(waiting) - MaxSidecar; over > 0 {
		for _, w := range waiting[:over] {
			m.Log.Warn().Str("session", session).Str("key", w.IdempotencyKey).Msgf("memory sidecar holds %d writes at most: the oldest is dropped", MaxSidecar)
		}
		waiting = waiting[over:]
	}
	return writeSidecar(path, waiting)
}

func readSidecar(path string) ([]kmp.WriteRequest, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read memory sidecar %s: %w", path, err)
	}
	var out []kmp.WriteRequest
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("read memory sidecar %s: %w", path, err)
	}
	return out, nil
}

// writeSidecar replaces the sidecar (a temporary file synced and renamed
// over it); an empty one is removed.
func writeSidecar(path string, waiting []kmp.WriteRequest) error {
	if len(waiting) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove memory sidecar %s: %w", path, err)
		}
		return nil
	}
	b, err := json.Marshal(waiting)
	if err != nil {
		return fmt.Errorf("encode memory sidecar: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create memory sidecar directory: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write memory sidecar %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write memory sidecar %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync memory sidecar %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write memory sidecar %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace memory sidecar %s: %w", path, err)
	}
	return nil
}
