// Package plans is the domain of axlr's /plan: the decomposition a planner
// hands back, its verification without a model, the waves its dependencies
// give, each task's context pack, the plan record the registry keeps and
// axlr-tui plans prints, the plan's id, and the notes and questions the
// task workers and the sync's reconciliation leave for one another.
//
// A decomposition is decoded strictly (DecodeDecomposition): every object's
// field names match exactly and an unknown one is refused with the names it
// takes. Verify then checks it in the phases the planner is answered in:
// structure first (ids, dependencies and waves, paths, scopes, checks, the
// test-first rule); citations and context packs only when the structure
// had no defect, since they need the workspace. Running the checks once as
// the baseline is the third phase, done by the plan workflow through an
// activity; UnitCheckDidNotRun and E2ECheckDidNotRun word its defects.
// Every defect names its task (or "plan"), and Defects.Messages shows at
// most 12 of them.
//
// Everything here is a pure function of its arguments: no clock, no
// randomness (ID takes its random part), no goroutines, no dependence on
// map order. The only I/O is reading the workspace through the fs.FS that
// Verify and Pack are given; the caller passes (*os.Root).FS() of the
// workspace, so a symbolic link cannot lead a citation out of it, and tests
// pass a fstest.MapFS. The workflows call the rest directly, so a replay
// decides what the first run decided.
//
// What it leaves to callers: running commands, digests and git status,
// the approval card, the registry's storage, and the MADE instances.
package plans
