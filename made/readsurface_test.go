package made

import (
	"strings"
	"testing"
)

// TestModelMayCall classifies MADE's real tool names: every tool of
// shared/reference/made.md (made-mcp 0.1.6: §1's embedded listing and §3),
// the rest of 0.1.6's tools/list, the later tools the product text and
// AXLR's tool profiles name, and those made-mcp's fixture backend answers
// today (crates/made-mcp/src/fixture). want is "read", the verb a refusal
// names, or "unknown" for a made_* tool neither read nor named by a verb,
// which is refused too.
func TestModelMayCall(t *testing.T) {
	tests := []struct {
		tool string
		want string
	}{
		// shared/reference/made.md.
		{"made_publish_ceremony_definition", "publishes"},
		{"made_validate_ceremony_draft", "read"},
		{"made_start_published_ceremony", "starts"},
		{"made_get_ceremony_instance", "read"},
		{"made_list_ceremony_instances", "read"},
		{"made_claim_ceremony_step", "claims"},
		{"made_complete_ceremony_step", "completes"},
		{"made_apply_ceremony_transition", "transitions"},
		{"made_approve_ceremony_guard", "approves"},
		{"made_defer_ceremony_guard", "defers"},
		{"made_get_ceremony_definition", "read"},
		{"made_diff_ceremony_definitions", "read"},
		{"made_generate_ceremony_report", "read"},
		{"made_run_ceremony_step", "runs"},
		{"made_start_ceremony", "starts"},
		{"made_run_ceremony", "runs"},
		{"made_request_ceremony_intervention", "unknown"},
		{"made_respond_to_ceremony_intervention", "unknown"},
		{"made_close_ceremony_intervention", "unknown"},
		{"made_assert_ceremony_reason", "unknown"},
		{"made_explain_ceremony_draft", "read"},
		{"made_bind_ceremony_participants", "unknown"},
		{"made_design_ceremony", "read"},
		{"made_discover_capabilities", "unknown"},
		{"made_get_help", "read"},
		// The rest of made-mcp 0.1.6's tools.
		{"made_collect_ceremony_evidence", "unknown"},
		{"made_create_council", "unknown"},
		{"made_delete_contract", "deletes"},
		{"made_delete_council", "deletes"},
		{"made_deliberate", "unknown"},
		{"made_get_deliberation_result", "read"},
		{"made_get_metrics", "read"},
		{"made_get_status", "read"},
		{"made_list_contracts", "read"},
		{"made_list_councils", "read"},
		{"made_orchestrate", "unknown"},
		{"made_process_trigger_event", "unknown"},
		{"made_register_agent", "registers"},
		{"made_register_contract", "registers"},
		{"made_run_council_decision", "runs"},
		{"made_stream_deliberation", "read"},
		{"made_unregister_agent", "unknown"},
		// Later tools: the product text, AXLR's tool profiles and today's
		// fixture backend.
		{"made_inspect_ceremony_resume", "read"},
		{"made_record_ceremony_host_handoff", "unknown"},
		{"made_list_ceremony_definitions", "read"},
		{"made_bind_ceremony_integrator", "unknown"},
		{"made_get_ceremony_integrator_binding", "read"},
		{"made_await_integrator_attention", "unknown"},
		{"made_acknowledge_integrator_attention", "unknown"},
		{"made_list_attention_deliveries", "read"},
		{"made_issue_authorization_grant", "grants"},
		{"made_revoke_authorization_grant", "revokes"},
		{"made_approve_authorization_operation", "approves"},
		{"made_get_authorization_policy", "read"},
		{"made_list_authorization_decisions", "read"},
		{"made_get_budget_report", "read"},
		{"made_list_pending_budget_reservations", "read"},
		{"made_plan_ceremony_successor", "unknown"},
		{"made_start_ceremony_successor", "starts"},
		{"made_pull_ceremony_events", "unknown"},
		{"made_read_ceremony_events", "read"},
		{"made_stream_ceremony", "read"},
		{"made_verify_ceremony_journal", "read"},
		{"made_get_ceremony_transcript", "read"},
		{"made_search_ceremony_instances", "read"},
		{"made_renew_ceremony_step_lease", "unknown"},
		{"made_report_ceremony_agent_status", "unknown"},
		{"made_list_ceremony_agents", "read"},
		{"made_get_ceremony_agent", "read"},
		{"made_pull_ceremony_agent_interventions", "unknown"},
		{"made_acknowledge_ceremony_agent_intervention", "unknown"},
		{"made_get_ceremony_intervention", "read"},
		{"made_list_ceremony_interventions", "read"},
		{"made_get_execution_receipt", "read"},
		{"made_complete_execution_receipt", "completes"},
		{"made_adopt_execution_receipt", "unknown"},
		{"made_inspect_execution_recovery", "read"},
		{"made_pause_ceremony", "pauses"},
		{"made_resume_ceremony", "resumes"},
		{"made_cancel_ceremony", "cancels"},
		{"made_enforce_ceremony_deadlines", "unknown"},
		{"made_prepare_ceremony_children", "unknown"},
		{"made_accept_child_completion", "unknown"},
		{"made_recover_ceremony_children", "unknown"},
		{"made_design_agentic_system", "unknown"},
		{"made_get_agentic_system", "read"},
		{"made_list_agentic_systems", "read"},
		{"made_validate_agentic_system", "unknown"},
		{"made_publish_agentic_system", "publishes"},
		{"made_instantiate_agentic_system", "unknown"},
		{"made_advance_agentic_system_execution", "unknown"},
		{"made_get_agentic_system_execution", "read"},
		{"made_render_agentic_system_diagram", "read"},
		{"made_begin_artifact_upload", "uploads"},
		{"made_put_artifact_chunk", "unknown"},
		{"made_commit_artifact_upload", "uploads"},
		{"made_abort_artifact_upload", "uploads"},
		{"made_get_artifact", "read"},
		{"made_list_artifacts", "read"},
		{"made_read_artifact_chunk", "read"},
		{"made_tombstone_artifact", "unknown"},
		{"made_read_council_events", "read"},
		{"made_get_council_event_cursor", "read"},
		{"made_lease_council_events", "unknown"},
		{"made_acknowledge_council_events", "unknown"},
		{"made_release_council_events", "unknown"},
		// Not MADE's: another server's tools pass, whatever they do.
		{"echo", "read"},
		{"kmp_write_memory", "read"},
		{"start_ceremony", "read"},
		{"made", "read"},
		// MADE's namespace with nothing known after it.
		{"made_", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ok, refusal := ModelMayCall(tt.tool)
			switch {
			case tt.want == "read":
				if !ok || refusal != "" {
					t.Fatalf("refused: %q", refusal)
				}
			case ok:
				t.Fatalf("passes; want it refused (%s)", tt.want)
			case tt.want == "unknown":
				if want := "the console runs workflows: " + tt.tool + " is not on MADE's read surface, and only axlrd changes MADE; "; !strings.HasPrefix(refusal, want) {
					t.Fatalf("refusal %q, want it to begin %q", refusal, want)
				}
			default:
				if want := "the console runs workflows: " + tt.tool + " " + tt.want + ", a change to MADE that only axlrd makes; "; !strings.HasPrefix(refusal, want) {
					t.Fatalf("refusal %q, want it to begin %q", refusal, want)
				}
			}
			if !ok && !strings.HasSuffix(refusal, "the model reads MADE through made_get_*, made_list_*, made_read_*, made_stream_*, made_search_*, made_inspect_*, "+
				"the draft design, validation, explanation and diff (made_design_ceremony, made_validate_ceremony_draft, made_explain_ceremony_draft, made_diff_ceremony_definitions), "+
				"the diagram (made_render_agentic_system_diagram), the report (made_generate_ceremony_report) and the journal check (made_verify_ceremony_journal).") {
				t.Fatalf("refusal %q does not name the read surface", refusal)
			}
		})
	}
}
