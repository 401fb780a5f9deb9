package plans

import (
	"path"
	"regexp"
	"strings"
)

var slug = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// ValidID reports whether s can name a plan or a task: a slug of
// lowercase letters, digits and dashes, starting with a letter or a digit,
// at most 40 characters.
func ValidID(s string) bool { return slug.MatchString(s) }

// CleanPath returns raw as a clean path inside the workspace, slash
// separated and relative to its root, as an fs.FS opens it. It refuses an
// empty path, an absolute one, one with a backslash or a NUL, and one with
// a ".." element even where it would clean to a path inside: a task names
// the files it changes plainly. "./a//b" is "a/b".
func CleanPath(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || strings.HasPrefix(raw, "/") || strings.ContainsAny(raw, "\\\x00") {
		return "", false
	}
	for _, elem := range strings.Split(raw, "/") {
		if elem == ".." {
			return "", false
		}
	}
	clean := path.Clean(raw)
	if clean == "." {
		return "", false
	}
	return clean, true
}

// testDirs are directories whose files are all tests, whatever their names.
var testDirs = []string{"test", "tests", "__tests__", "spec", "testdata"}

// IsTestFile reports whether the file at p is a test file, by its
// language's naming, and whether it is source that is not only tests. A
// Rust source (.rs) is both, since Rust keeps unit tests in the file they
// test; any other file is one or the other.
//
// Test files are, by extension:
//   - Go: *_test.go
//   - Python: test_*.py, *_test.py, conftest.py
//   - JavaScript and TypeScript (.js .jsx .mjs .cjs .ts .tsx .mts .cts):
//     *.test.* and *.spec.*
//   - Java, Kotlin, Groovy (.java .kt .kts .groovy): Test*, *Test, *Tests,
//     *TestCase, *IT, *Spec; Scala: *Test, *Tests, *Spec, *Suite
//   - C#: *Test.cs, *Tests.cs; Swift: *Test.swift, *Tests.swift; PHP: *Test.php
//   - Ruby: *_spec.rb, *_test.rb, test_*.rb; Lua: *_spec.lua, *_test.lua
//   - Elixir: *_test.exs; Dart: *_test.dart; Bats: *.bats
//   - C and C++ (.c .cc .cpp .cxx): *_test, *_unittest, test_*
//
// and any file under a directory named test, tests, __tests__, spec or
// testdata. Names are matched case-sensitively where the language's
// convention is (FooTest.java, not Latest.java).
func IsTestFile(p string) (test, source bool) {
	base := path.Base(p)
	ext := path.Ext(base)
	if ext == ".rs" {
		return true, true
	}
	test = testName(strings.TrimSuffix(base, ext), ext)
	if !test {
		dirs := strings.Split(path.Dir(p), "/")
		for _, d := range testDirs {
			for _, elem := range dirs {
				if elem == d {
					test = true
				}
			}
		}
	}
	return test, !test
}

func testName(stem, ext string) bool {
	suffix := func(s ...string) bool {
		for _, x := range s {
			if strings.HasSuffix(stem, x) && len(stem) > len(x) {
				return true
			}
		}
		return false
	}
	prefix := func(p string) bool { return strings.HasPrefix(stem, p) && len(stem) > len(p) }
	switch ext {
	case ".go", ".dart", ".exs":
		return suffix("_test")
	case ".py":
		return prefix("test_") || suffix("_test") || stem == "conftest"
	case ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts":
		return suffix(".test", ".spec") || strings.Contains(stem, ".test.") || strings.Contains(stem, ".spec.")
	case ".java", ".kt", ".kts", ".groovy":
		return suffix("Test", "Tests", "TestCase", "IT", "Spec") || stem == "Test" || upperAfter(stem, "Test")
	case ".scala":
		return suffix("Test", "Tests", "Spec", "Suite")
	case ".cs", ".swift", ".php":
		return suffix("Test", "Tests")
	case ".rb":
		return suffix("_spec", "_test") || prefix("test_")
	case ".lua":
		return suffix("_spec", "_test")
	case ".c", ".cc", ".cpp", ".cxx":
		return suffix("_test", "_unittest") || prefix("test_")
	case ".bats":
		return true
	}
	return false
}

// upperAfter reports whether s is p followed by an upper-case letter:
// TestParser, not Testament.
func upperAfter(s, p string) bool {
	return len(s) > len(p) && strings.HasPrefix(s, p) && s[len(p)] >= 'A' && s[len(p)] <= 'Z'
}
