package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// ErrTypeQueryRefused is the failure type of a query a workflow answers
// with a refusal (an execution that is not its, a result not there yet).
// A client tells it by this type from a query its worker failed to answer
// at all: a replay that panicked, or a server that handed the worker a
// history newer than the task it sent. Those say nothing about the
// workflow, and asking again answers them; a refusal does not change.
const ErrTypeQueryRefused = "QueryRefused"

// refuse is a query handler's refusal, typed ErrTypeQueryRefused.
func refuse(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeQueryRefused, nil)
}
