package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"
)

// fakeTemporal answers the Temporal calls Client makes as axlrd's
// frontend would, from what a test sets, and records them. A call the
// test did not script fails it.
type fakeTemporal struct {
	t *testing.T

	mu sync.Mutex
	// pollers answers DescribeTaskQueue's n-th call (from 0).
	pollers     func(n int) (int, error)
	describedTQ []string

	// pending are the activities DescribeWorkflowExecution shows running
	// or waiting for their next attempt, by workflow id.
	pending map[string][]*workflowpb.PendingActivityInfo
	// workflows are the workflow ids DescribeWorkflowExecution finds, with
	// their current run; describeErr fails it instead.
	workflows   map[string]string
	describeErr error
	// visibility maps a session id to the workflow whose AxlrSessions
	// holds it.
	visibility  map[string]string
	listQueries []string
	listErr     error
	// listed answers a list query other than a session id's.
	listed map[string][]*workflowpb.WorkflowExecutionInfo

	withStart    []startCall
	updates      []sdkclient.UpdateWorkflowOptions
	updateStarts []sdkclient.UpdateWithStartWorkflowOptions
	// update answers an update: the value its handle's Get yields, or the
	// error of the call (sendErr) or of Get (getErr).
	update func(o sdkclient.UpdateWorkflowOptions) (val any, sendErr, getErr error)

	executed   []startCall
	executeErr error

	// query answers QueryWorkflow's n-th call.
	query   func(n int, workflowID, queryType string, args []any) (any, error)
	queries int

	// histories are the events of each run.
	histories map[string][]*historypb.HistoryEvent
	// silent: queries never answer, as with axlrd down; deadline: the
	// SDK says so with its own deadline.
	silent, deadline bool
	// sticky: queries pass the SDK's deadline, as they do in the sticky
	// queue of a worker that is gone, until the workflow's stickiness is
	// reset; resets are the workflow ids ResetStickyTaskQueue reset, each
	// with its namespace.
	sticky bool
	resets []string
	// grows, when set, is a long poll's history: its iterator waits for
	// each event sent on it.
	grows  chan *historypb.HistoryEvent
	closed bool
	// cancelled are the workflow ids CancelWorkflow was asked to cancel.
	cancelled []string
}

type startCall struct {
	opts     sdkclient.StartWorkflowOptions
	workflow any
	args     []any
}

var _ temporal = (*fakeTemporal)(nil)

func (f *fakeTemporal) unscripted(call string) {
	f.t.Helper()
	f.t.Errorf("unexpected %s", call)
}

func (f *fakeTemporal) DescribeTaskQueue(_ context.Context, queue string, _ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pollers == nil {
		f.unscripted("DescribeTaskQueue")
		return nil, fmt.Errorf("unscripted")
	}
	n, err := f.pollers(len(f.describedTQ))
	f.describedTQ = append(f.describedTQ, queue)
	if err != nil {
		return nil, err
	}
	resp := &workflowservice.DescribeTaskQueueResponse{}
	for range n {
		resp.Pollers = append(resp.Pollers, &taskqueuepb.PollerInfo{Identity: "axlrd"})
	}
	return resp, nil
}

func (f *fakeTemporal) CancelWorkflow(_ context.Context, id, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	return nil
}

func (f *fakeTemporal) NewWithStartWorkflowOperation(opts sdkclient.StartWorkflowOptions, workflow any, args ...any) sdkclient.WithStartWorkflowOperation {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.withStart = append(f.withStart, startCall{opts, workflow, args})
	return nil
}

func (f *fakeTemporal) UpdateWithStartWorkflow(_ context.Context, o sdkclient.UpdateWithStartWorkflowOptions) (sdkclient.WorkflowUpdateHandle, error) {
	f.mu.Lock()
	f.updateStarts = append(f.updateStarts, o)
	f.mu.Unlock()
	return f.answer(o.UpdateOptions)
}

func (f *fakeTemporal) UpdateWorkflow(_ context.Context, o sdkclient.UpdateWorkflowOptions) (sdkclient.WorkflowUpdateHandle, error) {
	f.mu.Lock()
	f.updates = append(f.updates, o)
	f.mu.Unlock()
	return f.answer(o)
}

func (f *fakeTemporal) answer(o sdkclient.UpdateWorkflowOptions) (sdkclient.WorkflowUpdateHandle, error) {
	if f.update == nil {
		f.unscripted("update " + o.UpdateName)
		return nil, fmt.Errorf("unscripted")
	}
	val, sendErr, getErr := f.update(o)
	if sendErr != nil {
		return nil, sendErr
	}
	return fakeHandle{val: val, err: getErr}, nil
}

func (f *fakeTemporal) ExecuteWorkflow(_ context.Context, opts sdkclient.StartWorkflowOptions, workflow any, args ...any) (sdkclient.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.executed = append(f.executed, startCall{opts, workflow, args})
	if f.executeErr != nil {
		return nil, f.executeErr
	}
	return fakeRun{id: opts.ID}, nil
}

func (f *fakeTemporal) QueryWorkflow(ctx context.Context, workflowID, _, queryType string, args ...any) (converter.EncodedValue, error) {
	if f.silent {
		// As the SDK does with axlrd down: retry until the context ends,
		// or its own deadline (deadline set) passes.
		if f.deadline {
			return nil, serviceerror.NewDeadlineExceeded("context deadline exceeded")
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f.mu.Lock()
	if f.sticky {
		f.mu.Unlock()
		return nil, serviceerror.NewDeadlineExceeded("context deadline exceeded")
	}
	n := f.queries
	f.queries++
	f.mu.Unlock()
	if f.query == nil {
		f.unscripted("query " + queryType)
		return nil, fmt.Errorf("unscripted")
	}
	v, err := f.query(n, workflowID, queryType, args)
	if err != nil {
		return nil, err
	}
	return fakeValue{v}, nil
}

func (f *fakeTemporal) DescribeWorkflowExecution(_ context.Context, workflowID, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if f.describeErr != nil {
		return nil, f.describeErr
	}
	run, ok := f.workflows[workflowID]
	if !ok {
		return nil, notFound("workflow " + workflowID + " not found")
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: run},
	}, PendingActivities: f.pending[workflowID]}, nil
}

func (f *fakeTemporal) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.mu.Lock()
	f.listQueries = append(f.listQueries, req.GetQuery())
	f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	resp := &workflowservice.ListWorkflowExecutionsResponse{Executions: f.listed[req.GetQuery()]}
	for sessionID, wid := range f.visibility {
		if req.GetQuery() == "AxlrSessions = '"+sessionID+"'" {
			resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: wid}})
		}
	}
	return resp, nil
}

func (f *fakeTemporal) GetWorkflowHistory(ctx context.Context, _, runID string, longPoll bool, _ enumspb.HistoryEventFilterType) sdkclient.HistoryEventIterator {
	if longPoll && f.grows != nil {
		return &growingIterator{ctx: ctx, events: f.grows}
	}
	return &fakeIterator{events: f.histories[runID]}
}

// growingIterator is a long poll's: HasNext waits for the next event.
type growingIterator struct {
	ctx    context.Context
	events chan *historypb.HistoryEvent
	next   *historypb.HistoryEvent
}

func (it *growingIterator) HasNext() bool {
	select {
	case it.next = <-it.events:
		return true
	case <-it.ctx.Done():
		return false
	}
}

func (it *growingIterator) Next() (*historypb.HistoryEvent, error) { return it.next, nil }

func (f *fakeTemporal) Close() { f.closed = true }

func (f *fakeTemporal) WorkflowService() workflowservice.WorkflowServiceClient {
	return fakeService{f: f}
}

// fakeService is the frontend's service as far as Client calls it
// directly; any other call panics on the nil interface.
type fakeService struct {
	workflowservice.WorkflowServiceClient
	f *fakeTemporal
}

func (s fakeService) ResetStickyTaskQueue(_ context.Context, req *workflowservice.ResetStickyTaskQueueRequest, _ ...grpc.CallOption) (*workflowservice.ResetStickyTaskQueueResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.resets = append(s.f.resets, req.GetNamespace()+"/"+req.GetExecution().GetWorkflowId())
	s.f.sticky = false
	return &workflowservice.ResetStickyTaskQueueResponse{}, nil
}

type fakeHandle struct {
	val any
	err error
}

func (h fakeHandle) WorkflowID() string { return "" }
func (h fakeHandle) RunID() string      { return "" }
func (h fakeHandle) UpdateID() string   { return "" }

func (h fakeHandle) Get(_ context.Context, ptr any) error {
	if h.err != nil {
		return h.err
	}
	return roundTrip(h.val, ptr)
}

type fakeValue struct{ v any }

func (v fakeValue) HasValue() bool    { return v.v != nil }
func (v fakeValue) Get(ptr any) error { return roundTrip(v.v, ptr) }

// fakeRun is a started workflow; only its ids are read.
type fakeRun struct {
	sdkclient.WorkflowRun
	id string
}

func (r fakeRun) GetID() string { return r.id }

type fakeIterator struct{ events []*historypb.HistoryEvent }

func (it *fakeIterator) HasNext() bool { return len(it.events) > 0 }

func (it *fakeIterator) Next() (*historypb.HistoryEvent, error) {
	ev := it.events[0]
	it.events = it.events[1:]
	return ev, nil
}

func notFound(msg string) error { return serviceerror.NewNotFound(msg) }

// roundTrip decodes v into ptr as a payload would travel: through JSON.
func roundTrip(v, ptr any) error {
	if ptr == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}
