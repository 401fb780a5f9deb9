package workflows

import (
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/contract"
)

// TestDraftDecision: an approval names the digest that waits, and a
// return says why; anything else is refused with what waits.
func TestDraftDecision(t *testing.T) {
	a := &DraftApproval{Path: "docs/incidents/pool.draft.md", Digest: strings.Repeat("a", 64)}
	for _, tt := range []struct {
		req  DecideRequest
		want string
	}{
		{DecideRequest{Decision: contract.Approve, Digest: a.Digest}, ""},
		{DecideRequest{Decision: contract.Deny, Reason: "name the owner"}, ""},
		{DecideRequest{Decision: contract.Approve}, "an approval names the digest it approves: draft docs/incidents/pool.draft.md waits with sha256 " + a.Digest},
		{DecideRequest{Decision: contract.Approve, Digest: strings.Repeat("b", 64)}, "waits with sha256 " + a.Digest + ", not " + strings.Repeat("b", 64)},
		{DecideRequest{Decision: contract.Deny, Reason: " "}, "a returned draft needs its reason"},
	} {
		err := validateDraftDecision(a, tt.req)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.req, err, tt.want)
		}
	}
}
