package made

import "strings"

// mcpErrorKind classifies a made-mcp tool-error message by the fragments of
// made-mcp's wording (reference §2–§3), first match wins. Argument
// messages come first, then publication failures, whose findings quote
// other domain errors ("is not publishable: not found: …"); a message
// matching nothing is KindInvalid. The two guard messages after made-mcp's
// are the embedded engine's own (approvals by a non-human or by a seat that
// cannot fire the guarded transition), so a served embedded engine reads
// back with the kinds it reported.
func mcpErrorKind(message string) Kind {
	rules := [...]struct {
		fragment string
		kind     Kind
	}{
		{"missing required field", KindInvalid},
		{"must be a string", KindInvalid},
		{"must not be blank", KindInvalid},
		{"must be a non-negative integer", KindInvalid},
		{"must be human, agent, service or engine", KindInvalid},
		{"could not be parsed", KindNotPublishable},
		{"is not publishable", KindNotPublishable},
		{"was changed by someone else first", KindConflict},
		{"limit reached", KindLimit},
		{"step lease is still active", KindLeaseActive},
		{"step retry policy exhausted", KindRetryExhausted},
		{"terminal ceremony instances", KindTerminal},
		{"no ceremony role can", KindNoRole},
		{"step result requires an in-progress step", KindNotInProgress},
		{"guards are not satisfied", KindGuardsNotSatisfied},
		{"guard was not found", KindGuard},
		{"only human approval guards", KindGuard},
		{"human guard is not required", KindGuard},
		{"approved human guards cannot be deferred", KindGuard},
		{"only a human can approve a human guard", KindGuard},
		{"cannot apply a transition that requires this guard", KindGuard},
		{"invalid state transition", KindWrongState},
		{"already exists:", KindExists},
		{"not found:", KindNotFound},
	}
	for _, r := range rules {
		if strings.Contains(message, r.fragment) {
			return r.kind
		}
	}
	return KindInvalid
}
