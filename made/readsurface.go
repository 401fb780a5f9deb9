package made

import (
	"fmt"
	"slices"
	"strings"
)

// The model sees MADE's read surface only (decision D6 of the console's
// product text): the console runs the workflows, so every change to a MADE
// instance or definition is axlrd's, made through its own Engine, and a
// model that reaches MADE as an MCP plugin may only read it.

// ToolPrefix begins the name of every tool made-mcp advertises.
const ToolPrefix = "made_"

// readFamilies are the verbs whose tools only read MADE: made_get_*,
// made_list_*, made_read_*, made_stream_*, made_search_* and
// made_inspect_*. The product text names the families, not the tools, so
// made_stream_deliberation passes though it runs a council deliberation;
// made-mcp serves the council surface from a cluster only, and neither the
// embedded engine nor made-mcp's embedded backend has it.
var readFamilies = []string{"get", "list", "read", "stream", "search", "inspect"}

// readTools are the tools outside those families that the product text
// names as reads: the draft design, validation, explanation and diff, the
// diagram, the report and the journal check. None stores anything:
// made_design_ceremony returns an unpublished draft, the report is
// returned rather than written.
var readTools = []string{
	"made_design_ceremony",
	"made_validate_ceremony_draft",
	"made_explain_ceremony_draft",
	"made_diff_ceremony_definitions",
	"made_render_agentic_system_diagram",
	"made_generate_ceremony_report",
	"made_verify_ceremony_journal",
}

// writeVerbs are the verbs the product text says change MADE, each as the
// refusal says it. A tool is judged by the first word of its name that is
// one: made_apply_ceremony_transition transitions, made_issue_authorization_grant
// grants.
var writeVerbs = map[string]string{
	"start":      "starts",
	"claim":      "claims",
	"complete":   "completes",
	"transition": "transitions",
	"cancel":     "cancels",
	"pause":      "pauses",
	"resume":     "resumes",
	"run":        "runs",
	"approve":    "approves",
	"defer":      "defers",
	"grant":      "grants",
	"revoke":     "revokes",
	"publish":    "publishes",
	"register":   "registers",
	"delete":     "deletes",
	"upload":     "uploads",
}

// readSurface is how a refusal tells the model what it may call instead.
const readSurface = "the model reads MADE through made_get_*, made_list_*, made_read_*, made_stream_*, made_search_*, made_inspect_*, " +
	"the draft design, validation, explanation and diff (made_design_ceremony, made_validate_ceremony_draft, made_explain_ceremony_draft, made_diff_ceremony_definitions), " +
	"the diagram (made_render_agentic_system_diagram), the report (made_generate_ceremony_report) and the journal check (made_verify_ceremony_journal)"

// ModelMayCall reports whether a model may call the MCP tool named tool,
// by MADE's rule: a tool named made_* is MADE's, and a model may call it
// only when it is on MADE's read surface (readFamilies, readTools). Every
// other made_* tool is refused, whether a verb of writeVerbs names what it
// changes or none does (made_record_ceremony_host_handoff, or a tool a
// later MADE adds): a tool is offered only once it is known to read. A
// tool not named made_* is not MADE's and passes. refusal is the sentence
// the model reads when ok is false.
func ModelMayCall(tool string) (ok bool, refusal string) {
	rest, mades := strings.CutPrefix(tool, ToolPrefix)
	if !mades {
		return true, ""
	}
	words := strings.Split(rest, "_")
	if slices.Contains(readFamilies, words[0]) || slices.Contains(readTools, tool) {
		return true, ""
	}
	for _, w := range words {
		if verb, ok := writeVerbs[w]; ok {
			return false, fmt.Sprintf("the console runs workflows: %s %s, a change to MADE that only axlrd makes; %s.", tool, verb, readSurface)
		}
	}
	return false, fmt.Sprintf("the console runs workflows: %s is not on MADE's read surface, and only axlrd changes MADE; %s.", tool, readSurface)
}
