package plans

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/underpass-ai/axlr/ceremonies"
)

// numbered is a file of n lines, "// line k of name" each.
func numbered(name string, n int) string {
	var b strings.Builder
	for k := 1; k <= n; k++ {
		fmt.Fprintf(&b, "// line %d of %s\n", k, name)
	}
	return b.String()
}

// lines is lines first to last of numbered(name, …), each ending in \n.
func lines(name string, first, last int) string {
	var b strings.Builder
	for k := first; k <= last; k++ {
		fmt.Fprintf(&b, "// line %d of %s\n", k, name)
	}
	return b.String()
}

const calcGo = `package calc

// Min returns the smaller of a and b.
func Min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
`

func workspace() fstest.MapFS {
	return fstest.MapFS{
		"calc/calc.go":      {Data: []byte(calcGo)},
		"calc/calc_test.go": {Data: []byte("package calc\n")},
		"main.go":           {Data: []byte("package main\n\nfunc main() {}\n")},
		"go.mod":            {Data: []byte("module example.com/calc\n")},
		"big.go":            {Data: []byte(numbered("big.go", 200))},
		"other.go":          {Data: []byte(numbered("other.go", 30))},
	}
}

// calcPlan is a verified two-task plan over workspace().
func calcPlan() Decomposition {
	return Decomposition{
		Tasks: []ceremonies.PlanTask{
			{
				ID: "add-max", Goal: "Add Max to calc,\n  beside Min.", Scope: []string{"calc/calc.go", "calc/calc_test.go", "calc/max.go"},
				Context:   []ceremonies.Citation{{Path: "calc/calc.go", Line: 4, Quote: "func Min(a,   b int) int"}},
				UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "-run", "TestMax", "./calc"}},
				TestFirst: true, Protect: []string{"go.mod"},
			},
			{
				ID: "use-max", Goal: "Print Max(2, 3) in main.", Scope: []string{"main.go"},
				UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"build", "./..."}}, DependsOn: []string{"add-max"},
			},
		},
		E2ECheck:   ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}},
		Interfaces: "  func Max(a, b int) int\n",
		SummaryEN:  "Add Max and print it.",
	}
}

func TestPack(t *testing.T) {
	got, err := Pack("add-max-to-a1b2c3", calcPlan(), "add-max", workspace())
	if err != nil {
		t.Fatal(err)
	}
	want := "Task add-max of plan add-max-to-a1b2c3, wave 1: Add Max to calc, beside Min.\n" +
		"Scope (the only files you may change): calc/calc.go, calc/calc_test.go, calc/max.go (new)\n" +
		"Unit check: go test -run TestMax ./calc\n" +
		"Test first: write a test in calc/calc_test.go that fails, and see the unit check fail, before you change the code; then make it pass.\n" +
		"Do not change: go.mod\n" +
		"Interfaces shared by the plan:\nfunc Max(a, b int) int\n" +
		"--- calc/calc.go:1-9 ---\n" + calcGo
	if got != want {
		t.Fatalf("pack\n got %q\nwant %q", got, want)
	}

	got, err = Pack("add-max-to-a1b2c3", calcPlan(), "use-max", workspace())
	if err != nil {
		t.Fatal(err)
	}
	want = "Task use-max of plan add-max-to-a1b2c3, wave 2: Print Max(2, 3) in main.\n" +
		"Scope (the only files you may change): main.go\n" +
		"Unit check: go build ./...\n" +
		"Interfaces shared by the plan:\nfunc Max(a, b int) int\n"
	if got != want {
		t.Fatalf("pack\n got %q\nwant %q", got, want)
	}
}

func TestPackRegions(t *testing.T) {
	cite := func(path string, line int) ceremonies.Citation {
		return ceremonies.Citation{Path: path, Line: line, Quote: fmt.Sprintf("line %d of %s", line, path)}
	}
	tests := []struct {
		name    string
		context []ceremonies.Citation
		want    string
	}{
		{"margin clamped at the start", []ceremonies.Citation{cite("big.go", 5)},
			"--- big.go:1-25 ---\n" + lines("big.go", 1, 25)},
		{"margin clamped at the end", []ceremonies.Citation{cite("big.go", 195)},
			"--- big.go:175-200 ---\n" + lines("big.go", 175, 200)},
		{"margin both sides", []ceremonies.Citation{cite("big.go", 100)},
			"--- big.go:80-120 ---\n" + lines("big.go", 80, 120)},
		{"overlapping merged", []ceremonies.Citation{cite("big.go", 100), cite("big.go", 90)},
			"--- big.go:70-120 ---\n" + lines("big.go", 70, 120)},
		{"touching merged", []ceremonies.Citation{cite("big.go", 10), cite("big.go", 51)},
			"--- big.go:1-71 ---\n" + lines("big.go", 1, 71)},
		{"apart kept apart, in line order", []ceremonies.Citation{cite("big.go", 100), cite("big.go", 10)},
			"--- big.go:1-30 ---\n" + lines("big.go", 1, 30) + "--- big.go:80-120 ---\n" + lines("big.go", 80, 120)},
		{"one inside another", []ceremonies.Citation{cite("big.go", 100), cite("big.go", 100), cite("big.go", 101)},
			"--- big.go:80-121 ---\n" + lines("big.go", 80, 121)},
		{"files in the order first cited", []ceremonies.Citation{cite("other.go", 3), cite("big.go", 150), cite("other.go", 29)},
			"--- other.go:1-30 ---\n" + lines("other.go", 1, 30) + "--- big.go:130-170 ---\n" + lines("big.go", 130, 170)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := calcPlan()
			d.Tasks[1].Context = tt.context
			got, err := Pack("p", d, "use-max", workspace())
			if err != nil {
				t.Fatal(err)
			}
			_, regions, _ := strings.Cut(got, "func Max(a, b int) int\n")
			if regions != tt.want {
				t.Fatalf("regions\n got %q\nwant %q", regions, tt.want)
			}
		})
	}
}

// trickyFS is a workspace whose file operations fail as a disk, a
// permission or a file changing under the reader would: opening a name in
// openFails fails with a *fs.PathError, its Stat with a bare error when in
// statFails, and statAs makes Stat of one name describe another.
type trickyFS struct {
	files     fstest.MapFS
	openFails []string
	statFails []string
	statAs    map[string]string
}

func (f trickyFS) Open(name string) (fs.File, error) {
	if slices.Contains(f.openFails, name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("input/output error")}
	}
	return f.files.Open(name)
}

func (f trickyFS) Stat(name string) (fs.FileInfo, error) {
	if slices.Contains(f.statFails, name) {
		return nil, errors.New("stale file handle")
	}
	if as, ok := f.statAs[name]; ok {
		return f.files.Stat(as)
	}
	return f.files.Stat(name)
}

func TestPackDefects(t *testing.T) {
	files := workspace()
	files["empty.go"] = &fstest.MapFile{}
	files["blank.go"] = &fstest.MapFile{Data: []byte("\n")}
	files["bin.dat"] = &fstest.MapFile{Data: []byte("PK\x00\x03 some binary data here")}
	files["latin1.txt"] = &fstest.MapFile{Data: []byte("caf\xe9 au lait is served here\n")}
	files["huge.txt"] = &fstest.MapFile{Data: []byte(strings.Repeat("x", MaxCitedFile+1))}
	files["dir/inner.go"] = &fstest.MapFile{Data: []byte("package dir\n")}
	files["broken.go"] = &fstest.MapFile{Data: []byte("package broken\n")}
	files["stale.go"] = &fstest.MapFile{Data: []byte("package stale\n")}
	files["grown.txt"] = &fstest.MapFile{Data: []byte(strings.Repeat("y", MaxCitedFile+1))}
	fsys := trickyFS{files: files, openFails: []string{"broken.go"}, statFails: []string{"stale.go"}, statAs: map[string]string{"grown.txt": "main.go"}}

	tests := []struct {
		name    string
		scope   []string
		context []ceremonies.Citation
		want    []string
	}{
		{"missing file", nil, []ceremonies.Citation{{Path: "nope.go", Line: 1, Quote: "package nope here"}},
			[]string{"task use-max: citation 1: cited file nope.go does not exist; cite a file of the workspace"}},
		{"directory cited", nil, []ceremonies.Citation{{Path: "dir", Line: 1, Quote: "package dir here"}},
			[]string{"task use-max: citation 1: cited path dir is a directory; cite a line of a file"}},
		{"not text", nil, []ceremonies.Citation{{Path: "bin.dat", Line: 1, Quote: "some binary data"}},
			[]string{"task use-max: citation 1: cited file bin.dat is not text; cite a source file"}},
		{"not UTF-8", nil, []ceremonies.Citation{{Path: "latin1.txt", Line: 1, Quote: "au lait is served"}},
			[]string{"task use-max: citation 1: cited file latin1.txt is not text; cite a source file"}},
		{"too big", nil, []ceremonies.Citation{{Path: "huge.txt", Line: 1, Quote: "xxxxxxxxxxxxxxxx"}},
			[]string{"task use-max: citation 1: cited file huge.txt is 1048577 bytes; cite files of at most 1048576 bytes"}},
		{"unreadable", nil, []ceremonies.Citation{{Path: "broken.go", Line: 1, Quote: "package broken"}},
			[]string{"task use-max: citation 1: cited file broken.go cannot be read: input/output error"}},
		{"no stat", nil, []ceremonies.Citation{{Path: "stale.go", Line: 1, Quote: "package stale"}},
			[]string{"task use-max: citation 1: cited file stale.go cannot be read: stale file handle"}},
		{"grown since its stat", nil, []ceremonies.Citation{{Path: "grown.txt", Line: 1, Quote: "yyyyyyyyyyyyyyyy"}},
			[]string{"task use-max: citation 1: cited file grown.txt is 1048577 bytes; cite files of at most 1048576 bytes"}},
		{"past the end", nil, []ceremonies.Citation{{Path: "other.go", Line: 31, Quote: "line 31 of other.go"}},
			[]string{"task use-max: citation 1: other.go has 30 lines; line 31 is past its end"}},
		{"empty file", nil, []ceremonies.Citation{{Path: "empty.go", Line: 1, Quote: "anything at all"}},
			[]string{"task use-max: citation 1: empty.go has 0 lines; line 1 is past its end"}},
		{"blank line", nil, []ceremonies.Citation{{Path: "blank.go", Line: 1, Quote: "anything at all"}},
			[]string{`task use-max: blank.go:1 does not contain the quote (at least 12 characters); the line reads ""`}},
		{"line zero", nil, []ceremonies.Citation{{Path: "other.go", Line: 0, Quote: "line 1 of other.go"}},
			[]string{"task use-max: citation 1: line 0 of other.go; lines count from 1"}},
		{"quote elsewhere", nil, []ceremonies.Citation{{Path: "calc/calc.go", Line: 3, Quote: "func Min(a, b int) int"}},
			[]string{`task use-max: calc/calc.go:3 does not contain the quote (at least 12 characters); the line reads "// Min returns the smaller of a and b."`}},
		{"quote too short", nil, []ceremonies.Citation{{Path: "calc/calc.go", Line: 4, Quote: "func  Min("}},
			[]string{`task use-max: calc/calc.go:4 does not contain the quote (at least 12 characters); the line reads "func Min(a, b int) int {"`}},
		{"each citation", nil, []ceremonies.Citation{{Path: "calc/calc.go", Line: 99, Quote: "func Min(a, b int) int"}, {Path: "nope.go", Line: 1, Quote: "package nope here"}},
			[]string{"task use-max: citation 1: calc/calc.go has 9 lines; line 99 is past its end", "task use-max: citation 2: cited file nope.go does not exist; cite a file of the workspace"}},
		{"path outside", nil, []ceremonies.Citation{{Path: "../x.go", Line: 1, Quote: "package x here"}},
			[]string{`task use-max: citation 1: path "../x.go" is not inside the workspace; give a path relative to its root, without ".."`}},
		{"scope directory", []string{"main.go", "dir"}, nil,
			[]string{"task use-max: scope path dir is a directory; list the files the task changes"}},
		{"scope unreadable", []string{"stale.go"}, nil,
			[]string{"task use-max: scope path stale.go cannot be read: stale file handle"}},
		{"scope outside", []string{"/etc/passwd"}, nil,
			[]string{`task use-max: scope path "/etc/passwd" is not inside the workspace; give a path relative to its root, without ".."`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := calcPlan()
			if tt.scope != nil {
				d.Tasks[1].Scope = tt.scope
			}
			d.Tasks[1].Context = tt.context
			pack, err := Pack("p", d, "use-max", fsys)
			var ds Defects
			if !errors.As(err, &ds) || pack != "" {
				t.Fatalf("pack %q, error %v; want defects", pack, err)
			}
			if got := ds.Messages(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("defects\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPackQuotes(t *testing.T) {
	files := workspace()
	files["crlf.go"] = &fstest.MapFile{Data: []byte("package x\r\nfunc CRLF() string { return \"\" }\r\n")}
	files["tabs.go"] = &fstest.MapFile{Data: []byte("\tif   a <\t b {  return   a }\n")}
	tests := []struct {
		name string
		cite ceremonies.Citation
		want string
	}{
		{"whitespace collapsed on both sides", ceremonies.Citation{Path: "tabs.go", Line: 1, Quote: "if a <  b {\n return a"}, "--- tabs.go:1-1 ---\n\tif   a <\t b {  return   a }\n"},
		{"part of the line", ceremonies.Citation{Path: "calc/calc.go", Line: 4, Quote: "Min(a, b int)"}, "--- calc/calc.go:1-9 ---\n" + calcGo},
		{"carriage returns dropped", ceremonies.Citation{Path: "crlf.go", Line: 2, Quote: `string { return "" }`}, "--- crlf.go:1-2 ---\npackage x\nfunc CRLF() string { return \"\" }\n"},
		{"twelve characters exactly", ceremonies.Citation{Path: "calc/calc.go", Line: 4, Quote: "Min(a, b int"}, "--- calc/calc.go:1-9 ---\n" + calcGo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := calcPlan()
			d.Tasks[1].Context = []ceremonies.Citation{tt.cite}
			got, err := Pack("p", d, "use-max", files)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(got, "func Max(a, b int) int\n"+tt.want) {
				t.Fatalf("pack %q lacks %q", got, tt.want)
			}
		})
	}
}

func TestPackTooBig(t *testing.T) {
	var wide strings.Builder
	for k := 1; k <= 200; k++ {
		fmt.Fprintf(&wide, "// line %d of wide.go %s\n", k, strings.Repeat("x", 60))
	}
	files := workspace()
	files["wide.go"] = &fstest.MapFile{Data: []byte(wide.String())}
	d := calcPlan()
	// Three regions of 41 lines of about 83 bytes fit; four do not.
	for _, line := range []int{21, 63, 105} {
		d.Tasks[1].Context = append(d.Tasks[1].Context, ceremonies.Citation{Path: "wide.go", Line: line, Quote: fmt.Sprintf("line %d of wide.go", line)})
	}
	if pack, err := Pack("p", d, "use-max", files); err != nil || len(pack) > MaxPack {
		t.Fatalf("three regions: %d bytes, %v", len(pack), err)
	}
	d.Tasks[1].Context = append(d.Tasks[1].Context, ceremonies.Citation{Path: "wide.go", Line: 147, Quote: "line 147 of wide.go"})
	_, err := Pack("p", d, "use-max", files)
	var ds Defects
	if !errors.As(err, &ds) || len(ds) != 1 {
		t.Fatalf("four regions: %v, want one defect", err)
	}
	m := regexp.MustCompile(`^task use-max: its context pack is (\d+) bytes \(at most 12288\); split the task or cite less$`).FindStringSubmatch(ds[0].String())
	if m == nil {
		t.Fatalf("defect %q", ds[0])
	}
	if size, _ := strconv.Atoi(m[1]); size <= MaxPack || size > MaxPack+5000 {
		t.Fatalf("size %d", size)
	}
}

func TestPackErrors(t *testing.T) {
	if _, err := Pack("p", calcPlan(), "nope", workspace()); err == nil || err.Error() != `context pack of plan p: no task "nope"` {
		t.Fatalf("unknown task: %v", err)
	}
	d := calcPlan()
	d.Tasks[0].DependsOn = []string{"use-max"}
	_, err := Pack("p", d, "use-max", workspace())
	var ds Defects
	if !errors.As(err, &ds) || !strings.Contains(ds.Error(), "form a cycle") {
		t.Fatalf("cycle: %v", err)
	}
}

// TestPackRoot reads a real workspace through os.Root, as axlrd does: a
// symbolic link out of it is a defect, not a read of the file outside.
func TestPackRoot(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.go"), []byte("package secret // do not read me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, f := range workspace() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	got, err := Pack("p", calcPlan(), "add-max", root.FS())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "calc/max.go (new)") || !strings.HasSuffix(got, "--- calc/calc.go:1-9 ---\n"+calcGo) {
		t.Fatalf("pack %q", got)
	}

	d := calcPlan()
	d.Tasks[1].Context = []ceremonies.Citation{{Path: "link.go", Line: 1, Quote: "package secret"}}
	_, err = Pack("p", d, "use-max", root.FS())
	var ds Defects
	if !errors.As(err, &ds) || ds.Error() != "task use-max: citation 1: cited file link.go cannot be read: path escapes from parent" {
		t.Fatalf("link out of the workspace: %v", err)
	}
}
