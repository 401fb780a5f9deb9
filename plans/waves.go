package plans

import (
	"fmt"
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/ceremonies"
)

// Waves orders tasks by their dependencies. A task's wave is one more than
// the latest wave of the tasks it depends on, so the first wave holds the
// tasks that depend on none; within a wave the tasks keep their order in
// tasks. Waves[w] lists the ids of wave w+1.
//
// It refuses, with Defects, ids used by more than one task, a dependency on
// an unknown task or on the task itself, and dependencies that form a
// cycle, each cycle named once with the way round it.
func Waves(tasks []ceremonies.PlanTask) ([][]string, error) {
	waves, defects := computeWaves(tasks)
	if len(defects) > 0 {
		return nil, defects
	}
	return waves, nil
}

// label names task i of tasks in a defect: its id, or #i+1 when the id is
// not a slug.
func label(tasks []ceremonies.PlanTask, i int) string {
	if ValidID(tasks[i].ID) {
		return tasks[i].ID
	}
	return fmt.Sprintf("#%d", i+1)
}

func computeWaves(tasks []ceremonies.PlanTask) ([][]string, Defects) {
	var defects Defects
	index := make(map[string]int, len(tasks))
	count := make(map[string]int, len(tasks))
	for i, t := range tasks {
		if _, seen := index[t.ID]; !seen {
			index[t.ID] = i
		}
		count[t.ID]++
	}
	for i, t := range tasks {
		if index[t.ID] == i && count[t.ID] > 1 {
			defects = append(defects, Defect{Tasks: []string{label(tasks, i)}, Text: fmt.Sprintf("%d tasks have this id; give each task its own", count[t.ID])})
		}
	}
	// deps[i] are the distinct indices task i depends on, itself and
	// unknown tasks left out (each reported).
	deps := make([][]int, len(tasks))
	for i, t := range tasks {
		for k, dep := range t.DependsOn {
			if slices.Index(t.DependsOn, dep) < k {
				continue // named again; reported by Verify
			}
			j, known := index[dep]
			switch {
			case !known:
				defects = append(defects, Defect{Tasks: []string{label(tasks, i)}, Text: fmt.Sprintf("depends on unknown task %q; depend only on ids of this plan", dep)})
			case dep == t.ID:
				defects = append(defects, Defect{Tasks: []string{label(tasks, i)}, Text: "depends on itself; remove it from its depends_on"})
			default:
				deps[i] = append(deps[i], j)
			}
		}
	}
	wave := make([]int, len(tasks)) // 0: not placed yet
	placed := 0
	for w := 1; placed < len(tasks); w++ {
		var ready []int
		for i := range tasks {
			if wave[i] == 0 && !slices.ContainsFunc(deps[i], func(j int) bool { return wave[j] == 0 }) {
				ready = append(ready, i)
			}
		}
		if len(ready) == 0 {
			defects = append(defects, cycles(tasks, deps, wave)...)
			break
		}
		for _, i := range ready {
			wave[i] = w
		}
		placed += len(ready)
	}
	if len(defects) > 0 {
		return nil, defects
	}
	var waves [][]string
	for i, t := range tasks {
		for len(waves) < wave[i] {
			waves = append(waves, nil)
		}
		waves[wave[i]-1] = append(waves[wave[i]-1], t.ID)
	}
	return waves, nil
}

// cycles reports each cycle among the tasks not placed in a wave once: the
// tasks of its strongly connected component, and the shortest way round it
// from the first of them. A task left unplaced only because it depends on
// a cycle is not reported; breaking the cycle places it.
func cycles(tasks []ceremonies.PlanTask, deps [][]int, wave []int) Defects {
	var defects Defects
	reach := func(from int) []bool {
		seen := make([]bool, len(tasks))
		stack := []int{from}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, j := range deps[i] {
				if wave[j] == 0 && !seen[j] {
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		return seen
	}
	reaches := make([][]bool, len(tasks))
	for i := range tasks {
		if wave[i] == 0 {
			reaches[i] = reach(i)
		}
	}
	reported := make([]bool, len(tasks))
	for s := range tasks {
		if wave[s] != 0 || reported[s] || !reaches[s][s] {
			continue
		}
		var members []string
		inCycle := make([]bool, len(tasks))
		for j := range tasks {
			if wave[j] == 0 && reaches[s][j] && reaches[j][s] {
				inCycle[j], reported[j] = true, true
				members = append(members, label(tasks, j))
			}
		}
		defects = append(defects, Defect{Tasks: members, Text: "their dependencies form a cycle: " + wayRound(tasks, deps, inCycle, s) + "; remove one of these dependencies"})
	}
	return defects
}

// wayRound is the shortest cycle from s through the tasks in inCycle, as
// "a depends on b, b on c, c on a".
func wayRound(tasks []ceremonies.PlanTask, deps [][]int, inCycle []bool, s int) string {
	parent := make([]int, len(tasks))
	for i := range parent {
		parent[i] = -1
	}
	queue := []int{s}
	last := -1
	for len(queue) > 0 && last < 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range deps[i] {
			if j == s {
				last = i
				break
			}
			if inCycle[j] && parent[j] < 0 {
				parent[j] = i
				queue = append(queue, j)
			}
		}
	}
	path := []int{last}
	for path[0] != s {
		path = slices.Insert(path, 0, parent[path[0]])
	}
	path = append(path, s)
	steps := make([]string, 0, len(path)-1)
	for k := 0; k+1 < len(path); k++ {
		if k == 0 {
			steps = append(steps, label(tasks, path[k])+" depends on "+label(tasks, path[k+1]))
		} else {
			steps = append(steps, label(tasks, path[k])+" on "+label(tasks, path[k+1]))
		}
	}
	return strings.Join(steps, ", ")
}
