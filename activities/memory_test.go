package activities

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/embedded"
	"github.com/underpass-ai/axlr/workflows"
)

// downStore is a store that is down while down is set.
type downStore struct {
	kmp.Store
	down bool
}

func (d *downStore) Wake(ctx context.Context, req kmp.WakeRequest) (kmp.WakeResult, error) {
	if d.down {
		return kmp.WakeResult{}, kmp.Errorf(kmp.CodeUnavailable, "down")
	}
	return d.Store.Wake(ctx, req)
}

func (d *downStore) Write(ctx context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	if d.down {
		return kmp.WriteResult{}, kmp.Errorf(kmp.CodeUnavailable, "down")
	}
	return d.Store.Write(ctx, req)
}

func newMemory(t *testing.T) (*Memory, *downStore) {
	t.Helper()
	s, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d := &downStore{Store: s}
	return &Memory{Store: d, Sidecars: filepath.Join(t.TempDir(), "sidecar"), Log: zerolog.Nop()}, d
}

func cause(key, summary string) kmp.WriteRequest {
	return kmp.WriteRequest{About: "repo:o/r", Actor: "axlr", IdempotencyKey: key,
		Memories: []kmp.Memory{{ID: "cause", Kind: kmp.KindErrorPath, Summary: summary, Evidence: "go test exit 1"}}}
}

func TestMemoryWake(t *testing.T) {
	m, d := newMemory(t)
	ctx := context.Background()
	res, err := m.Wake(ctx, workflows.MemoryWakeInput{About: "repo:o/r", Intent: "TestParse", MaxBytes: 2048})
	if err != nil || res.Text != "" || res.Refs != nil || res.Note != "" {
		t.Fatalf("wake of an empty memory: %+v, %v; want nothing", res, err)
	}
	var refs []string
	for i, s := range []string{"TestParse panics on empty input", "TestFormat drops the sign", strings.Repeat("padding ", 100)} {
		w, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause(string(rune('a'+i)), s)})
		if err != nil || w.Refs["cause"] == "" {
			t.Fatalf("write: %+v, %v", w, err)
		}
		refs = append(refs, w.Refs["cause"])
	}
	res, err = m.Wake(ctx, workflows.MemoryWakeInput{About: "repo:o/r", Intent: "TestParse panics", MaxBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(res.Text, "\n")
	if head != "[AXLR · memory] What memory holds about repo:o/r for this work, each line after its ref:" || len(body) > 600 {
		t.Fatalf("recall %q (%d bytes of lines)", res.Text, len(body))
	}
	if !strings.HasPrefix(body, refs[0]+" TestParse panics on empty input") || len(res.Refs) == 0 || res.Refs[0] != refs[0] {
		t.Fatalf("recall %q refs %v, want %s first", body, res.Refs, refs[0])
	}
	d.down = true
	res, err = m.Wake(ctx, workflows.MemoryWakeInput{About: "repo:o/r", Intent: "x", MaxBytes: 2048})
	if err != nil || res.Text != "" || res.Note != "memory not recalled: unavailable: down" {
		t.Fatalf("wake of a memory that is down: %+v, %v", res, err)
	}
}

// A write the memory does not take waits in the session's sidecar; the
// next write, and a flush, write it with its key; a refused one is
// reported and never kept.
func TestMemorySidecar(t *testing.T) {
	m, d := newMemory(t)
	ctx := context.Background()
	d.down = true
	for _, key := range []string{"k1", "k1", "k2"} { // k1 twice: a retried activity
		res, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause(key, "cause "+key)})
		if err != nil || !res.Pending {
			t.Fatalf("write while down: %+v, %v", res, err)
		}
	}
	waiting, err := readSidecar(filepath.Join(m.Sidecars, "s1.json"))
	if err != nil || len(waiting) != 2 {
		t.Fatalf("sidecar %+v, %v; want k1 and k2", waiting, err)
	}
	res, err := m.Flush(ctx, workflows.MemoryFlushInput{SessionID: "s1"})
	if err != nil || res != (workflows.MemoryFlushResult{Waiting: 2}) {
		t.Fatalf("flush while down: %+v, %v", res, err)
	}
	d.down = false
	w, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause("k3", "cause k3")})
	if err != nil || w.Status != kmp.StatusCommitted {
		t.Fatalf("write once back: %+v, %v", w, err)
	}
	if _, err := os.Stat(filepath.Join(m.Sidecars, "s1.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sidecar is still there (%v)", err)
	}
	l, err := d.List(ctx, kmp.ListRequest{About: "repo:o/r"})
	if err != nil || len(l.Entries) != 3 || l.Entries[0].Text != "cause k3" || l.Entries[2].Text != "cause k1" {
		t.Fatalf("memory after the flush: %+v, %v", l.Entries, err)
	}
	bad := cause("k4", "x")
	bad.Memories[0].Kind = "gossip"
	r, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: bad})
	if err != nil || r.Pending || !strings.HasPrefix(r.Refused, "invalid_argument: memories[0].kind") {
		t.Fatalf("a refused write: %+v, %v", r, err)
	}
	// Past MaxSidecar the oldest is dropped.
	d.down = true
	for i := range MaxSidecar + 2 {
		if _, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s2", Request: cause("m"+string(rune('A'+i)), "c")}); err != nil {
			t.Fatal(err)
		}
	}
	waiting, _ = readSidecar(filepath.Join(m.Sidecars, "s2.json"))
	if len(waiting) != MaxSidecar || waiting[0].IdempotencyKey != "mC" {
		t.Fatalf("sidecar holds %d, first %s; want %d from mC", len(waiting), waiting[0].IdempotencyKey, MaxSidecar)
	}
	d.down = false
	all, err := m.FlushAll(ctx)
	if err != nil || all.Written != MaxSidecar || all.Waiting != 0 {
		t.Fatalf("flush all: %+v, %v", all, err)
	}
	if _, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "../x", Request: cause("k9", "c")}); err == nil {
		t.Fatal("a session id that is a path was taken")
	}
}

// A write whose links the memory refuses is written without them, and the
// refusal is reported.
func TestMemoryLinksRefused(t *testing.T) {
	m, _ := newMemory(t)
	req := cause("k1", "the cause")
	req.Memories[0].ConnectTo = []kmp.Link{{Ref: "kmp:entry:0000000000000000", Rel: "supports", Why: "w", Evidence: "e"}}
	res, err := m.Write(context.Background(), workflows.MemoryWriteInput{SessionID: "s1", Request: req})
	if err != nil || res.Refs["cause"] == "" || !strings.Contains(res.LinksRefused, "unknown ref") {
		t.Fatalf("write with an unknown link: %+v, %v", res, err)
	}
}

func TestMemoryRead(t *testing.T) {
	m, d := newMemory(t)
	ctx := context.Background()
	w, _ := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause("k1", "TestParse panics")})
	res, err := m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryWake, About: "repo:o/r", Intent: "TestParse"})
	if err != nil || res.Wake == nil || res.Wake.Wake.Refs()[0] != w.Refs["cause"] {
		t.Fatalf("wake read: %+v, %v", res, err)
	}
	res, err = m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryShow, Ref: w.Refs["cause"]})
	if err != nil || res.Show == nil || res.Show.Object.Text != "TestParse panics" {
		t.Fatalf("show read: %+v, %v", res, err)
	}
	_, err = m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryList, About: "repo:x/y"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || app.Message() != "not_found: no memory about repo:x/y" {
		t.Fatalf("list of an unknown about: %v", err)
	}
	d.down = true
	if _, err := m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryWake, About: "repo:o/r"}); kmp.CodeOf(err) != kmp.CodeUnavailable {
		t.Fatalf("read while down: %v, want it retryable", err)
	}
}
