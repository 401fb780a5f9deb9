package activities

import (
	"context"
	"fmt"
	"os"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// Plan implements workflows.PlanActivities: what a plan's workflow reads
// from the session store and the workspace. The commands a plan runs (its
// baseline, each wave's end-to-end check) are the ceremony driver's
// RunCheck; the task workers are workflows of their own.
type Plan struct {
	Store *session.Store
}

var _ workflows.PlanActivities = (*Plan)(nil)

// Verify reads the planner's decompose hand-back (the axlr_step_done call
// under in.CallKey in its session), decodes it strictly and verifies it
// without a model against the workspace at in.Root, opened as an os.Root
// so no citation reads outside it. A hand-back that is not a
// decomposition's shape is the plan's one defect, for the planner; a call
// that is not axlr_step_done, or a session the store does not hold, is a
// diverged session. It reads and runs nothing else, so a retry verifies
// the same.
func (a *Plan) Verify(ctx context.Context, in workflows.PlanVerifyInput) (plans.Verification, error) {
	log, err := openLog(a.Store, in.SessionID)
	if err != nil {
		return plans.Verification{}, err
	}
	call, err := findCall(log, in.CallKey)
	if err != nil {
		return plans.Verification{}, err
	}
	if call.Name != workflows.StepDoneTool {
		return plans.Verification{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"call %s of session %s is %s, not the planner's %s", in.CallKey, in.SessionID, call.Name, workflows.StepDoneTool),
			workflows.ErrTypeSessionDiverged, nil)
	}
	d, err := plans.DecodeDecomposition([]byte(call.Arguments))
	if err != nil {
		// A *plans.DecodeError, the planner's to fix.
		return plans.Verification{Defects: plans.Defects{{Text: err.Error()}}}, nil
	}
	root, err := os.OpenRoot(in.Root)
	if err != nil {
		return plans.Verification{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("open workspace %s: %v", in.Root, err), workflows.ErrTypeBadRequest, err)
	}
	defer root.Close()
	return plans.Verify(in.Plan, d, root.FS()), nil
}
