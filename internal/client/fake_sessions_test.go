package client

import (
	"context"
	"strconv"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// pagedTemporal is a fakeTemporal whose visibility list answers from
// pages, as the frontend pages it: each page but the last carries the
// token of the next. listErr of the fake fails the list instead.
type pagedTemporal struct {
	*fakeTemporal
	pages [][]*workflowpb.WorkflowExecutionInfo
	// lists are the requests ListWorkflow was sent.
	lists []*workflowservice.ListWorkflowExecutionsRequest
}

func (p *pagedTemporal) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lists = append(p.lists, req)
	if p.listErr != nil {
		return nil, p.listErr
	}
	n := 0
	if tok := req.GetNextPageToken(); len(tok) > 0 {
		var err error
		if n, err = strconv.Atoi(string(tok)); err != nil || n <= 0 || n >= len(p.pages) {
			return nil, serviceerror.NewInvalidArgument("invalid page token " + strconv.Quote(string(tok)))
		}
	}
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	if n < len(p.pages) {
		resp.Executions = p.pages[n]
	}
	if n+1 < len(p.pages) {
		resp.NextPageToken = []byte(strconv.Itoa(n + 1))
	}
	return resp, nil
}
