package embedded

import (
	"fmt"

	"github.com/underpass-ai/axlr/made"
)

// What made-mcp puts before an engine failure, by tool.
const (
	prefixParse            = "ceremony draft could not be parsed: "
	prefixNotPublishable   = "ceremony draft is not publishable: "
	prefixPublication      = "publication failed: "
	prefixStart            = "failed to start published ceremony: "
	prefixLoadInstance     = "failed to load ceremony instance: "
	prefixLoadDefinition   = "failed to load ceremony definition: "
	prefixStepNoRole       = "ceremony step has no authorized role: "
	prefixTransitionNoRole = "ceremony transition has no authorized role: "
	prefixClaim            = "failed to claim ceremony step: "
	prefixComplete         = "failed to complete ceremony step: "
	prefixApply            = "failed to apply ceremony transition: "
	prefixApprove          = "failed to approve ceremony guard: "
	prefixDefer            = "failed to defer ceremony guard: "
)

// Domain errors, as made-mcp words them after a tool's prefix. The ones
// marked "axlr" are the embedded engine's own, for the newer constructs.
// An MCP client has only the words: mcp.ClassifyMessage must read each as
// the kind given here, which the conformance suite checks.
const (
	msgNoStepRole          = "invariant violated: no ceremony role can execute step"
	msgNoTransitionRole    = "invariant violated: no ceremony role can apply transition"
	msgTerminalStart       = "invariant violated: terminal ceremony instances cannot start steps"
	msgTerminalTransition  = "invariant violated: terminal ceremony instances cannot transition"
	msgTerminalApprove     = "invariant violated: terminal ceremony instances cannot approve guards"
	msgTerminalDefer       = "invariant violated: terminal ceremony instances cannot defer guard decisions"
	msgStepWrongState      = "invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`"
	msgTriggerWrongState   = "invalid state transition `ceremony_instance.current_state` -> `transition_trigger`"
	msgLeaseActive         = "invariant violated: step lease is still active"
	msgRetryExhausted      = "invariant violated: step retry policy exhausted"
	msgKeyExists           = "already exists: ceremony_instance.idempotency_key"
	msgNotInProgress       = "invariant violated: step result requires an in-progress step"
	msgGuardsNotSatisfied  = "invariant violated: ceremony transition guards are not satisfied"
	msgTransitionLimit     = "invariant violated: transition limit reached (%d)" // axlr
	msgBounceLimit         = "invariant violated: bounce limit reached (%d)"     // axlr
	msgInstanceNotFound    = "not found: ceremony_instance"
	msgInstanceExists      = "already exists: ceremony_instance"
	msgPublishedNotFound   = "not found: published_ceremony_definition"
	msgDigestMismatch      = "invariant violated: the published definition no longer matches the digest this instance ran"
	msgGuardNotInDef       = "ceremony guard was not found in the instance definition"
	msgApproveNotHuman     = "only human approval guards can be approved explicitly"
	msgApproveNotRequired  = "human guard is not required by a transition from the current state"
	msgApproveByNonHuman   = "invariant violated: only a human can approve a human guard"                           // axlr
	msgApproveNotPermitted = "invariant violated: ceremony role cannot apply a transition that requires this guard" // axlr
	msgRoleNotFound        = "not found: ceremony_role"
	msgGuardNotFound       = "not found: ceremony_guard"
	msgDeferNotHuman       = "invariant violated: only human approval guards can be deferred"
	msgDeferApproved       = "invariant violated: approved human guards cannot be deferred"
	msgDeferNotRequired    = "invariant violated: human guard is not required from the current state"
	msgErrorOnlyIfFailed   = "invariant violated: only failed step results may carry an error message"
	msgClosed              = "embedded engine is closed"
	msgStoreFailed         = "ceremony store failed: "
)

func newError(kind made.Kind, format string, args ...any) *made.Error {
	return &made.Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// prefixed puts a tool's prefix before a domain error, keeping its kind.
func prefixed(prefix string, err *made.Error) *made.Error {
	return &made.Error{Kind: err.Kind, Message: prefix + err.Message}
}

// invalidArg is an argument made-mcp refuses before reaching the engine.
func invalidArg(format string, args ...any) *made.Error {
	return newError(made.KindInvalid, format, args...)
}
