package cli

import (
	"context"
	"time"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// runResult prints a session's last execution result: the answer, or the
// result object with --json, and exits with the result's code.
func runResult(ctx context.Context, args []string, sys IO) error {
	var o common
	fs := newFlagSet("axlr-tui result", sys)
	o.register(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return exitWith(ExitUsage, "usage: axlr-tui result SESSION_ID [--json]")
	}
	id := pos[0]
	if !session.ValidID(id) {
		return exitWith(ExitUsage, "%q is not a session id (a lowercase UUID)", id)
	}
	c, err := o.connect(ctx, sys)
	if err != nil {
		return err
	}
	defer c.Close()
	workflowID, err := findSession(ctx, c, id)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, workflowID, "", workflows.QueryResult)
	if err != nil {
		return exitWith(ExitFailed, "result of session %s: %s", id, oneLine(err))
	}
	var r contract.Result
	if err := v.Get(&r); err != nil {
		return exitWith(ExitFailed, "decode result of session %s: %v", id, err)
	}
	if o.json {
		writeJSONLine(sys.Stdout, r)
	} else {
		printResultText(sys, &r)
	}
	return statusExit(r.Status)
}
