package policy

import (
	"errors"
	"strings"
)

// Match reports whether text matches a glob pattern: * matches any run of
// characters within a name or a path segment (never a '/'), ** any run
// across segments, ? one character other than '/'. Every other character
// matches itself. Matching is iterative with memoisation, so no pattern makes
// it exponential.
func Match(pattern, text string) bool {
	p, t := []rune(pattern), []rune(text)
	// memo[i][j]: pattern[i:] against text[j:] already known to fail.
	failed := make([][]bool, len(p)+1)
	for i := range failed {
		failed[i] = make([]bool, len(t)+1)
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		for {
			if failed[i][j] {
				return false
			}
			if i == len(p) {
				return j == len(t)
			}
			switch {
			case p[i] == '*' && i+1 < len(p) && p[i+1] == '*':
				for k := j; k <= len(t); k++ {
					if match(i+2, k) {
						return true
					}
				}
				failed[i][j] = true
				return false
			case p[i] == '*':
				for k := j; k <= len(t); k++ {
					if match(i+1, k) {
						return true
					}
					if k < len(t) && t[k] == '/' {
						break
					}
				}
				failed[i][j] = true
				return false
			case j < len(t) && (p[i] == t[j] || (p[i] == '?' && t[j] != '/')):
				i++
				j++
			default:
				failed[i][j] = true
				return false
			}
		}
	}
	return match(0, 0)
}

func checkPattern(p string) error {
	if strings.Contains(p, "***") {
		return errors.New("*** is not a pattern: use * within a segment or ** across segments")
	}
	return nil
}
