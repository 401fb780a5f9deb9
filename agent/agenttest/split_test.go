package agenttest

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 4, nil},
		{"abcdef", 4, []string{"abcd", "ef"}},
		{"abcd", 4, []string{"abcd"}},
		{"añb", 2, []string{"a", "ñ", "b"}},
		{"✓✓", 2, []string{"✓", "✓"}}, // a rune longer than n is one piece
		{"a✓", 1, []string{"a", "✓"}},
	}
	for _, tc := range cases {
		if got := split(tc.s, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
