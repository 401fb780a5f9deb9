package client

import (
	"cmp"
	"context"
	"fmt"

	"github.com/underpass-ai/axlr/workflows"
)

// Memory has axlrd read its memory for an operator (workflows.MemoryRead):
// a wake of an about for an intent, a listing of an about, or one entry by
// ref, as in.Op says. A read the memory refuses (no memory about the
// about, no such ref, a bad kind or limit) is a *RefusedError with the
// memory's words ("not_found: no memory about repo:o/r"). The result holds
// the op's answer: a result without it is an error.
func (c *Client) Memory(ctx context.Context, in workflows.MemoryReadInput) (workflows.MemoryReadResult, error) {
	what := "memory " + in.Op + " " + cmp.Or(in.Ref, in.About)
	res, err := runShort[workflows.MemoryReadResult](ctx, c, shortRun{
		prefix:       "axlr-memory-" + in.Op,
		what:         what,
		workflowType: workflows.MemoryReadWorkflow,
		timeout:      workflows.MemoryReadTimeout,
	}, in)
	if err != nil {
		return res, err
	}
	answered := map[string]bool{
		workflows.MemoryWake: res.Wake != nil,
		workflows.MemoryList: res.List != nil,
		workflows.MemoryShow: res.Show != nil,
	}
	if !answered[in.Op] {
		return res, fmt.Errorf("%s: axlrd answered without a %s result", what, in.Op)
	}
	return res, nil
}
