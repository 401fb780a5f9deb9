package workflows

// SignalJobOutcome tells the session a job was asked from (its origin
// session) how the job ended; the session's next prompt carries the note
// once. JobOutcome is its payload.
const SignalJobOutcome = "job-outcome"

// JobOutcome is how a job ended, for its origin session.
type JobOutcome struct {
	Job         string `json:"job"`
	Kind        string `json:"kind"`
	Status      string `json:"status"`
	PullRequest int    `json:"pull_request,omitempty"`
	URL         string `json:"url,omitempty"`
	MergeSHA    string `json:"merge_sha,omitempty"`
	Reason      string `json:"reason,omitempty"`
}
