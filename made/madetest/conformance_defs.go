package madetest

import "fmt"

// ChangeReviewYAML is the reference's worked example (§8); engine tests
// outside the suite drive it too.
const ChangeReviewYAML = `version: "1.0"
name: "change_review"
description: "Draft a change, review it, release it with human sign-off"
inputs: {required: [change_ref]}
outputs: {review_report: {}}
states:
  - {id: DRAFTING, initial: true}
  - {id: REVIEWING}
  - {id: RELEASED, terminal: true}
  - {id: CANCELLED, terminal: true}
transitions:
  - {from: DRAFTING, to: REVIEWING, trigger: submit, guards: [draft_done]}
  - {from: REVIEWING, to: RELEASED, trigger: release, guards: [review_done, release_approved]}
  - {from: DRAFTING, to: CANCELLED, trigger: cancel}
  - {from: REVIEWING, to: CANCELLED, trigger: cancel}
steps:
  - {id: draft, state: DRAFTING, handler: host_callback}
  - {id: review, state: REVIEWING, handler: host_callback, config: {instructions: "Review the draft"}}
guards:
  draft_done: {type: automated, check: "step_status:draft:COMPLETED"}
  review_done: {type: automated, check: "step_status:review:COMPLETED"}
  release_approved: {type: human, check: manual_approval}
roles:
  - {id: AUTHOR, allowed_actions: [draft, submit, cancel]}
  - {id: REVIEWER, allowed_actions: [review, release]}
timeouts: {step_default: 300}
retry_policies: {default: {max_attempts: 2, backoff_seconds: 1}}
`

// changeReviewDigest is §7's digest of ChangeReviewYAML.
const changeReviewDigest = "50d223ceb02cf197cf44777a6dfa84c401f1315a7ecf2a0a59561eb61c469477"

// publishableYAML is made-mcp's own publication test definition.
const publishableYAML = `
version: "1.0"
name: "publishable_ceremony"
states:
  - id: OPEN
    initial: true
  - id: DONE
    terminal: true
transitions:
  - from: OPEN
    to: DONE
    trigger: finish
steps:
  - id: work
    state: OPEN
    handler: embedded_noop
roles:
  - id: FACILITATOR
    allowed_actions:
      - work
      - finish
`

// publishableDigest is §7's digest of publishableYAML.
const publishableDigest = "94869a3c73c3acd5df459153f2851b0b66702c3ee2250f80f2e28c9497baa718"

// publishableReformattedYAML says the same as publishableYAML in another
// layout, key order and with comments: the same digest.
const publishableReformattedYAML = `# the same ceremony
name: publishable_ceremony
version: "1.0"
roles: [{allowed_actions: [finish, work], id: FACILITATOR}]
steps: [{handler: embedded_noop, state: OPEN, id: work}]
transitions: [{trigger: finish, to: DONE, from: OPEN}]
states: [{id: DONE, terminal: true}, {id: OPEN, initial: true}]
`

// alteredYAML is the same name and version with another graph.
const alteredYAML = `
version: "1.0"
name: "publishable_ceremony"
states:
  - {id: OPEN, initial: true}
  - {id: CANCELLED, terminal: true}
transitions:
  - {from: OPEN, to: CANCELLED, trigger: finish}
steps:
  - {id: work, state: OPEN, handler: embedded_noop}
roles:
  - {id: FACILITATOR, allowed_actions: [work, finish]}
`

// limitsYAML bounces between A and B; work runs in A.
func limitsYAML(version string, maxTransitions, maxBounces int) string {
	return fmt.Sprintf(`version: %q
name: limits_check
states:
  - {id: A, initial: true}
  - {id: B}
  - {id: DONE, terminal: true}
transitions:
  - {from: A, to: B, trigger: forth}
  - {from: B, to: A, trigger: back}
  - {from: B, to: DONE, trigger: finish}
steps:
  - {id: work, state: A, handler: host_callback}
roles:
  - {id: DRIVER, allowed_actions: [work, forth, back, finish]}
max_transitions: %d
max_bounces: %d
`, version, maxTransitions, maxBounces)
}

// reviewRoundsYAML repeats REVIEW until the review is accepted, twice at
// most.
const reviewRoundsYAML = `version: "1.0"
name: review_rounds
states:
  - id: REVIEW
    initial: true
    repeat: {max_iterations: 2, until: {step: review, output_field: accepted, equals: true}}
  - {id: DONE, terminal: true}
  - {id: BLOCKED, terminal: true}
transitions:
  - {from: REVIEW, to: DONE, trigger: reviewed, guards: [review_completed, review_accepted]}
  - {from: REVIEW, to: BLOCKED, trigger: review_exhausted, guards: [rounds_exhausted]}
steps:
  - {id: revise, state: REVIEW, handler: host_callback}
  - {id: review, state: REVIEW, handler: host_callback}
guards:
  review_completed: {type: automated, check: "step_status:review:COMPLETED"}
  review_accepted: {type: automated, check: "output_field:review:accepted=true"}
  rounds_exhausted: {type: automated, check: "state_repeat_exhausted:REVIEW"}
roles:
  - {id: EDITOR, allowed_actions: [revise, review, reviewed, review_exhausted]}
`

// typedGuardsYAML has one output_field guard per JSON type; inspect
// repeats until done is the boolean true, so one instance sees several
// outputs.
const typedGuardsYAML = `version: "1.0"
name: typed_guards
states:
  - {id: CHECK, initial: true}
  - {id: BOOL, terminal: true}
  - {id: TEXT, terminal: true}
  - {id: NUMBER, terminal: true}
transitions:
  - {from: CHECK, to: BOOL, trigger: as_bool, guards: [flag_true]}
  - {from: CHECK, to: TEXT, trigger: as_text, guards: [verdict_approve]}
  - {from: CHECK, to: NUMBER, trigger: as_number, guards: [count_three]}
steps:
  - id: inspect
    state: CHECK
    handler: host_callback
    repeat: {max_iterations: 5, until: {output_field: done, equals: true}}
guards:
  flag_true: {type: automated, check: "output_field:inspect:flag=true"}
  verdict_approve: {type: automated, check: "output_field:inspect:verdict=approve"}
  count_three: {type: automated, check: "output_field:inspect:count=3"}
roles:
  - {id: CHECKER, allowed_actions: [inspect, as_bool, as_text, as_number]}
`
