package plans

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/ceremonies"
)

// Status is where a plan stands.
type Status string

// The statuses of a plan. Done, partial, blocked and declined are terminal;
// interrupted waits for the person's plans recover.
const (
	// Decomposing: the planner is proposing the tasks, or fixing defects.
	Decomposing Status = "decomposing"
	// AwaitingApproval: the verified plan waits on its card for the person.
	AwaitingApproval Status = "awaiting_approval"
	// Ready: approved; no task has started yet.
	Ready Status = "ready"
	// Running: its waves of tasks and syncs run.
	Running Status = "running"
	// Done: every task done and every wave's sync green.
	Done Status = "done"
	// Partial: it ran to its end with a task or a sync not green.
	Partial Status = "partial"
	// Blocked: it never became ready (three unverified rounds).
	Blocked Status = "blocked"
	// Declined: the person declined it.
	Declined Status = "declined"
	// Interrupted: it stopped while it ran; plans recover runs it again.
	Interrupted Status = "interrupted"
)

var statuses = []Status{Decomposing, AwaitingApproval, Ready, Running, Done, Partial, Blocked, Declined, Interrupted}

// Valid reports whether s is a status of a plan.
func (s Status) Valid() bool { return slices.Contains(statuses, s) }

// Terminal reports whether the plan ended: done, partial, blocked or
// declined.
func (s Status) Terminal() bool { return s == Done || s == Partial || s == Blocked || s == Declined }

// TaskStatus is where one task of a plan stands.
type TaskStatus string

// The statuses of a task.
const (
	TaskPending TaskStatus = "pending"
	TaskRunning TaskStatus = "running"
	TaskDone    TaskStatus = "done"
	TaskBlocked TaskStatus = "blocked"
	// TaskSkipped: a task it depends on did not finish.
	TaskSkipped TaskStatus = "skipped"
)

// Record is one plan as the registry keeps it and axlr-tui plans prints
// it. TestRecordFields pins its JSON names.
type Record struct {
	// ID is the plan's slug (ID).
	ID     string `json:"id"`
	Status Status `json:"status"`
	Brief  string `json:"brief"`
	// Root is the workspace the plan works in.
	Root string `json:"root"`
	// Host is the host whose directory the plan works in, for a plan
	// whose own code runs on the cluster queue (any host answers for it).
	Host string `json:"host,omitempty"`
	// PlannerModel is the model that decomposed the brief.
	PlannerModel string `json:"planner_model"`
	Tasks        []Task `json:"tasks"`
	// Waves is how many waves the tasks make.
	Waves int `json:"waves"`
	// Syncs are the end-to-end check's runs after each wave, in order.
	Syncs []Sync `json:"syncs"`
	// Pending is what waits for the person; nil when nothing does.
	Pending *Pending `json:"pending"`
	// Reason says why the plan is blocked, partial, declined or
	// interrupted.
	Reason  string    `json:"reason"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Task is one task of a plan record: its contract as approved and, once it
// runs, where it stands.
type Task struct {
	ID        string   `json:"id"`
	Goal      string   `json:"goal"`
	Scope     []string `json:"scope"`
	DependsOn []string `json:"depends_on"`
	// Wave is the wave, from 1, the task runs in.
	Wave      int        `json:"wave"`
	TestFirst bool       `json:"test_first"`
	Status    TaskStatus `json:"status"`
	// Session is the id of the task's worker session once it started.
	Session string `json:"session"`
	// Changed lists the files the task changed, from its hand-back.
	Changed []string `json:"changed"`
	// Reason says why the task is blocked or skipped.
	Reason string `json:"reason"`
	// Questions are what the task's workers asked the person in their
	// hand-backs (at most MaxQuestions each), absent when none did.
	Questions []string `json:"questions,omitempty"`
	// Restored are the scope files a worker of the task that did not
	// finish (blocked, or interrupted) had changed, put back as they were
	// when it started; Created the scope files such a worker created,
	// left in place for the person. Absent when there are none.
	Restored []string `json:"restored,omitempty"`
	Created  []string `json:"created,omitempty"`
}

// Sync is one run of the plan's end-to-end check after a wave: the wave,
// the check, its exit code (null when it did not run to its end) and the
// round, 0 for the first run and 1, 2 after each reconciliation.
type Sync struct {
	Wave  int                     `json:"wave"`
	Check ceremonies.CheckCommand `json:"check"`
	Exit  *int                    `json:"exit"`
	Round int                     `json:"round"`
}

// Green reports whether the check ran and passed.
func (s Sync) Green() bool { return s.Exit != nil && *s.Exit == 0 }

// PendingKind is what the person is asked.
type PendingKind string

// The decisions a plan waits for.
const (
	// PendingApproval: the plan card; approve, return or decline.
	PendingApproval PendingKind = "approval"
	// PendingCommand: a command the plan would run needs the person.
	PendingCommand PendingKind = "command"
)

// Pending is the decision a plan waits for, and the commands it covers.
type Pending struct {
	Kind     PendingKind `json:"kind"`
	Commands []string    `json:"commands,omitempty"`
}

// NeedsPerson reports whether the plan waits for the person: on its card
// or for a command.
func (r Record) NeedsPerson() bool { return r.Status == AwaitingApproval || r.Pending != nil }

// Task returns a pointer to the task with id, or nil.
func (r *Record) Task(id string) *Task {
	i := slices.IndexFunc(r.Tasks, func(t Task) bool { return t.ID == id })
	if i < 0 {
		return nil
	}
	return &r.Tasks[i]
}

// NewTasks is the record's tasks for a verified decomposition and its
// waves (Verification.Waves), every one pending.
func NewTasks(d Decomposition, waves [][]string) []Task {
	tasks := make([]Task, 0, len(d.Tasks))
	for _, t := range d.Tasks {
		tasks = append(tasks, Task{
			ID: t.ID, Goal: t.Goal, Scope: slices.Clone(t.Scope), DependsOn: slices.Clone(t.DependsOn),
			Wave: waveOf(waves, t.ID), TestFirst: t.TestFirst, Status: TaskPending,
		})
	}
	return tasks
}

// SkipDependents marks skipped each pending task that depends on a task
// that is blocked or skipped, with the reason "depends on X, which did not
// finish", until none is left to mark, and returns the ids it marked in
// the order it marked them.
func (r *Record) SkipDependents() []string {
	var skipped []string
	for changed := true; changed; {
		changed = false
		for i := range r.Tasks {
			t := &r.Tasks[i]
			if t.Status != TaskPending {
				continue
			}
			for _, dep := range t.DependsOn {
				if d := r.Task(dep); d != nil && (d.Status == TaskBlocked || d.Status == TaskSkipped) {
					t.Status, t.Reason = TaskSkipped, fmt.Sprintf("depends on %s, which did not finish", dep)
					skipped, changed = append(skipped, t.ID), true
					break
				}
			}
		}
	}
	return skipped
}

// Outcome is the status a plan that ran to its end takes: done when every
// task is done and the last sync of every wave is green, partial
// otherwise.
func (r Record) Outcome() Status {
	for _, t := range r.Tasks {
		if t.Status != TaskDone {
			return Partial
		}
	}
	for w := 1; w <= r.Waves; w++ {
		last := -1
		for i, s := range r.Syncs {
			if s.Wave == w {
				last = i
			}
		}
		if last < 0 || !r.Syncs[last].Green() {
			return Partial
		}
	}
	return Done
}

// ErrNotFound is returned when no record has the id asked for.
var ErrNotFound = errors.New("no such plan")

// Find returns the record with id, or an error wrapping ErrNotFound.
func Find(records []Record, id string) (Record, error) {
	for _, r := range records {
		if r.ID == id {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("%w: %s (axlr-tui plans lists the plans)", ErrNotFound, id)
}

// maxIDWords is how many words of the brief a plan's id keeps.
const maxIDWords = 3

// ID names a plan from its brief: the brief's first three words, each
// lower-cased and reduced to its [a-z0-9] characters (a word of none is
// skipped; no word gives "plan"), then the 6 hex digits of random, joined
// by "-" and cut to their last 40 characters, with no dash left in front.
// The result is always a ValidID. The workflow takes random from a side
// effect, so a replay names the plan the same.
func ID(brief string, random [3]byte) string {
	var words []string
	for _, field := range strings.Fields(strings.ToLower(brief)) {
		word := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, field)
		if word != "" {
			words = append(words, word)
		}
		if len(words) == maxIDWords {
			break
		}
	}
	if len(words) == 0 {
		words = []string{"plan"}
	}
	id := strings.Join(append(words, hex.EncodeToString(random[:])), "-")
	if len(id) > 40 {
		id = strings.TrimLeft(id[len(id)-40:], "-")
	}
	return id
}
