// Package kmptest holds the conformance suite every kmp.Store passes: the
// embedded store directly, and kmp-mcp's tools as served by the in-test
// MCP server (NewServer, Serve) and read back by the MCP client. It speaks
// only through kmp.Store and checks each outcome's shape and error code,
// not the engines' wording.
//
// Persistence is engine-specific and not part of the suite.
package kmptest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/kmp"
)

// Factory returns a fresh, empty store for one test, registering its
// cleanup with t.Cleanup.
type Factory func(t *testing.T) kmp.Store

// Run runs the suite, one subtest per behaviour, each on a fresh store.
func Run(t *testing.T, newStore Factory) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, kmp.Store)
	}{
		{"empty_about_is_not_found", testEmpty},
		{"write_then_wake", testWriteWake},
		{"wake_ranks_by_terms", testRanking},
		{"wake_follows_relations", testRelated},
		{"wake_budget", testBudget},
		{"idempotent_replay_and_conflict", testIdempotency},
		{"dry_run_writes_nothing", testDryRun},
		{"invalid_writes", testInvalid},
		{"connect_to_and_relations", testLinks},
		{"inspect", testInspect},
		{"ask", testAsk},
		{"list", testList},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newStore(t)) })
	}
}

var ctx = context.Background()

// mem is a memory with evidence.
func mem(id, kind, summary string) kmp.Memory {
	return kmp.Memory{ID: id, Kind: kind, Summary: summary, Evidence: "evidence of " + id}
}

// write writes memories under about with key and fails the test on error.
func write(t *testing.T, s kmp.Store, about, key string, ms ...kmp.Memory) kmp.WriteResult {
	t.Helper()
	res, err := s.Write(ctx, kmp.WriteRequest{About: about, Actor: "axlr", IdempotencyKey: key, Memories: ms})
	if err != nil {
		t.Fatalf("write %s under %s: %v", key, about, err)
	}
	if !res.Accepted || res.Status != kmp.StatusCommitted {
		t.Fatalf("write %s: accepted %v status %q, want a commit", key, res.Accepted, res.Status)
	}
	for _, m := range ms {
		if res.LocalRefs[m.ID] == "" || !strings.Contains(res.LocalRefs[m.ID], ":entry:") {
			t.Fatalf("write %s: local ref of %s is %q, want one holding :entry:", key, m.ID, res.LocalRefs[m.ID])
		}
	}
	return res
}

// code checks err's code.
func code(t *testing.T, err error, want kmp.Code, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, want)
	}
	var ke *kmp.Error
	if !errors.As(err, &ke) {
		t.Fatalf("%s: %v (%T), want a *kmp.Error", what, err, err)
	}
	if ke.Code != want {
		t.Fatalf("%s: code %s (%s), want %s", what, ke.Code, ke.Message, want)
	}
}

func wake(t *testing.T, s kmp.Store, about, intent string, maxBytes int) kmp.WakeResult {
	t.Helper()
	req := kmp.WakeRequest{About: about, Intent: intent}
	if maxBytes > 0 {
		req.Budget = &kmp.Budget{MaxBytes: maxBytes}
	}
	res, err := s.Wake(ctx, req)
	if err != nil {
		t.Fatalf("wake %s for %q: %v", about, intent, err)
	}
	return res
}

func testEmpty(t *testing.T, s kmp.Store) {
	_, err := s.Wake(ctx, kmp.WakeRequest{About: "ws:nobody", Intent: "anything"})
	code(t, err, kmp.CodeNotFound, "wake of an about with no memory")
	if !kmp.Empty("ws:nobody", err) {
		t.Fatalf("kmp.Empty(ws:nobody, %v) = false", err)
	}
	_, err = s.List(ctx, kmp.ListRequest{About: "repo:a/b"})
	code(t, err, kmp.CodeNotFound, "list of an about with no memory")
	_, err = s.Wake(ctx, kmp.WakeRequest{Intent: "x"})
	code(t, err, kmp.CodeInvalid, "wake without about")
}

func testWriteWake(t *testing.T, s kmp.Store) {
	res := write(t, s, "repo:acme/calc", "k1", kmp.Memory{ID: "cause", Kind: kmp.KindErrorPath,
		Summary:  "TestParse fails on an empty string because Parse indexes s[0] without a length check",
		Evidence: "go test ./calc exit 1\n--- FAIL: TestParse (0.00s) index out of range"})
	ref := res.LocalRefs["cause"]
	w := wake(t, s, "repo:acme/calc", "TestParse panics with index out of range", 0)
	if w.Wake.Objective != "TestParse panics with index out of range" {
		t.Fatalf("objective %q, want the intent", w.Wake.Objective)
	}
	if len(w.Wake.CausalSpine) != 1 || w.Wake.CausalSpine[0].EvidenceRef != ref ||
		!strings.Contains(w.Wake.CausalSpine[0].Claim, "Parse indexes s[0]") {
		t.Fatalf("causal spine %+v, want the error path %s", w.Wake.CausalSpine, ref)
	}
	if got := w.Wake.Refs(); !slices.Equal(got, []string{ref}) {
		t.Fatalf("wake refs %v, want [%s]", got, ref)
	}
	if w.Projection.Budget.UsedBytes <= 0 || w.Projection.Budget.UsedBytes > w.Projection.Budget.MaxBytes {
		t.Fatalf("projection budget %+v", w.Projection.Budget)
	}
	if w.Projection.Page.Returned != 1 || w.Projection.Page.HasMore {
		t.Fatalf("page %+v, want one returned, none more", w.Projection.Page)
	}
	if !slices.Contains(w.Proof.MatchedTerms, "testparse") {
		t.Fatalf("matched terms %v, want testparse", w.Proof.MatchedTerms)
	}
	write(t, s, "repo:acme/calc", "k2", kmp.Memory{ID: "rule", Kind: kmp.KindConstraint, Summary: "never edit vendor/", Evidence: "README"})
	w = wake(t, s, "repo:acme/calc", "", 0)
	if len(w.Wake.Guardrails) != 1 || kmp.RefOf(w.Wake.Guardrails[0]) == "" || !strings.Contains(w.Wake.Guardrails[0], "never edit vendor/") {
		t.Fatalf("guardrails %v, want the constraint with its ref", w.Wake.Guardrails)
	}
}

func testRanking(t *testing.T, s kmp.Store) {
	write(t, s, "repo:acme/calc", "a1", mem("m1", kmp.KindObservation, "the divide function rounds toward zero"))
	write(t, s, "repo:acme/calc", "a2", mem("m2", kmp.KindObservation, "TestFormat checks thousands separators"))
	write(t, s, "repo:acme/calc", "a3", mem("m3", kmp.KindObservation, "the build uses go 1.26"))
	write(t, s, "repo:other/x", "b1", mem("m4", kmp.KindObservation, "TestFormat in other repository"))
	w := wake(t, s, "repo:acme/calc", "why does TestFormat fail on separators", 0)
	lines := w.Wake.Lines()
	if len(lines) != 3 {
		t.Fatalf("wake lines %q, want the three memories of acme/calc", lines)
	}
	if !strings.Contains(lines[0], "TestFormat checks thousands separators") {
		t.Fatalf("first line %q, want the one matching the intent's terms", lines[0])
	}
	for _, l := range lines {
		if strings.Contains(l, "other repository") {
			t.Fatalf("wake of acme/calc shows another about's memory: %q", l)
		}
	}
	// Without matching terms, the newest comes first.
	w = wake(t, s, "repo:acme/calc", "unrelated words entirely", 0)
	if lines = w.Wake.Lines(); len(lines) == 0 || !strings.Contains(lines[0], "go 1.26") {
		t.Fatalf("wake without matches %q, want the newest first", lines)
	}
}

func testRelated(t *testing.T, s kmp.Store) {
	res := write(t, s, "repo:acme/calc", "c1", mem("cause", kmp.KindErrorPath, "overflow in multiply for large operands"))
	cause := res.LocalRefs["cause"]
	fix := write(t, s, "repo:acme/calc", "c2", kmp.Memory{ID: "fix", Kind: kmp.KindSuccessPath, Summary: "pull request 7 merged as abc123",
		Evidence: "merge abc123", ConnectTo: []kmp.Link{{Ref: cause, Rel: "verified_by", Why: "the fix of that cause", Evidence: "PR 7"}}}).LocalRefs["fix"]
	for i := range 8 {
		write(t, s, "repo:acme/calc", fmt.Sprintf("n%d", i), mem(fmt.Sprintf("n%d", i), kmp.KindObservation, fmt.Sprintf("note number %d on formatting", i)))
	}
	w := wake(t, s, "repo:acme/calc", "multiply overflow", 0)
	if len(w.Wake.CausalSpine) != 1 || w.Wake.CausalSpine[0].EvidenceRef != cause {
		t.Fatalf("causal spine %+v, want the matching cause %s", w.Wake.CausalSpine, cause)
	}
	// Each section is ranked: the success path related to the cause
	// comes before newer notes that match nothing.
	if st := w.Wake.CurrentState; len(st) == 0 || kmp.RefOf(st[0]) != fix {
		t.Fatalf("current state %q, want %s first", st, fix)
	}
}

func testBudget(t *testing.T, s kmp.Store) {
	for i := range 40 {
		write(t, s, "ws:budget", fmt.Sprintf("b%d", i), mem("m", kmp.KindObservation, fmt.Sprintf("observation %d: %s", i, strings.Repeat("padding ", 8))))
	}
	w := wake(t, s, "ws:budget", "observation", kmp.MinBudgetBytes)
	total := 0
	for _, l := range w.Wake.Lines() {
		total += len(l)
	}
	if total > kmp.MinBudgetBytes || len(w.Wake.Lines()) == 0 {
		t.Fatalf("wake within %d bytes holds %d lines of %d bytes", kmp.MinBudgetBytes, len(w.Wake.Lines()), total)
	}
	if !w.Projection.Page.HasMore || w.Projection.Page.Total <= w.Projection.Page.Returned {
		t.Fatalf("page %+v, want more left out", w.Projection.Page)
	}
	_, err := s.Wake(ctx, kmp.WakeRequest{About: "ws:budget", Budget: &kmp.Budget{MaxBytes: kmp.MinBudgetBytes - 1}})
	code(t, err, kmp.CodeInvalid, "a budget under the minimum")
}

func testIdempotency(t *testing.T, s kmp.Store) {
	m := mem("cause", kmp.KindErrorPath, "the same cause")
	first := write(t, s, "repo:acme/calc", "wf:diagnose:1", m)
	again, err := s.Write(ctx, kmp.WriteRequest{About: "repo:acme/calc", Actor: "axlr", IdempotencyKey: "wf:diagnose:1", Memories: []kmp.Memory{m}})
	if err != nil {
		t.Fatalf("the same write again: %v", err)
	}
	if again.Status != kmp.StatusReplayed || !again.Accepted || again.LocalRefs["cause"] != first.LocalRefs["cause"] {
		t.Fatalf("the same write again: status %q accepted %v refs %v, want replayed with %v", again.Status, again.Accepted, again.LocalRefs, first.LocalRefs)
	}
	l, err := s.List(ctx, kmp.ListRequest{About: "repo:acme/calc"})
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("after a replay: %d entries (%v), want 1", len(l.Entries), err)
	}
	m.Summary = "another cause"
	_, err = s.Write(ctx, kmp.WriteRequest{About: "repo:acme/calc", Actor: "axlr", IdempotencyKey: "wf:diagnose:1", Memories: []kmp.Memory{m}})
	code(t, err, kmp.CodeConflict, "the same key with other content")
}

func testDryRun(t *testing.T, s kmp.Store) {
	res, err := s.Write(ctx, kmp.WriteRequest{About: "ws:dry", Actor: "axlr", IdempotencyKey: "d1",
		Memories: []kmp.Memory{mem("m", kmp.KindObservation, "only checked")}, Options: &kmp.WriteOptions{DryRun: true}})
	if err != nil || res.Accepted || res.Status != kmp.StatusValidated {
		t.Fatalf("dry run: %+v, %v; want validated, not accepted", res, err)
	}
	_, err = s.Wake(ctx, kmp.WakeRequest{About: "ws:dry"})
	code(t, err, kmp.CodeNotFound, "wake after a dry run")
	write(t, s, "ws:dry", "d1", mem("m", kmp.KindObservation, "only checked"))
}

func testInvalid(t *testing.T, s kmp.Store) {
	good := func() kmp.WriteRequest {
		return kmp.WriteRequest{About: "repo:acme/calc", Actor: "axlr", IdempotencyKey: "i", Memories: []kmp.Memory{mem("m", kmp.KindObservation, "s")}}
	}
	off := false
	for _, c := range []struct {
		name   string
		change func(*kmp.WriteRequest)
	}{
		{"no about", func(r *kmp.WriteRequest) { r.About = "" }},
		{"no actor", func(r *kmp.WriteRequest) { r.Actor = "" }},
		{"neither memories nor relations", func(r *kmp.WriteRequest) { r.Memories = nil }},
		{"both memories and relations", func(r *kmp.WriteRequest) {
			r.Relations = []kmp.Relation{{From: "a", To: "b", Rel: "supports", Why: "w", Evidence: "e"}}
		}},
		{"bad id", func(r *kmp.WriteRequest) { r.Memories[0].ID = "1x" }},
		{"duplicate id", func(r *kmp.WriteRequest) { r.Memories = append(r.Memories, r.Memories[0]) }},
		{"unknown kind", func(r *kmp.WriteRequest) { r.Memories[0].Kind = "gossip" }},
		{"no summary", func(r *kmp.WriteRequest) { r.Memories[0].Summary = " " }},
		{"no evidence", func(r *kmp.WriteRequest) { r.Memories[0].Evidence = "" }},
		{"unknown rel", func(r *kmp.WriteRequest) {
			r.Memories[0].ConnectTo = []kmp.Link{{Ref: "kmp:entry:0", Rel: "likes", Why: "w", Evidence: "e"}}
		}},
		{"rich rel without why", func(r *kmp.WriteRequest) {
			r.Memories[0].ConnectTo = []kmp.Link{{Ref: "kmp:entry:0", Rel: "supports", Evidence: "e"}}
		}},
		{"unknown connect_to ref", func(r *kmp.WriteRequest) {
			r.Memories[0].ConnectTo = []kmp.Link{{Ref: "kmp:entry:0000000000000000", Rel: "supports", Why: "w", Evidence: "e"}}
		}},
		{"empty label value", func(r *kmp.WriteRequest) { r.Labels = map[string][]string{"job": {""}} }},
	} {
		req := good()
		c.change(&req)
		_, err := s.Write(ctx, req)
		code(t, err, kmp.CodeInvalid, c.name)
	}
	req := good()
	req.Memories[0].Evidence = ""
	req.Options = &kmp.WriteOptions{Strict: &off}
	if _, err := s.Write(ctx, req); err != nil {
		t.Fatalf("no evidence with strict false: %v", err)
	}
}

func testLinks(t *testing.T, s kmp.Store) {
	a := write(t, s, "repo:acme/calc", "l1", mem("a", kmp.KindErrorPath, "cause a")).LocalRefs["a"]
	other := write(t, s, "repo:other/x", "l2", mem("o", kmp.KindObservation, "elsewhere")).LocalRefs["o"]
	res := write(t, s, "repo:acme/calc", "l3",
		kmp.Memory{ID: "b", Kind: kmp.KindSuccessPath, Summary: "fixed a", Evidence: "PR 1",
			ConnectTo: []kmp.Link{{Ref: a, Rel: "verified_by", Why: "fixes it", Evidence: "PR 1"}, {Ref: "@c", Rel: "contains"}}},
		mem("c", kmp.KindObservation, "detail of the fix"))
	b, c := res.LocalRefs["b"], res.LocalRefs["c"]
	want := []kmp.RelationRef{{From: b, Rel: "verified_by", To: a}, {From: b, Rel: "contains", To: c}}
	if !slices.Equal(res.Relations, want) {
		t.Fatalf("relations %+v, want %+v", res.Relations, want)
	}
	_, err := s.Write(ctx, kmp.WriteRequest{About: "repo:acme/calc", Actor: "axlr", IdempotencyKey: "l4",
		Memories: []kmp.Memory{{ID: "x", Kind: kmp.KindObservation, Summary: "s", Evidence: "e",
			ConnectTo: []kmp.Link{{Ref: other, Rel: "supports", Why: "w", Evidence: "e"}}}}})
	code(t, err, kmp.CodeInvalid, "a link to another about's entry")
	rel, err := s.Write(ctx, kmp.WriteRequest{About: "repo:acme/calc", Actor: "axlr", IdempotencyKey: "l5",
		Relations: []kmp.Relation{{From: c, To: a, Rel: "supports", Why: "the detail explains the cause", Evidence: "diff"}}})
	if err != nil || !rel.Accepted || len(rel.Relations) != 1 || rel.Relations[0] != (kmp.RelationRef{From: c, Rel: "supports", To: a}) {
		t.Fatalf("relations write: %+v, %v", rel, err)
	}
	in, err := s.Inspect(ctx, kmp.InspectRequest{About: "repo:acme/calc", Ref: a})
	if err != nil {
		t.Fatalf("inspect %s: %v", a, err)
	}
	if len(in.Links.Incoming) != 2 || len(in.Links.Outgoing) != 0 {
		t.Fatalf("links of %s: %+v, want two incoming", a, in.Links)
	}
}

func testInspect(t *testing.T, s kmp.Store) {
	s2, err := s.Write(ctx, kmp.WriteRequest{About: "repo:acme/calc", Actor: "axlr", IdempotencyKey: "x1",
		Labels:   map[string][]string{"job": {"repair-1"}, "ceremony": {"repair"}},
		Memories: []kmp.Memory{{ID: "m", Kind: kmp.KindSuccessPath, Summary: "merged", Evidence: "merge 123", Labels: map[string][]string{"pull_request": {"7"}}}}})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if want := []string{"ceremony=repair", "job=repair-1", "pull_request=7"}; !slices.Equal(s2.Labels.Written, want) {
		t.Fatalf("labels written %v, want %v", s2.Labels.Written, want)
	}
	ref := s2.LocalRefs["m"]
	in, err := s.Inspect(ctx, kmp.InspectRequest{About: "repo:acme/calc", Ref: ref})
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if in.Object.Ref != ref || in.Object.Kind != kmp.KindSuccessPath || in.Object.Text != "merged" ||
		!slices.Equal(in.Evidence, []string{"merge 123"}) || in.Object.Metadata["actor"] != "axlr" {
		t.Fatalf("inspect %s: %+v", ref, in)
	}
	_, err = s.Inspect(ctx, kmp.InspectRequest{About: "repo:acme/calc", Ref: "kmp:entry:ffffffffffffffff"})
	code(t, err, kmp.CodeNotFound, "inspect of an unknown ref")
	_, err = s.Inspect(ctx, kmp.InspectRequest{About: "repo:other/x", Ref: ref})
	code(t, err, kmp.CodeNotFound, "inspect under another about")
}

func testAsk(t *testing.T, s kmp.Store) {
	ref := write(t, s, "repo:acme/calc", "q1", mem("m", kmp.KindDecision, "the calculator rounds half to even")).LocalRefs["m"]
	a, err := s.Ask(ctx, kmp.AskRequest{About: "repo:acme/calc", Question: "how does the calculator round?"})
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	if a.Answer != "the calculator rounds half to even" || len(a.Because) == 0 || a.Because[0].Ref != ref {
		t.Fatalf("answer %+v, want the decision with its ref", a)
	}
	a, err = s.Ask(ctx, kmp.AskRequest{About: "repo:acme/calc", Question: "which database holds invoices?"})
	if err != nil || a.Answer != kmp.Unknown {
		t.Fatalf("ask with no match: %+v, %v; want UNKNOWN", a, err)
	}
	_, err = s.Ask(ctx, kmp.AskRequest{About: "repo:acme/calc"})
	code(t, err, kmp.CodeInvalid, "ask without a question")
}

func testList(t *testing.T, s kmp.Store) {
	var refs []string
	for i, k := range []string{kmp.KindErrorPath, kmp.KindObservation, kmp.KindErrorPath, kmp.KindSuccessPath} {
		refs = append(refs, write(t, s, "repo:acme/calc", fmt.Sprintf("s%d", i), mem("m", k, fmt.Sprintf("memory %d", i))).LocalRefs["m"])
	}
	l, err := s.List(ctx, kmp.ListRequest{About: "repo:acme/calc"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var got []string
	for _, e := range l.Entries {
		got = append(got, e.Ref)
	}
	if want := []string{refs[3], refs[2], refs[1], refs[0]}; !slices.Equal(got, want) {
		t.Fatalf("list %v, want newest first %v", got, want)
	}
	l, err = s.List(ctx, kmp.ListRequest{About: "repo:acme/calc", Kind: kmp.KindErrorPath, Limit: 1})
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Ref != refs[2] || l.Entries[0].Kind != kmp.KindErrorPath {
		t.Fatalf("list error paths, limit 1: %+v, %v; want %s", l.Entries, err, refs[2])
	}
	_, err = s.List(ctx, kmp.ListRequest{About: "repo:acme/calc", Kind: "gossip"})
	code(t, err, kmp.CodeInvalid, "list of an unknown kind")
	_, err = s.List(ctx, kmp.ListRequest{About: "repo:acme/calc", Limit: kmp.MaxListLimit + 1})
	code(t, err, kmp.CodeInvalid, "a limit over the maximum")
}
