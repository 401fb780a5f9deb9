package ceremonies

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
	"github.com/underpass-ai/axlr/made/embedded"
)

// TestPins checks every pin against its YAML, and that every YAML has a
// pin: a definition's content changes only with a new version and a new pin.
func TestPins(t *testing.T) {
	pinned := map[string]bool{}
	for _, d := range All() {
		pinned[d.File] = true
		y, err := d.YAML()
		if err != nil {
			t.Fatal(err)
		}
		def, err := definition.Parse(y)
		if err != nil {
			t.Fatalf("%s: %v", d.File, err)
		}
		for _, f := range definition.Validate(def) {
			if f.Severity == definition.SeverityError {
				t.Errorf("%s: %s", d.File, f.Message)
			}
		}
		if def.Name != d.Name || def.Version != d.Version {
			t.Errorf("%s declares %s %s, pinned as %s %s", d.File, def.Name, def.Version, d.Name, d.Version)
		}
		if got := definition.Digest(def); got != d.Digest {
			t.Errorf("%s: digest %s, pinned %s: bump the version and pin the new digest", d.File, got, d.Digest)
		}
		for _, st := range def.Steps {
			entry, ok := StepOf(d.Name, d.Version, st.ID)
			if !ok {
				t.Errorf("%s step %s has no driver entry", d.File, st.ID)
			}
			// A model's step carries the model's prompt; a console step
			// says what AXLR does instead, and no prompt.
			p, _ := st.Config["prompt"].(string)
			c, _ := st.Config["console"].(string)
			switch {
			case entry.Console && (strings.TrimSpace(c) == "" || p != ""):
				t.Errorf("%s console step %s needs config console (what AXLR does) and no prompt", d.File, st.ID)
			case !entry.Console && (strings.TrimSpace(p) == "" || c != ""):
				t.Errorf("%s step %s needs a prompt and no config console", d.File, st.ID)
			}
		}
		if len(def.Steps) != len(stepsOf(d.Name, d.Version)) {
			t.Errorf("%s declares %d steps, the driver knows %d", d.File, len(def.Steps), len(stepsOf(d.Name, d.Version)))
		}
	}
	yamls, err := fs.Glob(files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range yamls {
		if !pinned[f] {
			t.Errorf("%s has no pin", f)
		}
	}
}

// TestStepsPinned holds the digest of each published version's steps: the
// fields, checks, outcomes and instructions the driver and the hand-back
// validation read for it. Runs in flight read them by name and version, so
// a published version's steps never change; a change is a new version (a
// new YAML, pin and entry in steps), and the old entry stays while runs of
// it may be in flight.
func TestStepsPinned(t *testing.T) {
	pins := map[string]string{
		"axlr_debug 2.0":    "e525952779caff90c14eb8cb273035d8a137eca3a74795a7b5f10247cb4e64ad",
		"axlr_delivery 2.0": "2b4e0ec0588ab109394ea062ed4f08cb48d65cc9ea0b2a3dd1a62ca3578bbf6b",
		"axlr_debug 2.1":    "e525952779caff90c14eb8cb273035d8a137eca3a74795a7b5f10247cb4e64ad",
		"axlr_delivery 2.1": "2b4e0ec0588ab109394ea062ed4f08cb48d65cc9ea0b2a3dd1a62ca3578bbf6b",
		"axlr_repair 1.0":   "5163e24e3d2cce3ef779821f7a445650ad2139839a5271a3aad693338ef2a83d",
		"axlr_improve 1.0":  "5fa73a440043832778e77f6d4dd77c09d51145b6093ee0982c35b60d0b47066d",
		"axlr_incident 1.0": "bf81196dfa49460fc63794cf6b995f77f4395fb2a6006cec03fc1ac64a5fd68a",
		"axlr_plan 1.0":     "aaa09d2326ff9da0d4145bc02a863f051bcde70e294cd78fb53cd756ebb761e1",
		"axlr_task 1.0":     "0c74fd056319f5119a0a0c2a093818354d148a42bf58e6bea8afc832b3c36b5a",
		"axlr_sync 1.0":     "5b43b14eba9c12a7e49b680edde38e8ca97fd018a28ee18a8e88088cb87e7dce",
		"axlr_session 1.0":  "8299537fd624445548579b398ee0c5076804aec45e9258fb921bbf3aa4eeeb80",
	}
	for key, list := range steps {
		b, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		got := hex.EncodeToString(sum[:])
		want, ok := pins[key]
		switch {
		case !ok:
			t.Errorf("steps of %s have no pin; add %q: %q", key, key, got)
		case got != want:
			t.Errorf("steps of %s changed: digest %s, pinned %s; publish a new version instead of changing this one", key, got, want)
		}
	}
	for key := range pins {
		if _, ok := steps[key]; !ok {
			t.Errorf("pinned steps of %s are gone: a run in flight may still read them", key)
		}
	}
}

// parsed returns a pinned definition's parsed YAML.
func parsed(t *testing.T, d Definition) *definition.Definition {
	t.Helper()
	y, err := d.YAML()
	if err != nil {
		t.Fatal(err)
	}
	def, err := definition.Parse(y)
	if err != nil {
		t.Fatalf("%s: %v", d.File, err)
	}
	return def
}

// TestGuardsReadRecordedFields checks that every output_field guard and
// every repeat reads a field its step's output carries, with a value of
// that field's type: a console step's Records; a model's step's outcome,
// settled, or a bool field the model hands back.
func TestGuardsReadRecordedFields(t *testing.T) {
	reads := func(d Definition, step, field string, value any) string {
		st, ok := StepOf(d.Name, d.Version, step)
		if !ok {
			return "no such step"
		}
		if st.Console {
			for _, r := range st.Records {
				if r.Name != field {
					continue
				}
				switch v := value.(type) {
				case bool:
					if r.Type == Bool {
						return ""
					}
				case int64:
					if r.Type == Int {
						return ""
					}
				case string:
					if r.Type == Text && (len(r.Values) == 0 || slices.Contains(r.Values, v)) {
						return ""
					}
				}
				return fmt.Sprintf("%v is not a value of the %s record %s %v", value, r.Type, field, r.Values)
			}
			return "not one of the step's records"
		}
		if _, ok := value.(bool); !ok {
			return "a model's step records only booleans the guards read"
		}
		if field == st.Outcome || field == "settled" {
			return ""
		}
		for _, f := range st.Fields {
			if f.Name == field && f.Type == Bool {
				return ""
			}
		}
		return "neither the step's outcome, settled nor one of its bool fields"
	}
	for _, d := range All() {
		def := parsed(t, d)
		for _, g := range def.Guards {
			if c := g.Condition; c.Kind == definition.GuardOutputField {
				if why := reads(d, c.Step, c.Field, c.Value); why != "" {
					t.Errorf("%s guard %s reads %s.%s: %s", d.File, g.Name, c.Step, c.Field, why)
				}
			}
		}
		for _, s := range def.Steps {
			if s.Repeat != nil {
				if why := reads(d, s.ID, s.Repeat.Until.OutputField, s.Repeat.Until.Equals); why != "" {
					t.Errorf("%s step %s repeats until %s: %s", d.File, s.ID, s.Repeat.Until.OutputField, why)
				}
			}
		}
	}
}

// TestCancelFromEveryLiveState: a definition pinned with Cancel has the
// cancel trigger from every state that is not terminal, to CANCELLED.
func TestCancelFromEveryLiveState(t *testing.T) {
	for _, d := range All() {
		def := parsed(t, d)
		for _, s := range def.States {
			if s.Kind == definition.StateTerminal {
				continue
			}
			has := slices.ContainsFunc(def.Transitions, func(tr definition.Transition) bool {
				return tr.From == s.ID && tr.Trigger == CancelTrigger && tr.To == "CANCELLED" && len(tr.Guards) == 0
			})
			if has != d.Cancel {
				t.Errorf("%s: cancel from %s is %v, pinned Cancel %v", d.File, s.ID, has, d.Cancel)
			}
		}
	}
}

// TestMergeDecision: in the jobs' definitions only the approver's role may
// fire merge_approved, which needs the person's human guard, so MADE
// records who merged; only a repair merges automatically.
func TestMergeDecision(t *testing.T) {
	tests := []struct {
		kind      string
		automatic bool
	}{{"repair", true}, {"improve", false}}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			d, ok := ForJob(tt.kind)
			if !ok {
				t.Fatalf("no job definition for %s", tt.kind)
			}
			def := parsed(t, d)
			g, ok := def.Guard(MergeApprovalGuard)
			if !ok || !g.IsHuman() {
				t.Fatalf("%s has no human guard %s", d.File, MergeApprovalGuard)
			}
			for _, tr := range def.Transitions {
				if slices.Contains(tr.Guards, MergeApprovalGuard) != (tr.Trigger == "merge_approved") {
					t.Errorf("%s: trigger %s and guard %s", d.File, tr.Trigger, MergeApprovalGuard)
				}
			}
			for _, r := range def.Roles {
				may := r.Allows(definition.RoleAction{Kind: definition.ActionTransition, Value: "merge_approved"})
				if may != (r.ID == ApproverRole) {
					t.Errorf("%s: role %s may fire merge_approved: %v", d.File, r.ID, may)
				}
				if r.ID == ApproverRole && len(r.Actions) != 1 {
					t.Errorf("%s: %s may do more than approve the merge: %v", d.File, r.ID, r.Actions)
				}
			}
			automatic := slices.ContainsFunc(def.Transitions, func(tr definition.Transition) bool { return tr.Trigger == "merge_automatic" })
			decide, _ := StepOf(d.Name, d.Version, "decide")
			offered := slices.ContainsFunc(decide.Records, func(f Field) bool {
				return f.Name == "decision" && slices.Contains(f.Values, DecisionAutomatic)
			})
			if automatic != tt.automatic || offered != tt.automatic {
				t.Errorf("%s: merge_automatic %v, decision automatic recorded %v; want %v", d.File, automatic, offered, tt.automatic)
			}
		})
	}
}

// walk drives one instance of a job's definition through the embedded
// MADE engine as the job's workflow does: claim, complete with the output,
// fire the trigger. A console step's output must hold only its Records.
type walk struct {
	t      *testing.T
	e      *embedded.Engine
	d      Definition
	id     string
	claims int
}

func newWalk(t *testing.T, kind string) *walk {
	t.Helper()
	d, ok := ForJob(kind)
	if !ok {
		t.Fatalf("no job definition for %s", kind)
	}
	return startWalk(t, d, map[string]any{d.BriefInput: "the brief", "workspace": "/clone", "repository": "o/r"})
}

// startWalk publishes a definition in a fresh embedded engine and starts
// an instance of it with the context.
func startWalk(t *testing.T, d Definition, context map[string]any) *walk {
	t.Helper()
	e, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	y, err := d.YAML()
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Publish(t.Context(), y)
	if err != nil || p.Digest != d.Digest {
		t.Fatalf("publish %s: %+v, %v; want digest %s", d.File, p, err, d.Digest)
	}
	w := &walk{t: t, e: e, d: d, id: "axlr-job-1"}
	_, err = e.StartPublished(t.Context(), made.StartRequest{Ceremony: d.Name, Version: d.Version, CeremonyID: w.id,
		ActorID: "axlr", ActorKind: made.ActorService, Context: context})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// step claims and completes the current state's step with the output.
func (w *walk) step(step string, out map[string]any) made.Instance {
	w.t.Helper()
	if st, _ := StepOf(w.d.Name, w.d.Version, step); st.Console {
		for k := range out {
			if !slices.ContainsFunc(st.Records, func(f Field) bool { return f.Name == k }) {
				w.t.Fatalf("console step %s records no %s", step, k)
			}
		}
	}
	w.claims++
	ctx := w.t.Context()
	if _, err := w.e.Claim(ctx, made.ClaimRequest{CeremonyID: w.id, StepID: step, ActorKind: made.ActorAgent,
		IdempotencyKey: fmt.Sprintf("%s:%s:%d", w.id, step, w.claims)}); err != nil {
		w.t.Fatalf("claim %s: %v", step, err)
	}
	in, err := w.e.Complete(ctx, made.CompleteRequest{CeremonyID: w.id, StepID: step, ActorKind: made.ActorAgent, Status: made.StepCompleted, Output: out})
	if err != nil {
		w.t.Fatalf("complete %s: %v", step, err)
	}
	return in
}

func (w *walk) fireErr(trigger string) (made.Instance, error) {
	return w.e.ApplyTransition(w.t.Context(), made.TransitionRequest{CeremonyID: w.id, Trigger: trigger, ActorKind: made.ActorService})
}

// fire fires the trigger, which must be the only one enabled beside
// cancel, and wants the state it leads to.
func (w *walk) fire(trigger, state string) made.Instance {
	w.t.Helper()
	cur, err := w.e.Get(w.t.Context(), w.id)
	if err != nil {
		w.t.Fatal(err)
	}
	var enabled []string
	for _, tr := range cur.EnabledTransitions() {
		if tr.Trigger != CancelTrigger {
			enabled = append(enabled, tr.Trigger)
		}
	}
	if !slices.Equal(enabled, []string{trigger}) {
		w.t.Fatalf("in %s the enabled triggers are %v, want %s", cur.CurrentState, enabled, trigger)
	}
	in, err := w.fireErr(trigger)
	if err != nil {
		w.t.Fatalf("fire %s: %v", trigger, err)
	}
	if in.CurrentState != state {
		w.t.Fatalf("%s led to %s, want %s", trigger, in.CurrentState, state)
	}
	return in
}

func wantKind(t *testing.T, err error, kind made.Kind) {
	t.Helper()
	if !errors.Is(err, &made.Error{Kind: kind}) {
		t.Fatalf("error %v, want one of kind %s", err, kind)
	}
}

// toProposeRepair runs a repair's model steps.
func (w *walk) toProposeRepair() {
	w.step("reproduce", map[string]any{"check_command": map[string]any{"program": "go", "args": []any{"test", "./p"}},
		"expected": "ok", "observed": "FAIL", "reproduced": true, "settled": true})
	w.fire("reproduced", "DIAGNOSE")
	w.step("diagnose", map[string]any{"root_cause": "r", "evidence": "e", "proposed_fix": "f", "diagnosed": true,
		"connect_to": []any{map[string]any{"ref": "kmp:entry:1", "rel": "supports", "why": "w"}}})
	w.fire("diagnosed", "REPAIR")
	w.step("repair", map[string]any{"summary": "s", "summary_en": "s", "repaired": true})
	w.fire("repaired", "PROPOSE")
}

// round proposes and watches once, with the watch's verdict.
func (w *walk) round(n int, verdict string) made.Instance {
	w.step("propose", map[string]any{"proposed": true, "pull_request": 7, "url": "https://x/7", "head_sha": fmt.Sprint("h", n), "round": n})
	w.fire("proposed", "WATCH")
	out := map[string]any{"verdict": verdict, "pull_request": 7, "head_sha": fmt.Sprint("h", n), "round": n, "passed": []any{"lint"}}
	if verdict == VerdictRed {
		out["failed"] = []any{"test (ubuntu)"}
	}
	return w.step("watch", out)
}

func TestRepairWalks(t *testing.T) {
	t.Run("two red rounds, then the person merges", func(t *testing.T) {
		w := newWalk(t, "repair")
		w.toProposeRepair()
		for n := 1; n <= 2; n++ {
			w.round(n, VerdictRed)
			in := w.fire("checks_failed", "REPAIR")
			if st, _ := in.Step("repair"); st.Status != made.StepPending || st.Iteration != 1 {
				t.Fatalf("repair after red round %d: %+v, want pending at iteration 1", n, st)
			}
			w.step("repair", map[string]any{"summary": "s", "summary_en": "s", "repaired": true})
			w.fire("repaired", "PROPOSE")
		}
		w.round(3, VerdictGreen)
		w.fire("checks_passed", "DECIDE")
		in := w.step("decide", map[string]any{"decision": DecisionApprove, "pull_request": 7, "head_sha": "h3"})
		if !slices.Equal(in.WaitingForHuman, []string{MergeApprovalGuard}) {
			t.Fatalf("waiting for %v, want the person's %s", in.WaitingForHuman, MergeApprovalGuard)
		}
		_, err := w.fireErr("merge_approved")
		wantKind(t, err, made.KindGuardsNotSatisfied)
		approve := func(role string, kind made.ActorKind) error {
			_, err := w.e.ApproveGuard(t.Context(), made.ApproveRequest{CeremonyID: w.id, GuardName: MergeApprovalGuard, RoleID: role, RoleKind: kind})
			return err
		}
		wantKind(t, approve("AXLR", made.ActorHuman), made.KindGuard)
		wantKind(t, approve(ApproverRole, made.ActorService), made.KindGuard)
		if err := approve(ApproverRole, made.ActorHuman); err != nil {
			t.Fatal(err)
		}
		w.fire("merge_approved", "MERGE")
		w.step("merge", map[string]any{"merged": true, "merge_sha": "m1", "pull_request": 7})
		in = w.fire("merged", "COMPLETED")
		if !in.Completed || in.Bounces != 6 {
			t.Fatalf("completed %v with %d bounces, want completed after 6 (two red rounds)", in.Completed, in.Bounces)
		}
	})
	t.Run("a third red round cannot go back", func(t *testing.T) {
		w := newWalk(t, "repair")
		w.toProposeRepair()
		for n := 1; n <= 2; n++ {
			w.round(n, VerdictRed)
			w.fire("checks_failed", "REPAIR")
			w.step("repair", map[string]any{"summary": "s", "summary_en": "s", "repaired": true})
			w.fire("repaired", "PROPOSE")
		}
		w.round(3, VerdictRed)
		_, err := w.fireErr("checks_failed")
		wantKind(t, err, made.KindLimit)
		if in, err := w.fireErr(CancelTrigger); err != nil || in.CurrentState != "CANCELLED" {
			t.Fatalf("cancel: %v in %s", err, in.CurrentState)
		}
	})
	t.Run("the third red round recorded blocked", func(t *testing.T) {
		w := newWalk(t, "repair")
		w.toProposeRepair()
		for n := 1; n <= 2; n++ {
			w.round(n, VerdictRed)
			w.fire("checks_failed", "REPAIR")
			w.step("repair", map[string]any{"summary": "s", "summary_en": "s", "repaired": true})
			w.fire("repaired", "PROPOSE")
		}
		w.round(3, VerdictBlocked)
		w.fire("watch_blocked", "BLOCKED")
	})
	for _, tt := range []struct {
		name, decision, trigger string
		merge                   map[string]any
		mergeTrigger, end       string
	}{
		{"automatic merge", DecisionAutomatic, "merge_automatic", map[string]any{"merged": true, "merge_sha": "m"}, "merged", "COMPLETED"},
		{"automatic merge that fails", DecisionAutomatic, "merge_automatic", map[string]any{"merged": false, "error": "405"}, "merge_failed", "BLOCKED"},
		{"declined", DecisionDecline, "merge_declined", nil, "", "BLOCKED"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWalk(t, "repair")
			w.toProposeRepair()
			w.round(1, VerdictGreen)
			w.fire("checks_passed", "DECIDE")
			w.step("decide", map[string]any{"decision": tt.decision, "reason": "r", "pull_request": 7, "head_sha": "h1"})
			if tt.merge == nil {
				w.fire(tt.trigger, tt.end)
				return
			}
			w.fire(tt.trigger, "MERGE")
			w.step("merge", tt.merge)
			w.fire(tt.mergeTrigger, tt.end)
		})
	}
	t.Run("propose fails", func(t *testing.T) {
		w := newWalk(t, "repair")
		w.toProposeRepair()
		w.step("propose", map[string]any{"proposed": false, "error": "push refused"})
		w.fire("propose_failed", "BLOCKED")
	})
}

func TestImproveWalks(t *testing.T) {
	brief := func(missing, settled bool) map[string]any {
		return map[string]any{"criteria": "c", "scope": "s", "check_command": map[string]any{"program": "go", "args": []any{"test"}},
			"missing": missing, "settled": settled}
	}
	t.Run("a check that passes is sent back, then merged by the person", func(t *testing.T) {
		w := newWalk(t, "improve")
		in := w.step("brief", brief(false, false))
		if st, _ := in.Step("brief"); st.Status != made.StepPending || st.Iteration != 2 {
			t.Fatalf("brief after a passing check: %+v, want pending at iteration 2", st)
		}
		w.step("brief", brief(true, true))
		w.fire("briefed", "BUILD")
		w.step("build", map[string]any{"summary": "s", "summary_en": "s", "verified": true})
		w.fire("verified", "PROPOSE")
		w.round(1, VerdictRed)
		w.fire("checks_failed", "BUILD")
		w.step("build", map[string]any{"summary": "s", "summary_en": "s", "verified": true})
		w.fire("verified", "PROPOSE")
		w.round(2, VerdictGreen)
		w.fire("checks_passed", "DECIDE")
		w.step("decide", map[string]any{"decision": DecisionApprove, "pull_request": 7, "head_sha": "h2"})
		if _, err := w.e.ApproveGuard(t.Context(), made.ApproveRequest{CeremonyID: w.id, GuardName: MergeApprovalGuard, RoleID: ApproverRole, RoleKind: made.ActorHuman}); err != nil {
			t.Fatal(err)
		}
		w.fire("merge_approved", "MERGE")
		w.step("merge", map[string]any{"merged": true, "merge_sha": "m"})
		w.fire("merged", "COMPLETED")
	})
	t.Run("no automatic merge", func(t *testing.T) {
		w := newWalk(t, "improve")
		w.step("brief", brief(true, true))
		w.fire("briefed", "BUILD")
		w.step("build", map[string]any{"summary": "s", "summary_en": "s", "verified": true})
		w.fire("verified", "PROPOSE")
		w.round(1, VerdictGreen)
		w.fire("checks_passed", "DECIDE")
		_, err := w.fireErr("merge_automatic")
		wantKind(t, err, made.KindNoRole)
	})
	t.Run("not feasible", func(t *testing.T) {
		w := newWalk(t, "improve")
		w.step("brief", map[string]any{"feasible": false, "observed": "exists", "missing": false, "settled": true})
		w.fire("not_feasible", "BLOCKED")
	})
	t.Run("three briefs that pass already", func(t *testing.T) {
		w := newWalk(t, "improve")
		for range 3 {
			w.step("brief", brief(false, false))
		}
		w.fire("brief_exhausted", "BLOCKED")
	})
	t.Run("three builds that fail", func(t *testing.T) {
		w := newWalk(t, "improve")
		w.step("brief", brief(true, true))
		w.fire("briefed", "BUILD")
		for range 3 {
			w.step("build", map[string]any{"summary": "s", "summary_en": "s", "verified": false})
		}
		w.fire("build_exhausted", "BLOCKED")
	})
}

// TestLookups: --mode takes the work modes only; a job's kind finds its
// definition through ForJob alone, a part of a plan through ForPlan alone.
func TestLookups(t *testing.T) {
	if got := Modes(); !slices.Equal(got, []string{"debug", "delivery", "incident"}) {
		t.Fatalf("Modes() = %v, want [debug delivery incident]", got)
	}
	lookups := map[string]func(string) (Definition, bool){"mode": ForMode, "job": ForJob, "plan": ForPlan}
	tests := []struct {
		key, lookup   string
		name, version string
	}{
		{"debug", "mode", "axlr_debug", "2.1"},
		{"delivery", "mode", "axlr_delivery", "2.1"},
		{"repair", "job", "axlr_repair", "1.0"},
		{"improve", "job", "axlr_improve", "1.0"},
		{PartPlan, "plan", "axlr_plan", "1.0"},
		{PartTask, "plan", "axlr_task", "1.0"},
		{PartSync, "plan", "axlr_sync", "1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			d, ok := lookups[tt.lookup](tt.key)
			if !ok || d.Name != tt.name || d.Version != tt.version || d.Job != (tt.lookup == "job") || d.Plan != (tt.lookup == "plan") || d.Mode != tt.key {
				t.Fatalf("found %+v, %v; want %s %s", d, ok, tt.name, tt.version)
			}
			for name, other := range lookups {
				if d, ok := other(tt.key); ok && name != tt.lookup {
					t.Fatalf("%s is found by the %s lookup too: %+v", tt.key, name, d)
				}
			}
			if !Cancellable(d.Name, d.Version) {
				t.Fatalf("%s %s is not cancellable", d.Name, d.Version)
			}
		})
	}
}
