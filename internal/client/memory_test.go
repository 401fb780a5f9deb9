package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	sdkclient "go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/workflows"
)

// shortTemporal is fakeTemporal whose started workflow ends with result
// or runErr.
type shortTemporal struct {
	*fakeTemporal
	result any
	runErr error
}

func (f *shortTemporal) ExecuteWorkflow(ctx context.Context, opts sdkclient.StartWorkflowOptions, workflow any, args ...any) (sdkclient.WorkflowRun, error) {
	if _, err := f.fakeTemporal.ExecuteWorkflow(ctx, opts, workflow, args...); err != nil {
		return nil, err
	}
	return shortRunResult{fakeRun: fakeRun{id: opts.ID}, result: f.result, err: f.runErr}, nil
}

type shortRunResult struct {
	fakeRun
	result any
	err    error
}

func (r shortRunResult) Get(_ context.Context, ptr any) error {
	if r.err != nil {
		return r.err
	}
	return roundTrip(r.result, ptr)
}

// TestMemory: a read runs workflows.MemoryRead on this host with the
// operator's input, bounded by MemoryReadTimeout, under an id that names
// its op; its result is the op's answer. The memory's refusal reaches the
// caller in its own words as a *RefusedError, an axlrd that does not
// answer is an *UnreachableError, and a result without the op's answer is
// an error that names the read.
func TestMemory(t *testing.T) {
	wake := &kmp.WakeResult{Summary: "recalled 1 memory about repo:o/r",
		Wake:       kmp.Wake{CurrentState: []string{"repo:o/r:entry:1 main builds"}},
		Projection: kmp.Projection{Budget: kmp.ProjectionBudget{MaxBytes: 2048, UsedBytes: 30}, Page: kmp.Page{Returned: 1, Total: 1}}}
	list := &kmp.ListResult{Entries: []kmp.Object{{Ref: "repo:o/r:entry:1", Kind: kmp.KindObservation, Text: "main builds",
		Metadata: map[string]any{"about": "repo:o/r", "sequence": float64(1)}}}, Page: kmp.Page{Returned: 1, Total: 1}}
	show := &kmp.InspectResult{Summary: "observation repo:o/r:entry:1 about repo:o/r", Object: list.Entries[0],
		Links: kmp.Links{Incoming: []kmp.LinkedRef{}, Outgoing: []kmp.LinkedRef{{Ref: "repo:o/r:entry:2", Rel: "supports", Why: "the build"}}}, Evidence: []string{"go build ./..."}}
	notFound := sdktemporal.NewNonRetryableApplicationError("not_found: no memory about repo:x", workflows.ErrTypeBadRequest, nil)
	tests := []struct {
		name       string
		in         workflows.MemoryReadInput
		result     workflows.MemoryReadResult
		executeErr error
		runErr     error
		refused    string
		unreached  bool
		err        string
	}{
		{name: "wake", in: workflows.MemoryReadInput{Op: workflows.MemoryWake, About: "repo:o/r", Intent: "the build fails", MaxBytes: 2048},
			result: workflows.MemoryReadResult{Wake: wake}},
		{name: "list", in: workflows.MemoryReadInput{Op: workflows.MemoryList, About: "repo:o/r", Kind: kmp.KindObservation, Limit: 50},
			result: workflows.MemoryReadResult{List: list}},
		{name: "show", in: workflows.MemoryReadInput{Op: workflows.MemoryShow, Ref: "repo:o/r:entry:1", About: "repo:o/r"},
			result: workflows.MemoryReadResult{Show: show}},
		{name: "no memory about it", in: workflows.MemoryReadInput{Op: workflows.MemoryWake, About: "repo:x", Intent: "i", MaxBytes: 2048},
			runErr: fmt.Errorf("workflow execution error (type: axlr.MemoryRead): %w", notFound), refused: "not_found: no memory about repo:x"},
		{name: "axlrd gone", in: workflows.MemoryReadInput{Op: workflows.MemoryList, About: "repo:o/r"},
			executeErr: serviceerror.NewUnavailable("connection refused"), unreached: true},
		{name: "axlrd gone mid-read", in: workflows.MemoryReadInput{Op: workflows.MemoryList, About: "repo:o/r"},
			runErr: serviceerror.NewUnavailable("connection refused"), unreached: true},
		{name: "no answer for the op", in: workflows.MemoryReadInput{Op: workflows.MemoryShow, Ref: "repo:o/r:entry:9"},
			result: workflows.MemoryReadResult{Wake: wake}, err: "memory show repo:o/r:entry:9: axlrd answered without a show result"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &shortTemporal{fakeTemporal: &fakeTemporal{t: t, executeErr: tc.executeErr}, result: tc.result, runErr: tc.runErr}
			c := newClient(f, "127.0.0.1:7233", "h")
			got, err := c.Memory(context.Background(), tc.in)
			if len(f.executed) != 1 {
				t.Fatalf("started %d workflows", len(f.executed))
			}
			s := f.executed[0]
			if s.workflow != workflows.MemoryReadWorkflow || !strings.HasPrefix(s.opts.ID, "axlr-memory-"+tc.in.Op+"-") || s.opts.TaskQueue != "axlr-host-h" ||
				s.opts.WorkflowExecutionTimeout != workflows.MemoryReadTimeout || s.opts.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING ||
				!reflect.DeepEqual(s.args, []any{tc.in}) {
				t.Errorf("started %v %+v with %+v", s.workflow, s.opts, s.args)
			}
			var refused *RefusedError
			switch {
			case tc.refused != "":
				if !errors.As(err, &refused) || refused.Message != tc.refused {
					t.Fatalf("Memory = %v, want the refusal %q", err, tc.refused)
				}
			case tc.unreached:
				if !errors.As(err, new(*UnreachableError)) || !strings.HasPrefix(err.Error(), "memory "+tc.in.Op+" "+tc.in.About+": ") {
					t.Fatalf("Memory = %v, want an *UnreachableError naming the read", err)
				}
			case tc.err != "":
				if err == nil || err.Error() != tc.err || errors.As(err, &refused) {
					t.Fatalf("Memory = %v, want %q", err, tc.err)
				}
			default:
				if err != nil || !reflect.DeepEqual(got, tc.result) {
					t.Fatalf("Memory = %+v, %v; want %+v", got, err, tc.result)
				}
			}
		})
	}
}

// TestDefinitionsRun: the definitions' workflows run as they did before
// their run was shared with memory's: an id that names the verb, bounded
// by DefinitionTimeout, without input for the listing.
func TestDefinitionsRun(t *testing.T) {
	defs := []workflows.DefinitionSummary{{Name: "team_note", Versions: []string{"1.0"}}}
	f := &shortTemporal{fakeTemporal: &fakeTemporal{t: t}, result: defs}
	c := newClient(f, "127.0.0.1:7233", "h")
	got, err := c.Definitions(context.Background())
	if err != nil || !reflect.DeepEqual(got, defs) {
		t.Fatalf("Definitions = %+v, %v", got, err)
	}
	f.result = workflows.PublishDefinitionResult{Outcome: "published", Name: "team_note", Version: "1.0"}
	if _, err := c.PublishDefinition(context.Background(), []byte("name: team_note\n")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		prefix, workflow string
		args             []any
	}{
		{"axlr-definitions-list-", workflows.DefinitionListWorkflow, []any{}},
		{"axlr-definitions-publish-", workflows.DefinitionPublishWorkflow, []any{workflows.PublishDefinitionInput{YAML: "name: team_note\n"}}},
	} {
		s := f.executed[i]
		if s.workflow != want.workflow || !strings.HasPrefix(s.opts.ID, want.prefix) || s.opts.WorkflowExecutionTimeout != workflows.DefinitionTimeout ||
			s.opts.TaskQueue != "axlr-host-h" || !reflect.DeepEqual(s.args, want.args) {
			t.Errorf("started %v %+v with %+v", s.workflow, s.opts, s.args)
		}
	}
	f.executeErr = serviceerror.NewUnavailable("connection refused")
	if _, err := c.Definitions(context.Background()); !errors.As(err, new(*UnreachableError)) || !strings.HasPrefix(err.Error(), "list the ceremony definitions: ") {
		t.Errorf("Definitions with axlrd gone = %v", err)
	}
}
