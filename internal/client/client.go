// Package client is how axlr's front ends reach axlrd. It is the one place
// of the front ends that speaks Temporal: it dials axlrd's frontend with the
// redaction codec, starts sessions and one-shot tasks on this host's task
// queue, sends prompts, decisions and interrupts as workflow updates, and
// reads progress, results and history back. The command line
// (internal/cmd) uses it now; the TUI and a service API will.
//
// A Client is safe for concurrent use. It prints nothing, knows no exit
// codes and handles no signals: those belong to its callers. It retries
// nothing except Watch, which waits through an axlrd restart. Errors name
// the operation and its input; the typed ones (*UnreachableError,
// *NoWorkerError, *ConfigError, *RefusedError, *NotFoundError) let a caller
// tell axlrd's absence, its refusal and a bad setting apart.
package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/underpass-ai/axlr/internal/hostid"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/redact"
	"github.com/underpass-ai/axlr/workflows"
)

// Defaults of Options.
const (
	// DefaultAddress is where axlrd's embedded Temporal frontend listens.
	DefaultAddress = "127.0.0.1:7233"
	// DefaultNamespace is axlrd's Temporal namespace.
	DefaultNamespace = "default"
)

// Timings of the client.
const (
	// DialTimeout bounds Dial.
	DialTimeout = 5 * time.Second
	// PollInterval is the least pause between two progress queries of a
	// watch, and the pause between two task queue descriptions of
	// CheckWorker.
	PollInterval = 200 * time.Millisecond
	// IdleQuery is the longest a watch goes without a query while the
	// workflow's history does not grow.
	IdleQuery = 5 * time.Second
	// RetryInterval is the pause between two progress queries of Watch
	// while axlrd does not answer.
	RetryInterval = time.Second
	// WorkerWait is how long CheckWorker waits for a worker to poll: one
	// that has just started may not have polled yet.
	WorkerWait = 10 * time.Second
)

// Options say where axlrd is. The zero value reaches the axlrd of this
// machine as its settings file describes it.
type Options struct {
	// Address is axlrd's Temporal frontend, host:port (default: the
	// settings' daemon.temporal_address, then 127.0.0.1 on their
	// daemon.frontend_port, where axlrd listens then, then 127.0.0.1:7233).
	Address string
	// Namespace is the Temporal namespace (default: the settings'
	// daemon.namespace, then "default").
	Namespace string
	// SettingsPath is the settings file (default: $AXLR_SETTINGS, then
	// settings.DefaultPath, the file axlrd reads by default). An absent
	// file is empty settings; the AXLR_* variables apply over it
	// (settings.Open).
	SettingsPath string
	// Getenv reads AXLR_HOST_ID, the AXLR_* settings and the XDG
	// directories (default os.Getenv).
	Getenv func(string) string
}

// address is where axlrd's frontend is, as Address says.
func (o Options) address(d settings.Daemon) string {
	port := ""
	if d.FrontendPort != 0 {
		port = net.JoinHostPort("127.0.0.1", strconv.Itoa(d.FrontendPort))
	}
	return cmp.Or(o.Address, d.TemporalAddress, port, DefaultAddress)
}

// temporal is what Client uses of the Temporal SDK's client.
type temporal interface {
	HistoryReader
	DescribeTaskQueue(ctx context.Context, taskQueue string, taskQueueType enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error)
	NewWithStartWorkflowOperation(options sdkclient.StartWorkflowOptions, workflow any, args ...any) sdkclient.WithStartWorkflowOperation
	UpdateWithStartWorkflow(ctx context.Context, options sdkclient.UpdateWithStartWorkflowOptions) (sdkclient.WorkflowUpdateHandle, error)
	UpdateWorkflow(ctx context.Context, options sdkclient.UpdateWorkflowOptions) (sdkclient.WorkflowUpdateHandle, error)
	ExecuteWorkflow(ctx context.Context, options sdkclient.StartWorkflowOptions, workflow any, args ...any) (sdkclient.WorkflowRun, error)
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	CancelWorkflow(ctx context.Context, workflowID, runID string) error
	WorkflowService() workflowservice.WorkflowServiceClient
	Close()
}

var _ temporal = sdkclient.Client(nil)

// Client is a connection to axlrd.
type Client struct {
	tc      temporal
	address string
	// hostID names this machine; its task queue is
	// workflows.HostTaskQueue(hostID).
	hostID string
	// namespace is the Temporal namespace the client is dialled to.
	namespace string
	// set are the settings the client was dialled with (nil: empty), and
	// getenv the environment its jobs' default data directory is read
	// from.
	set    *settings.Settings
	getenv func(string) string
	// poll, idle, retry and workerWait are PollInterval, IdleQuery,
	// RetryInterval and WorkerWait; tests shorten them.
	poll, idle, retry, workerWait time.Duration
	// answer bounds a query or a list: queryTimeout.
	answer time.Duration
	// closedPlans are the records of closed plan runs, by run id: Plans
	// reads each once.
	closedPlans sync.Map
}

// Dial reads the settings file, names this host and connects to axlrd,
// failing within DialTimeout with an *UnreachableError that says how to
// start it. Payloads are redacted of the settings' secrets and the
// environment's credentials before they leave the process, as axlrd's own
// are. A bad settings file or host id is a *ConfigError.
func Dial(ctx context.Context, o Options) (*Client, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	set, err := settings.Open(o.SettingsPath, getenv)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	host, err := hostid.Get(getenv)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	addr := o.address(set.Daemon)
	red := redact.New(append(slices.Clone(set.Secrets), redact.Secrets(os.Environ())...))
	namespace := cmp.Or(o.Namespace, set.Daemon.Namespace, DefaultNamespace)
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	tc, err := sdkclient.DialContext(dctx, sdkclient.Options{
		HostPort:      addr,
		Namespace:     namespace,
		Logger:        quietLogger{},
		DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), red.Codec()),
	})
	if err != nil {
		return nil, &UnreachableError{Address: addr, Err: err}
	}
	c := newClient(tc, addr, host)
	c.set, c.getenv = &set.Settings, getenv
	c.namespace = namespace
	return c, nil
}

// New wraps a Temporal client that is already connected, as axlrd's own
// activities hold one: hostID names the machine whose task queue it
// reaches, set are axlrd's settings (nil: empty) and getenv reads the
// directories jobs' clones default under (nil: os.Getenv).
func New(tc sdkclient.Client, hostID string, set *settings.Settings, getenv func(string) string) *Client {
	c := newClient(tc, "", hostID)
	c.set, c.getenv = set, getenv
	if set != nil {
		c.namespace = cmp.Or(set.Daemon.Namespace, DefaultNamespace)
	}
	return c
}

func newClient(tc temporal, addr, hostID string) *Client {
	return &Client{tc: tc, address: addr, hostID: hostID, namespace: DefaultNamespace, poll: PollInterval, idle: IdleQuery,
		retry: RetryInterval, answer: queryTimeout, workerWait: WorkerWait}
}

// Close closes the connection.
func (c *Client) Close() { c.tc.Close() }

// taskQueue is the task queue of this machine's axlrd.
func (c *Client) taskQueue() string { return workflows.HostTaskQueue(c.hostID) }

// CheckWorker makes sure an axlrd worker polls this host's task queue, so
// a request does not wait forever for a worker that is not there. It waits
// up to WorkerWait for one, then fails with a *NoWorkerError.
func (c *Client) CheckWorker(ctx context.Context) error {
	queue := c.taskQueue()
	ctx, cancel := context.WithTimeout(ctx, c.workerWait)
	defer cancel()
	for {
		resp, err := c.tc.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil && len(resp.GetPollers()) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return &NoWorkerError{TaskQueue: queue, Err: err}
		case <-time.After(c.poll):
		}
	}
}

// UnreachableError is an axlrd that does not answer at Address.
type UnreachableError struct {
	Address string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("axlrd not reachable at %s: start it with \"go run ./cmd/axlrd\" (or \"axlrd\"), or pass --temporal-address (%s)", e.Address, firstLine(e.Err.Error()))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// NoWorkerError is an axlrd that answers but whose worker does not poll
// this host's task queue (axlrd runs elsewhere, or under another host id).
type NoWorkerError struct {
	TaskQueue string
	// Err is why the task queue could not be described; nil when it was,
	// and no worker polled it.
	Err error
}

func (e *NoWorkerError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("describe task queue %s: %s", e.TaskQueue, firstLine(e.Err.Error()))
	}
	return fmt.Sprintf("no axlrd worker serves this host (task queue %s): start axlrd on this machine, with the same AXLR_HOST_ID if you set it", e.TaskQueue)
}

func (e *NoWorkerError) Unwrap() error { return e.Err }

// ConfigError is a settings file or host id Dial cannot use. Its message
// names the file or the variable.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// RefusedError is a request axlrd refused: an update's validator said no,
// or its handler failed. Message is axlrd's reason on one line, as the
// workflow wrote it ("decide: no call exec-9 waits for a decision in
// session …").
type RefusedError struct {
	Message string
	Err     error
}

func (e *RefusedError) Error() string { return e.Message }

func (e *RefusedError) Unwrap() error { return e.Err }

// NotFoundError is a session axlrd holds no workflow for.
type NotFoundError struct{ SessionID string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("no session %s in axlrd", e.SessionID) }

// missing is a workflow axlrd holds no run of, said in the client's own
// words; errors.As finds the *serviceerror.NotFound under it.
type missing struct {
	msg string
	err error
}

func (e *missing) Error() string { return e.msg }

func (e *missing) Unwrap() error { return e.err }

// reached turns an error of a server that did not answer into an
// *UnreachableError and leaves any other as it is.
func (c *Client) reached(err error) error {
	var unavailable *serviceerror.Unavailable
	if errors.As(err, new(*UnreachableError)) {
		return err
	}
	if errors.As(err, &unavailable) {
		return &UnreachableError{Address: c.address, Err: err}
	}
	return err
}

// queryTries bounds how often query asks again after axlrd's worker
// failed to answer (see answerFailed).
const queryTries = 3

// query is QueryWorkflow bounded by c.answer (queryTimeout): with axlrd down the SDK
// retries until its context ends, and a panel's refresh would wait for
// ever instead of saying axlrd does not answer. No answer in time is an
// *UnreachableError, as a refused connection is. A query the worker
// failed to answer is asked again, up to queryTries in all.
//
// A query goes first to the sticky queue of the worker that ran the
// workflow last. When that worker is gone (its host lost, on a cluster),
// Temporal answers from the workflow's own task queue, which any live
// axlrd polls, only once the sticky queue's timeout has passed: as late as
// the SDK's own deadline. So a query the SDK gave up on is asked once
// more, after the workflow's stickiness is reset. With no axlrd up at all
// that is two deadlines before the query is unreachable.
func (c *Client) query(ctx context.Context, workflowID, runID, name string, args ...any) (converter.EncodedValue, error) {
	unstuck := false
	for try := 1; ; try++ {
		var v converter.EncodedValue
		err := c.bounded(ctx, func(ctx context.Context) (err error) {
			v, err = c.tc.QueryWorkflow(ctx, workflowID, runID, name, args...)
			return err
		})
		var deadline *serviceerror.DeadlineExceeded
		if !unstuck && ctx.Err() == nil && errors.As(err, &deadline) {
			unstuck = true
			if c.unstick(ctx, workflowID, runID) == nil {
				continue
			}
		}
		if try >= queryTries || !answerFailed(err) {
			return v, err
		}
	}
}

// unstick sends a workflow's next tasks and queries to its task queue,
// not to the sticky queue of the worker that ran it last.
func (c *Client) unstick(ctx context.Context, workflowID, runID string) error {
	bctx, cancel := context.WithTimeout(ctx, c.answer)
	defer cancel()
	_, err := c.tc.WorkflowService().ResetStickyTaskQueue(bctx, &workflowservice.ResetStickyTaskQueueRequest{
		Namespace: c.namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID}})
	return err
}

// list is ListWorkflow bounded as query is.
func (c *Client) list(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	var resp *workflowservice.ListWorkflowExecutionsResponse
	err := c.bounded(ctx, func(ctx context.Context) (err error) {
		resp, err = c.tc.ListWorkflow(ctx, req)
		return err
	})
	return resp, err
}

func (c *Client) bounded(ctx context.Context, call func(context.Context) error) error {
	bctx, cancel := context.WithTimeout(ctx, c.answer)
	defer cancel()
	err := call(bctx)
	// The SDK gives up first on its own RPC deadline (5 s for a query),
	// with DeadlineExceeded; the bound is there for the calls it retries.
	var deadline *serviceerror.DeadlineExceeded
	if err != nil && ctx.Err() == nil && (bctx.Err() != nil || errors.As(err, &deadline)) {
		return &UnreachableError{Address: c.address, Err: fmt.Errorf("no answer in %s: %w", c.answer, err)}
	}
	return c.reached(err)
}

// refused turns a failed update into a *RefusedError without the SDK's
// prefixes, or an *UnreachableError.
func (c *Client) refused(err error) error {
	if err = c.reached(err); errors.As(err, new(*UnreachableError)) {
		return err
	}
	msg := err.Error()
	for _, prefix := range []string{"unable to update workflow: ", "update failed: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return &RefusedError{Message: firstLine(msg), Err: err}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// quietLogger drops the SDK's logs: callers report errors themselves.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
