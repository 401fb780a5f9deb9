package mcp_test

import (
	"testing"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/mcp"
)

func TestClassifyMessage(t *testing.T) {
	for _, c := range []struct {
		message string
		kind    made.Kind
	}{
		{"ceremony draft could not be parsed: unknown key \"x\" in the definition", made.KindNotPublishable},
		{"ceremony draft is not publishable: not found: ceremony_transition.to_state", made.KindNotPublishable},
		{"failed to load ceremony instance: not found: ceremony_instance", made.KindNotFound},
		{"failed to start published ceremony: already exists: ceremony_instance", made.KindExists},
		{"ceremony step has no authorized role: invariant violated: no ceremony role can execute step", made.KindNoRole},
		{"failed to complete ceremony step: invariant violated: no ceremony role can execute step", made.KindNoRole},
		{"failed to claim ceremony step: invariant violated: terminal ceremony instances cannot start steps", made.KindTerminal},
		{"failed to claim ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`", made.KindWrongState},
		{"failed to claim ceremony step: invariant violated: step lease is still active", made.KindLeaseActive},
		{"failed to claim ceremony step: invariant violated: step retry policy exhausted", made.KindRetryExhausted},
		{"failed to complete ceremony step: invariant violated: step result requires an in-progress step", made.KindNotInProgress},
		{"failed to apply ceremony transition: invariant violated: ceremony transition guards are not satisfied", made.KindGuardsNotSatisfied},
		{"failed to apply ceremony transition: invariant violated: transition limit reached (20)", made.KindLimit},
		{"failed to apply ceremony transition: invariant violated: bounce limit reached (3)", made.KindLimit},
		{"failed to approve ceremony guard: invariant violated: only a human can approve a human guard", made.KindGuard},
		{"failed to approve ceremony guard: invariant violated: ceremony role cannot apply a transition that requires this guard", made.KindGuard},
		{"failed to approve ceremony guard: not found: ceremony_role", made.KindNotFound},
		{"failed to defer ceremony guard: invariant violated: approved human guards cannot be deferred", made.KindGuard},
		{"failed to load ceremony definition: invariant violated: the published definition no longer matches the digest this instance ran", made.KindConflict},
		{"failed to claim ceremony step: conflict: ceremony_instance was changed by someone else first", made.KindConflict},
		{"embedded engine is closed", made.KindUnavailable},
		{"field `step_id` contains invalid characters", made.KindInvalid},
		{"invariant violated: only failed step results may carry an error message", made.KindInvalid},
	} {
		if got := mcp.ClassifyMessage(c.message); got != c.kind {
			t.Errorf("%q: %s, want %s", c.message, got, c.kind)
		}
	}
}
