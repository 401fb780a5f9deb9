package workflows

import (
	"cmp"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
)

// about is the job's memory about: repair.about, else the repository's.
func (j *jobRun) about() string {
	return cmp.Or(j.in.Settings.About, RepositoryAbout(j.st.Record.Repository))
}

// labels are the labels of every memory the job writes.
func (j *jobRun) labels() map[string][]string {
	r := j.st.Record
	kind := map[jobs.Kind]string{jobs.Repair: "repair", jobs.Improve: "improvement"}[r.Kind]
	return map[string][]string{
		"ceremony":   {r.Kind.Definition()},
		kind:         {r.ID},
		"repository": {r.Repository},
		"session":    {j.in.SessionID},
		"ws":         {SessionAbout(j.in.SessionID)},
	}
}

// remember records how the job ended, following its cause: a
// success_path with the pull request, its merge and the files it changed,
// or an observation of why it stopped; then it writes what waits in the
// job session's sidecar.
func (j *jobRun) remember(ctx workflow.Context) error {
	c := j.st.Ceremony
	if c == nil || c.Memory == nil {
		return nil
	}
	m, r := c.Memory, j.st.Record
	name := c.Definition + " " + c.Version
	kind, summary := kmp.KindObservation, fmt.Sprintf("%s ended %s at step %s: %s", name, r.Status, cmp.Or(c.Step, c.State), cmp.Or(r.Reason, "no reason given"))
	if r.Status == jobs.Completed {
		changed := map[jobs.Kind]string{jobs.Repair: "repair", jobs.Improve: "build"}[r.Kind]
		done := cmp.Or(c.recordedText(changed, "summary_en"), c.recordedText(changed, "summary"), firstLine(r.Brief))
		kind, summary = kmp.KindSuccessPath, fmt.Sprintf("%s ended %s: %s (pull request #%d merged as %s)", name, c.State, done, r.PullRequest, shortHead(r.MergeSHA))
	}
	var ev []string
	if r.PullRequest > 0 {
		ev = append(ev, fmt.Sprintf("pull request: #%d %s", r.PullRequest, r.URL))
	}
	if r.MergeSHA != "" {
		ev = append(ev, "merge: "+r.MergeSHA)
	}
	if len(r.Files) > 0 {
		ev = append(ev, "files: "+strings.Join(r.Files, ", "))
	}
	for _, rec := range c.Records {
		if ch := rec.Check; ch != nil && ch.Program != "" {
			ev = append(ev, fmt.Sprintf("check at %s: %s", rec.Step, checkLine(*ch)))
		}
		if passed, ok := rec.Output["passed"].([]string); ok && len(passed) > 0 {
			ev = append(ev, fmt.Sprintf("checks passed at %s: %s", rec.Step, strings.Join(passed, ", ")))
		}
		if failed, ok := rec.Output["failed"].([]string); ok && len(failed) > 0 {
			ev = append(ev, fmt.Sprintf("checks failed at %s: %s", rec.Step, strings.Join(failed, ", ")))
		}
	}
	ev = append(ev, fmt.Sprintf("instance %s ended in %s", c.InstanceID, c.State))
	mem := kmp.Memory{ID: "outcome", Kind: kind, Summary: jobs.Bound(summary, 1000), Evidence: strings.Join(ev, "\n")}
	if m.Cause != "" {
		why := "how the work on this cause ended"
		if kind == kmp.KindSuccessPath {
			why = "the merged change fixes this cause"
		}
		mem.ConnectTo = []kmp.Link{{Ref: m.Cause, Rel: "follows", Why: why, Evidence: cmp.Or(r.MergeSHA, c.InstanceID), Confidence: "medium"}}
	}
	labels := m.Labels
	if r.PullRequest > 0 {
		labels = map[string][]string{"pull_request": {fmt.Sprint(r.PullRequest)}}
		//workflowcheck:ignore copying a map into a map does not depend on the order
		for k, v := range m.Labels {
			labels[k] = v
		}
	}
	res, err := j.driver.writeMemory(ctx, kmp.WriteRequest{About: m.About, Actor: memoryActor, Labels: labels,
		IdempotencyKey: memoryKey(ctx, "outcome", r.Recoveries+1), Memories: []kmp.Memory{mem}})
	if err != nil {
		return err
	}
	m.Reports = append(m.Reports, res.Report("outcome"))
	var flushed MemoryFlushResult
	if err := executeActivity(ctx, MemoryOptions, ActivityMemoryFlush, MemoryFlushInput{SessionID: j.in.SessionID}, &flushed); err != nil {
		return fmt.Errorf("write the memory sidecar: %w", err)
	}
	j.st.Record.Memory = m.Reports
	return nil
}
