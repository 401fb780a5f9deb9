package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// maxDepth bounds how deeply shells and wrappers may nest in one call
// (bash -c "sudo sh -c '…'"); a call nested deeper is held unread.
const maxDepth = 8

// Destructive reports whether a call is held by the destructive list, and by
// which entry. An entry without spaces is a tool name ("local_write"); an
// entry with spaces is a command: its first word is the program's base name
// and every further word must appear among the arguments (order free, so
// "git push origin --force" is caught by "git push --force").
//
// A local_exec call is read for every command it runs: itself; past the
// wrappers env, sudo, command, exec, nice, timeout and xargs, with their
// options; and inside a shell's -c script, which is parsed: commands in
// subshells, substitutions, pipelines, && and || lists, compound commands and
// functions count, words inside quotes do not. A call that cannot be read
// whole (a script that does not parse, shells and wrappers nested over 8
// deep) is held by the list's first command entry; a list without command
// entries holds only tool names. Arguments cut before they reached the
// policy hold the program's command entries. See DestructiveReason for the
// reason to show.
func Destructive(list []string, c Call) (string, bool) {
	h, ok := destructive(list, c)
	return h.entry, ok
}

// DestructiveReason is Destructive with the reason a person is shown instead
// of the entry: the entry that holds the call, or why the call could not be
// checked against the list.
func DestructiveReason(list []string, c Call) (string, bool) {
	h, ok := destructive(list, c)
	return h.reason, ok
}

// hold is the destructive list's answer for one call.
type hold struct {
	entry, reason string
}

func held(entry string) hold {
	return hold{entry: entry, reason: fmt.Sprintf("%q is in approvals.always_ask", entry)}
}

func destructive(list []string, c Call) (hold, bool) {
	for _, entry := range list {
		words := strings.Fields(entry)
		if len(words) == 1 && words[0] == c.Tool {
			return held(entry), true
		}
	}
	if c.Tool != "local_exec" {
		return hold{}, false
	}
	program := c.Args["program"].Text
	args, ok := stringArgs(c.Args["args"])
	if !ok {
		// Arguments the policy cannot read (cut, or not a list of strings)
		// are treated as a match for any command entry of that program.
		for _, entry := range list {
			words := strings.Fields(entry)
			if len(words) > 1 && words[0] == path.Base(program) {
				return held(entry), true
			}
		}
		return hold{}, false
	}
	var r reading
	r.command(append([]string{program}, args...), 0)
	for _, argv := range r.argvs {
		for _, entry := range list {
			words := strings.Fields(entry)
			if len(words) < 2 || words[0] != path.Base(argv[0]) {
				continue
			}
			if containsAll(argv[1:], words[1:]) {
				return held(entry), true
			}
		}
	}
	if r.problem == "" {
		return hold{}, false
	}
	for _, entry := range list {
		if len(strings.Fields(entry)) > 1 {
			return hold{entry: entry, reason: "approvals.always_ask cannot be checked: " + r.problem}, true
		}
	}
	return hold{}, false
}

// reading collects the commands one call runs.
type reading struct {
	// argvs are the commands, outermost first.
	argvs [][]string
	// problem says why part of the call could not be read; the first
	// problem is kept.
	problem string
}

// command records argv and the commands it runs in turn: a wrapper's
// command and a shell's -c script.
func (r *reading) command(argv []string, depth int) {
	if len(argv) == 0 {
		return
	}
	if depth > maxDepth {
		r.fail(fmt.Sprintf("shells and wrappers nest over %d deep", maxDepth))
		return
	}
	r.argvs = append(r.argvs, argv)
	name := path.Base(argv[0])
	if w, ok := wrappers[name]; ok {
		r.command(w.unwrap(argv[1:]), depth+1)
		return
	}
	if !slices.Contains(shells, name) {
		return
	}
	script, ok := shellScript(argv[1:])
	if !ok {
		return
	}
	calls, err := scriptCalls(script)
	if err != nil {
		r.fail(fmt.Sprintf("the %s -c script does not parse (%v)", name, err))
		return
	}
	for _, call := range calls {
		r.command(call, depth+1)
	}
}

func (r *reading) fail(problem string) {
	if r.problem == "" {
		r.problem = problem
	}
}

// wrapper describes a program that runs the rest of its arguments as a
// command, and what comes before that command.
type wrapper struct {
	// short are the one-letter options that take a value, attached (-uroot)
	// or as the next argument (-u root).
	short string
	// optional are the one-letter options whose value, if any, is attached
	// (xargs -i{}); the rest of their cluster is that value.
	optional string
	// long are the long options that take a value, --user=root or
	// --user root; any other long option takes one only after "=".
	long []string
	// split: -S and --split-string give a string whose words are put back
	// before the remaining arguments (env -S 'A=1 cmd').
	split bool
	// assigns: NAME=VALUE arguments before the command are skipped.
	assigns bool
	// operands is the number of arguments before the command that are not
	// options (timeout's DURATION).
	operands int
}

// wrappers are the programs whose command the destructive list reads.
var wrappers = map[string]wrapper{
	"env":     {short: "CPSu", long: []string{"chdir", "split-string", "unset"}, split: true, assigns: true},
	"sudo":    {short: "aCcDgpRrTtUu", optional: "h", long: []string{"chdir", "chroot", "close-from", "command-timeout", "group", "login-class", "other-user", "prompt", "role", "type", "user"}, assigns: true},
	"command": {},
	"exec":    {short: "a"},
	"nice":    {short: "n", long: []string{"adjustment"}},
	"timeout": {short: "ks", long: []string{"kill-after", "signal"}, operands: 1},
	"xargs":   {short: "adEILJnPRSs", optional: "eil", long: []string{"arg-file", "delimiter", "max-args", "max-chars", "max-procs", "process-slot-var"}},
}

// unwrap returns the command a wrapper runs: its arguments past the
// options, the assignments and the operands; nil when there is none.
func (w wrapper) unwrap(args []string) []string {
	operands, options := w.operands, true
	for len(args) > 0 {
		a := args[0]
		switch {
		case options && a == "--":
			options = false
			args = args[1:]
		case options && strings.HasPrefix(a, "--"):
			args = args[1:]
			name, value, hasValue := strings.Cut(a[2:], "=")
			if !hasValue && slices.Contains(w.long, name) && len(args) > 0 {
				value, args = args[0], args[1:]
			}
			if w.split && name == "split-string" {
				args = append(strings.Fields(value), args...)
			}
		case options && len(a) > 1 && a[0] == '-':
			args = args[1:]
			for i := 1; i < len(a); i++ {
				if strings.IndexByte(w.optional, a[i]) >= 0 {
					break
				}
				if strings.IndexByte(w.short, a[i]) >= 0 {
					value := a[i+1:]
					if value == "" && len(args) > 0 {
						value, args = args[0], args[1:]
					}
					if w.split && a[i] == 'S' {
						args = append(strings.Fields(value), args...)
					}
					break
				}
			}
		case w.assigns && isAssign(a):
			options = false
			args = args[1:]
		case operands > 0:
			options = false
			operands--
			args = args[1:]
		default:
			return args
		}
	}
	return nil
}

// isAssign reports whether an argument is NAME=VALUE with a valid name.
func isAssign(a string) bool {
	name, _, ok := strings.Cut(a, "=")
	if !ok || name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, r := range name {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
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
