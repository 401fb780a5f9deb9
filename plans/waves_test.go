package plans

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/ceremonies"
)

// specs builds tasks from "id:dep,dep" entries.
func specs(entries ...string) []ceremonies.PlanTask {
	var out []ceremonies.PlanTask
	for _, e := range entries {
		id, deps, _ := strings.Cut(e, ":")
		t := ceremonies.PlanTask{ID: id}
		if deps != "" {
			t.DependsOn = strings.Split(deps, ",")
		}
		out = append(out, t)
	}
	return out
}

func TestWaves(t *testing.T) {
	tests := []struct {
		name    string
		tasks   []ceremonies.PlanTask
		want    [][]string
		defects []string
	}{
		{"none", nil, nil, nil},
		{"one", specs("a"), [][]string{{"a"}}, nil},
		{"independent keep their order", specs("b", "a", "c"), [][]string{{"b", "a", "c"}}, nil},
		{"chain", specs("c:b", "b:a", "a"), [][]string{{"a"}, {"b"}, {"c"}}, nil},
		{"diamond", specs("a", "b:a", "c:a", "d:b,c"), [][]string{{"a"}, {"b", "c"}, {"d"}}, nil},
		{"longest path decides", specs("a", "b:a", "c:a,b"), [][]string{{"a"}, {"b"}, {"c"}}, nil},
		{"dependency named twice", specs("a", "b:a,a"), [][]string{{"a"}, {"b"}}, nil},
		{"unknown", specs("a", "b:a,zed"), nil, []string{`task b: depends on unknown task "zed"; depend only on ids of this plan`}},
		{"unknown named twice", specs("a:zed,zed"), nil, []string{`task a: depends on unknown task "zed"; depend only on ids of this plan`}},
		{"itself", specs("a:a"), nil, []string{"task a: depends on itself; remove it from its depends_on"}},
		{"two-cycle", specs("a:b", "b:a"), nil,
			[]string{"tasks a and b: their dependencies form a cycle: a depends on b, b on a; remove one of these dependencies"}},
		{"three-cycle and a dependant", specs("x", "a:c", "b:a", "c:b", "d:a"), nil,
			[]string{"tasks a, b and c: their dependencies form a cycle: a depends on c, c on b, b on a; remove one of these dependencies"}},
		{"shortest way round", specs("a:b", "b:c,a", "c:a"), nil,
			[]string{"tasks a, b and c: their dependencies form a cycle: a depends on b, b on a; remove one of these dependencies"}},
		{"two cycles", specs("a:b", "b:a", "c:d", "d:c"), nil, []string{
			"tasks a and b: their dependencies form a cycle: a depends on b, b on a; remove one of these dependencies",
			"tasks c and d: their dependencies form a cycle: c depends on d, d on c; remove one of these dependencies",
		}},
		{"duplicate ids", specs("a", "b", "a", "a"), nil, []string{"task a: 3 tasks have this id; give each task its own"}},
		{"bad id labelled by position", specs("a", "B:q"), nil, []string{`task #2: depends on unknown task "q"; depend only on ids of this plan`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Waves(tt.tasks)
			if tt.defects == nil {
				if err != nil || !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("waves %v, %v; want %v", got, err, tt.want)
				}
				return
			}
			var ds Defects
			if !errors.As(err, &ds) || got != nil {
				t.Fatalf("waves %v, error %v (%T); want defects", got, err, err)
			}
			if msgs := ds.Messages(); !reflect.DeepEqual(msgs, tt.defects) {
				t.Fatalf("defects\n got %q\nwant %q", msgs, tt.defects)
			}
		})
	}
}

// FuzzWaves builds up to 16 tasks whose dependencies come from the input's
// bytes (the first is the count) and checks Waves against a direct reading of the graph: it refuses
// exactly the graphs with an unknown dependency or a cycle (found by
// reachability, not by layering), and otherwise places every task in
// exactly one wave, after every task it depends on and right after the
// latest of them, each wave in task order.
func FuzzWaves(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0})                   // t1 depends on t0
	f.Add([]byte{1, 2, 0, 0, 1, 0, 0})                   // t0 and t1 depend on each other
	f.Add([]byte{0, 1, 0, 0})                            // t0 depends on itself
	f.Add([]byte{2, 0, 0, 1, 1, 0, 0, 3, 0, 0})          // an unknown dependency
	f.Add([]byte{3, 0, 0, 0, 1, 0, 0, 1, 0, 0, 6, 0, 0}) // a diamond
	f.Add([]byte{15, 0xff, 0xff, 0})                     // t0 depends on all sixteen, itself too
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := int(data[0]%16) + 1
		data = data[1:]
		// Each task takes three bytes: the tasks it depends on as a bit set
		// (bit k of the first two bytes, little-endian, is task k), and a
		// third whose bit 0 adds a dependency on an unknown task.
		tasks := make([]ceremonies.PlanTask, n)
		adj := make([][]bool, n)
		unknown := false
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		for i := range n {
			tasks[i].ID = fmt.Sprintf("t%d", i)
			adj[i] = make([]bool, n)
			bits := uint16(next()) | uint16(next())<<8
			for k := range n {
				if bits&(1<<k) != 0 {
					tasks[i].DependsOn = append(tasks[i].DependsOn, fmt.Sprintf("t%d", k))
					adj[i][k] = true
				}
			}
			if next()&1 != 0 {
				tasks[i].DependsOn = append(tasks[i].DependsOn, "nope")
				unknown = true
			}
		}
		// reach[i][k]: k is reachable from i through dependencies.
		reach := make([][]bool, n)
		for i := range n {
			reach[i] = slices.Clone(adj[i])
		}
		for k := range n {
			for i := range n {
				for j := range n {
					if reach[i][k] && reach[k][j] {
						reach[i][j] = true
					}
				}
			}
		}
		cyclic := false
		for i := range n {
			cyclic = cyclic || reach[i][i]
		}

		waves, err := Waves(tasks)
		if unknown || cyclic {
			var ds Defects
			if !errors.As(err, &ds) || len(ds) == 0 || waves != nil {
				t.Fatalf("unknown %v cyclic %v: waves %v, error %v", unknown, cyclic, waves, err)
			}
			// Exactly the tasks on a cycle are named in the cycles reported.
			named := make([]bool, n)
			for _, d := range ds {
				if len(d.Tasks) > 1 || d.Text == "depends on itself; remove it from its depends_on" {
					for _, id := range d.Tasks {
						var i int
						fmt.Sscanf(id, "t%d", &i)
						named[i] = true
					}
				}
			}
			for i := range n {
				if named[i] != reach[i][i] {
					t.Fatalf("t%d on a cycle %v, named in one %v: %v", i, reach[i][i], named[i], ds.Messages())
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("acyclic graph refused: %v", err)
		}
		wave := make([]int, n)
		for w, ids := range waves {
			if len(ids) == 0 {
				t.Fatalf("wave %d is empty: %v", w+1, waves)
			}
			prev := -1
			for _, id := range ids {
				var i int
				fmt.Sscanf(id, "t%d", &i)
				if wave[i] != 0 {
					t.Fatalf("%s in waves %d and %d", id, wave[i], w+1)
				}
				if i <= prev {
					t.Fatalf("wave %d out of task order: %v", w+1, ids)
				}
				wave[i], prev = w+1, i
			}
		}
		for i := range n {
			if wave[i] == 0 {
				t.Fatalf("t%d in no wave: %v", i, waves)
			}
			latest := 0
			for k := range n {
				if adj[i][k] {
					if wave[k] >= wave[i] {
						t.Fatalf("t%d (wave %d) depends on t%d (wave %d)", i, wave[i], k, wave[k])
					}
					latest = max(latest, wave[k])
				}
			}
			if wave[i] != latest+1 {
				t.Fatalf("t%d in wave %d, its latest dependency in %d", i, wave[i], latest)
			}
		}
	})
}
