package plans

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/ceremonies"
)

// Verification is the console's verdict on a decomposition.
type Verification struct {
	// Decomposition is the one verified, its paths cleaned (CleanPath), its
	// goals' whitespace collapsed and its check programs' trimmed; the plan
	// runs this one.
	Decomposition Decomposition `json:"decomposition"`
	// Waves are the task ids of each wave (Waves), when the structure held.
	Waves [][]string `json:"waves"`
	// Packs[i] is the context pack of Decomposition.Tasks[i], when the
	// structure held and its citations did.
	Packs []string `json:"packs"`
	// Defects are what the planner must fix; none means verified, up to the
	// baseline runs of the commands, which the workflow makes.
	Defects Defects `json:"defects"`
}

// Verified reports whether no defect was found.
func (v Verification) Verified() bool { return len(v.Defects) == 0 }

// Verify checks a decomposition without a model, in two phases; the second
// runs only when the first found no defect.
//
// Structure: 1 to MaxTasks tasks, interfaces of at most MaxInterfaces bytes,
// a summary_en of at most MaxSummary bytes, an e2e_check with a program;
// for each task a slug id, a goal, 1 to MaxScope distinct scope paths, at
// most MaxProtect protected paths none of them in its scope, at most
// MaxCitations citations with a line from 1, every path inside the
// workspace (CleanPath), a unit_check with a program, dependencies named
// once each, and under test_first a scope with a test file and a file that
// is not one (IsTestFile); ids unique, dependencies known and acyclic
// (Waves); and the scopes of the tasks of one wave disjoint, since they run
// one after another in the same workspace.
//
// Citations and packs: each task's context pack (Pack) is built from fsys,
// the workspace: each quote on its line and each pack at most MaxPack
// bytes.
//
// id is the plan's id, which the packs name.
func Verify(id string, d Decomposition, fsys fs.FS) Verification {
	d = normalize(d)
	v := Verification{Decomposition: d}
	v.Defects = structure(d)
	waves, waveDefects := computeWaves(d.Tasks)
	v.Defects = append(v.Defects, waveDefects...)
	if len(waveDefects) == 0 {
		v.Defects = append(v.Defects, overlaps(d.Tasks, waves)...)
	}
	if len(v.Defects) > 0 {
		return v
	}
	v.Waves = waves
	for i := range d.Tasks {
		pack, defects := buildPack(id, d, i, waveOf(waves, d.Tasks[i].ID), fsys)
		v.Packs = append(v.Packs, pack)
		v.Defects = append(v.Defects, defects...)
	}
	if len(v.Defects) > 0 {
		v.Packs = nil
	}
	return v
}

// normalize cleans what verification may clean without changing what the
// planner meant: the paths that are valid, the goals' whitespace and the
// programs' surrounding whitespace. It copies every slice it changes.
func normalize(d Decomposition) Decomposition {
	clean := func(paths []string) []string {
		if paths == nil {
			return nil
		}
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = p
			if c, ok := CleanPath(p); ok {
				out[i] = c
			}
		}
		return out
	}
	command := func(c ceremonies.CheckCommand) ceremonies.CheckCommand {
		return ceremonies.CheckCommand{Program: strings.TrimSpace(c.Program), Args: slices.Clone(c.Args)}
	}
	d.E2ECheck = command(d.E2ECheck)
	d.Tasks = slices.Clone(d.Tasks)
	for i, t := range d.Tasks {
		t.Goal = collapse(t.Goal)
		t.Scope, t.Protect, t.DependsOn = clean(t.Scope), clean(t.Protect), slices.Clone(t.DependsOn)
		t.UnitCheck = command(t.UnitCheck)
		t.Context = slices.Clone(t.Context)
		for j, c := range t.Context {
			if p, ok := CleanPath(c.Path); ok {
				t.Context[j].Path = p
			}
		}
		d.Tasks[i] = t
	}
	return d
}

// structure is the first phase's checks that need neither the waves nor
// the workspace.
func structure(d Decomposition) Defects {
	var ds Defects
	plan := func(format string, args ...any) { ds = append(ds, Defect{Text: fmt.Sprintf(format, args...)}) }
	switch n := len(d.Tasks); {
	case n == 0:
		plan("tasks is empty; propose 1 to %d tasks", MaxTasks)
	case n > MaxTasks:
		plan("%d tasks; propose at most %d and make a second plan for the rest", n, MaxTasks)
	}
	if n := len(d.Interfaces); n > MaxInterfaces {
		plan("interfaces is %d bytes (at most %d); keep only the signatures the tasks share", n, MaxInterfaces)
	}
	switch n := len(d.SummaryEN); {
	case strings.TrimSpace(d.SummaryEN) == "":
		plan("summary_en is empty; summarize the plan in English")
	case n > MaxSummary:
		plan("summary_en is %d bytes (at most %d)", n, MaxSummary)
	}
	if d.E2ECheck.Program == "" {
		plan("e2e_check has no program; give the program and its args separately")
	}
	for i, t := range d.Tasks {
		task := func(format string, args ...any) {
			ds = append(ds, Defect{Tasks: []string{label(d.Tasks, i)}, Text: fmt.Sprintf(format, args...)})
		}
		if !ValidID(t.ID) {
			task("id %q must be a slug: lowercase letters, digits and dashes, starting with a letter or a digit, at most 40 characters", t.ID)
		}
		if t.Goal == "" {
			task("goal is empty; say what the task achieves")
		}
		switch n := len(t.Scope); {
		case n == 0:
			task("scope is empty; list the 1 to %d files the task changes", MaxScope)
		case n > MaxScope:
			task("scope lists %d files; split the task (at most %d)", n, MaxScope)
		}
		paths(task, "scope", t.Scope)
		if n := len(t.Protect); n > MaxProtect {
			task("protect lists %d files (at most %d)", n, MaxProtect)
		}
		paths(task, "protect", t.Protect)
		for _, p := range t.Protect {
			if slices.Contains(t.Scope, p) {
				task("%s is both in its scope and protected; a task may not protect a file it changes", p)
			}
		}
		if n := len(t.Context); n > MaxCitations {
			task("context cites %d places (at most %d); cite the few the task needs", n, MaxCitations)
		}
		for j, c := range t.Context {
			if _, ok := CleanPath(c.Path); !ok {
				task("citation %d: path %q is not inside the workspace; give a path relative to its root, without \"..\"", j+1, c.Path)
			}
			if c.Line < 1 {
				task("citation %d: line %d of %s; lines count from 1", j+1, c.Line, c.Path)
			}
		}
		if t.UnitCheck.Program == "" {
			task("unit_check has no program; give the program and its args separately")
		}
		for k, dep := range t.DependsOn {
			if slices.Index(t.DependsOn, dep) < k && slices.Index(t.DependsOn[k+1:], dep) < 0 {
				task("depends on %s more than once; name it once", dep)
			}
		}
		if t.TestFirst {
			ds = append(ds, testFirst(label(d.Tasks, i), t.Scope)...)
		}
	}
	return ds
}

// paths reports each path of list that is not inside the workspace, or
// that list names twice.
func paths(task func(string, ...any), list string, ps []string) {
	for k, p := range ps {
		if _, ok := CleanPath(p); !ok {
			task("%s path %q is not inside the workspace; give a path relative to its root, without \"..\"", list, p)
			continue
		}
		if slices.Index(ps, p) < k && slices.Index(ps[k+1:], p) < 0 {
			task("%s lists %s more than once", list, p)
		}
	}
}

// testFirst checks the test-first scope rule: a test file to write the
// failing test in, and a file that is not one to make it pass in. A Rust
// source is both.
func testFirst(task string, scope []string) Defects {
	var tests, sources bool
	for _, p := range scope {
		test, source := IsTestFile(p)
		tests, sources = tests || test, sources || source
	}
	var ds Defects
	if !tests {
		ds = append(ds, Defect{Tasks: []string{task}, Text: "test_first needs a test file in its scope to write the failing test in (Go x_test.go, Python test_x.py, JS/TS x.test.ts, Java XTest.java, Ruby x_spec.rb, a file under test/, tests/ or __tests__/, or a Rust source); add one or set test_first to false"})
	}
	if !sources && len(scope) > 0 {
		ds = append(ds, Defect{Tasks: []string{task}, Text: "test_first needs a file in its scope that is not a test, to make the failing test pass in; add it or set test_first to false"})
	}
	return ds
}

// overlaps reports each path two tasks of one wave both have in scope.
func overlaps(tasks []ceremonies.PlanTask, waves [][]string) Defects {
	var ds Defects
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.ID] = i
	}
	for w, ids := range waves {
		owner := map[string]int{}
		for _, id := range ids {
			i := index[id]
			for _, p := range tasks[i].Scope {
				other, taken := owner[p]
				switch {
				case !taken:
					owner[p] = i
				case other != i:
					ds = append(ds, Defect{Tasks: []string{label(tasks, other), label(tasks, i)}, Text: fmt.Sprintf("both change %s in wave %d; give it to one of them or order them with depends_on", p, w+1)})
				}
			}
		}
	}
	return ds
}

// waveOf is the wave, from 1, that holds id; 0 when none does.
func waveOf(waves [][]string, id string) int {
	for w, ids := range waves {
		if slices.Contains(ids, id) {
			return w + 1
		}
	}
	return 0
}
