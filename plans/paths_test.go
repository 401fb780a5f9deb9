package plans

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"add-max", true},
		{"a", true},
		{"0-start", true},
		{"x" + strings.Repeat("y", 39), true},
		{"x" + strings.Repeat("y", 40), false},
		{"", false},
		{"-lead", false},
		{"Add-max", false},
		{"add_max", false},
		{"add max", false},
		{"añadir", false},
		{"all-", true},
	}
	for _, tt := range tests {
		if got := ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{"calc/calc.go", "calc/calc.go", true},
		{"./calc//calc.go", "calc/calc.go", true},
		{" main.go ", "main.go", true},
		{"a/./b/", "a/b", true},
		{".hidden", ".hidden", true},
		{"..hidden", "..hidden", true},
		{"", "", false},
		{"  ", "", false},
		{".", "", false},
		{"./", "", false},
		{"..", "", false},
		{"../x", "", false},
		{"a/../b", "", false},
		{"a/..", "", false},
		{"/etc/passwd", "", false},
		{`a\b`, "", false},
		{"a\x00b", "", false},
	}
	for _, tt := range tests {
		got, ok := CleanPath(tt.raw)
		if got != tt.want || ok != tt.ok {
			t.Errorf("CleanPath(%q) = %q, %v; want %q, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIsTestFile(t *testing.T) {
	tests := []struct {
		path         string
		test, source bool
	}{
		// Go
		{"calc/calc_test.go", true, false},
		{"calc/calc.go", false, true},
		{"calc/latest.go", false, true},
		{"_test.go", false, true},
		// Python
		{"pkg/test_parser.py", true, false},
		{"pkg/parser_test.py", true, false},
		{"conftest.py", true, false},
		{"pkg/testing.py", false, true},
		{"pkg/latest.py", false, true},
		// JavaScript and TypeScript
		{"src/app.test.ts", true, false},
		{"src/app.spec.js", true, false},
		{"src/app.test.tsx", true, false},
		{"src/app.e2e.spec.mjs", true, false},
		{"src/app.test.helpers.cts", true, false},
		{"src/latest.ts", false, true},
		{"src/contest.js", false, true},
		// JVM
		{"src/main/java/ParserTest.java", true, false},
		{"src/ParserTests.java", true, false},
		{"src/TestParser.java", true, false},
		{"src/ParserIT.java", true, false},
		{"src/ParserTestCase.java", true, false},
		{"src/Latest.java", false, true},
		{"src/Testament.java", false, true},
		{"src/ParserTest.kt", true, false},
		{"src/ParserSpec.groovy", true, false},
		{"src/ParserSuite.scala", true, false},
		{"src/Parser.scala", false, true},
		// Others
		{"Parser.Tests/ParserTests.cs", true, false},
		{"Sources/ParserTests.swift", true, false},
		{"src/ParserTest.php", true, false},
		{"lib/parser_spec.rb", true, false},
		{"lib/test_parser.rb", true, false},
		{"lib/parser.rb", false, true},
		{"lua/parser_spec.lua", true, false},
		{"parser_test.exs", true, false},
		{"parser_test.dart", true, false},
		{"parser.bats", true, false},
		{"src/parser_unittest.cc", true, false},
		{"src/test_parser.c", true, false},
		{"src/parser.cpp", false, true},
		// Rust keeps its tests in the file.
		{"src/lib.rs", true, true},
		{"tests/cli.rs", true, true},
		// Under a test directory, whatever the name.
		{"test/helpers.js", true, false},
		{"pkg/tests/fixtures.json", true, false},
		{"src/__tests__/app.js", true, false},
		{"spec/support/helpers.rb", true, false},
		{"calc/testdata/golden.txt", true, false},
		{"contest/main.go", false, true},
		{"README.md", false, true},
		{"go.mod", false, true},
	}
	for _, tt := range tests {
		test, source := IsTestFile(tt.path)
		if test != tt.test || source != tt.source {
			t.Errorf("IsTestFile(%q) = %v, %v; want %v, %v", tt.path, test, source, tt.test, tt.source)
		}
	}
}
