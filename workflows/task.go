package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
)

// TaskWorkflow is the workflow type of a one-shot task: a fresh session in
// a workspace, one prompt, autonomous local tools under a policy and,
// optionally, one ceremony, run to its result; then the workflow completes
// with that result. Plan tasks run as these.
const TaskWorkflow = "axlr.Task"

// TaskWorkflowID is the workflow id of the task that runs in a session.
func TaskWorkflowID(sessionID string) string { return "axlr-task-" + sessionID }

// TaskInput starts a task.
type TaskInput struct {
	// ExecutionID names the task's one execution; the client chooses it,
	// and an interrupt names it.
	ExecutionID string `json:"execution_id"`
	// SessionID is the fresh session the task works in.
	SessionID string `json:"session_id"`
	// Host is the host id whose task queue the workflow runs on.
	Host string `json:"host"`
	// Root is the workspace, an absolute path.
	Root   string `json:"root"`
	Prompt string `json:"prompt"`
	// Model, empty: settings.json's.
	Model string `json:"model,omitempty"`
	// Mode is normal (the default) or a ceremony's mode.
	Mode string `json:"mode,omitempty"`
	// Policy narrows the task's tools; the approval level is local: the
	// workspace's tools run without asking, the destructive list still asks,
	// and a call that asks ends the task needs_decision.
	Policy *policy.Policy `json:"policy,omitempty"`
	// ApprovedChecks are the check commands approved with the task: a
	// ceremony step that hands one back runs it without asking; any other
	// command ends the task needs_decision.
	ApprovedChecks []ceremonies.CheckCommand `json:"approved_checks,omitempty"`
}

// Validate checks a task's input before it starts, naming the field.
func (in TaskInput) Validate() error {
	switch {
	case strings.TrimSpace(in.ExecutionID) == "":
		return errors.New("task: execution_id is empty")
	case strings.TrimSpace(in.SessionID) == "":
		return errors.New("task: session_id is empty")
	case strings.TrimSpace(in.Prompt) == "":
		return errors.New("task: the prompt is empty")
	case !strings.HasPrefix(in.Root, "/"):
		return fmt.Errorf("task: root %q is not an absolute path", in.Root)
	}
	if in.Mode != "" && !slices.Contains(SupportedModes, in.Mode) {
		return fmt.Errorf("task: unknown mode %q: this axlrd supports %s", in.Mode, strings.Join(SupportedModes, ", "))
	}
	if in.Policy != nil {
		if err := in.Policy.Validate(); err != nil {
			return fmt.Errorf("task: %w", err)
		}
	}
	for i, c := range in.ApprovedChecks {
		if strings.TrimSpace(c.Program) == "" {
			return fmt.Errorf("task: approved_checks[%d] has no program", i)
		}
	}
	return nil
}
