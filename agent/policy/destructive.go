package policy

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
)

// shells run their -c argument as a script; the destructive list looks inside.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ash", "fish"}

// Destructive reports whether a call is held by the destructive list, and by
// which entry. An entry without spaces is a tool name ("local_write"); an
// entry with spaces is a command: its first word is the program's base name
// and every further word must appear among the arguments (order free, so
// "git push origin --force" is caught by "git push --force"). A shell's -c
// script is split into its commands and each is checked the same way.
func Destructive(list []string, c Call) (string, bool) {
	for _, entry := range list {
		words := strings.Fields(entry)
		if len(words) == 1 && words[0] == c.Tool {
			return entry, true
		}
	}
	if c.Tool != "local_exec" {
		return "", false
	}
	program := c.Args["program"].Text
	args, ok := stringArgs(c.Args["args"])
	if !ok {
		// Arguments the policy cannot read (cut, or not a list of strings)
		// are treated as a match for any command entry of that program.
		for _, entry := range list {
			words := strings.Fields(entry)
			if len(words) > 1 && words[0] == path.Base(program) {
				return entry, true
			}
		}
		return "", false
	}
	for _, argv := range commands(program, args) {
		for _, entry := range list {
			words := strings.Fields(entry)
			if len(words) < 2 || len(argv) == 0 || words[0] != path.Base(argv[0]) {
				continue
			}
			if containsAll(argv[1:], words[1:]) {
				return entry, true
			}
		}
	}
	return "", false
}

// commands expands a call into the argv lists it runs: itself, and for a
// shell with -c, each command of the script.
func commands(program string, args []string) [][]string {
	out := [][]string{append([]string{program}, args...)}
	if !slices.Contains(shells, path.Base(program)) {
		return out
	}
	for i, a := range args {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && i+1 < len(args) {
			out = append(out, splitScript(args[i+1])...)
			break
		}
	}
	return out
}

// splitScript cuts a shell script at ; & | and newlines and each piece into
// words, dropping quotes. It is deliberately rough: it only has to find the
// words of the destructive list.
func splitScript(script string) [][]string {
	var out [][]string
	for _, piece := range strings.FieldsFunc(script, func(r rune) bool {
		return r == ';' || r == '&' || r == '|' || r == '\n' || r == '(' || r == ')' || r == '`'
	}) {
		words := strings.Fields(strings.NewReplacer(`"`, "", `'`, "").Replace(piece))
		// Skip leading environment assignments and wrappers.
		for len(words) > 0 && (strings.Contains(words[0], "=") || words[0] == "sudo" || words[0] == "env" || words[0] == "command" || words[0] == "exec") {
			words = words[1:]
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// stringArgs reads the args argument of local_exec as a list of strings.
func stringArgs(v Value) ([]string, bool) {
	if v.Truncated {
		return nil, false
	}
	if v.Text == "" {
		return nil, true
	}
	var out []string
	if err := json.Unmarshal([]byte(v.Text), &out); err != nil {
		return nil, false
	}
	return out, true
}
