package mcp

import (
	"strings"

	"github.com/underpass-ai/axlr/made"
)

// messageKinds map fragments of made-mcp's failure messages to kinds, most
// specific first. The words are made-mcp's (the tool prefixes, then the
// domain errors); the ones marked "axlr" are the embedded engine's own, for
// the newer constructs and its store, which reach a client when the in-test
// made-mcp serves it. The conformance suite checks that every failure of
// the embedded engine reads here as the kind it carries.
var messageKinds = []struct {
	fragment string
	kind     made.Kind
}{
	{"ceremony draft could not be parsed: ", made.KindNotPublishable},
	{"ceremony draft is not publishable: ", made.KindNotPublishable},
	{"was changed by someone else first", made.KindConflict},
	{"publication failed: ", made.KindUnavailable},
	{"ceremony store failed: ", made.KindUnavailable},   // axlr
	{"embedded engine is closed", made.KindUnavailable}, // axlr
	{"ceremony step has no authorized role: ", made.KindNoRole},
	{"ceremony transition has no authorized role: ", made.KindNoRole},
	{"invariant violated: no ceremony role can", made.KindNoRole},
	{"invariant violated: terminal ceremony instances cannot", made.KindTerminal},
	{"invalid state transition `ceremony_instance.current_state`", made.KindWrongState},
	{"invariant violated: step lease is still active", made.KindLeaseActive},
	{"invariant violated: step retry policy exhausted", made.KindRetryExhausted},
	{"invariant violated: step result requires an in-progress step", made.KindNotInProgress},
	{"invariant violated: ceremony transition guards are not satisfied", made.KindGuardsNotSatisfied},
	{"invariant violated: transition limit reached", made.KindLimit}, // axlr
	{"invariant violated: bounce limit reached", made.KindLimit},     // axlr
	{"invariant violated: the published definition no longer matches the digest this instance ran", made.KindConflict},
	{"ceremony guard was not found in the instance definition", made.KindGuard},
	{"only human approval guards can be approved explicitly", made.KindGuard},
	{"human guard is not required by a transition from the current state", made.KindGuard},
	{"invariant violated: only a human can approve a human guard", made.KindGuard},                           // axlr
	{"invariant violated: ceremony role cannot apply a transition that requires this guard", made.KindGuard}, // axlr
	{"invariant violated: only human approval guards can be deferred", made.KindGuard},
	{"invariant violated: approved human guards cannot be deferred", made.KindGuard},
	{"invariant violated: human guard is not required from the current state", made.KindGuard},
	{"conflict: ", made.KindConflict},
	{"not found: ", made.KindNotFound},
	{"already exists: ", made.KindExists},
}

// ClassifyMessage returns the kind of a made-mcp failure message: the
// client has only the text, and reads from it the kind the embedded engine
// gives the same failure. An unrecognised message is an argument made-mcp
// refused: made.KindInvalid.
func ClassifyMessage(message string) made.Kind {
	for _, m := range messageKinds {
		if strings.Contains(message, m.fragment) {
			return m.kind
		}
	}
	return made.KindInvalid
}
