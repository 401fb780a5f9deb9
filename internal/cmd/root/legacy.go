package root

import (
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
)

// legacy is a flag that started work before the verbs did, and the verb
// it is now.
type legacy struct {
	flag string
	verb []string
	// text: the flag's value is a text (a prompt, a brief) that goes to
	// the verb as its argument; else the flag is the verb's own.
	text bool
}

// legacyFlags are the runtime contract's and the early releases' forms,
// kept working on the verbs:
//
//	--exec PROMPT ...              exec ... -- PROMPT
//	--session ID --decide D ...    exec --session ID --decide D ...
//	--session ID --stop-ceremony   exec --session ID --stop-ceremony
//	--repair BRIEF ...             jobs repair ... -- BRIEF
//	--improve BRIEF ...            jobs improve ... -- BRIEF
//	--plan BRIEF ...               plans new ... -- BRIEF
var legacyFlags = []legacy{
	{flag: "exec", verb: []string{"exec"}, text: true},
	{flag: "repair", verb: []string{"jobs", "repair"}, text: true},
	{flag: "improve", verb: []string{"jobs", "improve"}, text: true},
	{flag: "plan", verb: []string{"plans", "new"}, text: true},
	{flag: "decide", verb: []string{"exec"}},
	{flag: "stop-ceremony", verb: []string{"exec"}},
}

// mapLegacy is the one place the legacy flags are read: it rewrites an
// invocation that holds one (before "--") onto its verb, as legacyFlags
// shows, and leaves any other as it is. An invocation that names a
// command before its first legacy flag is the verbs' own (exec --session
// ID --decide approve). isCommand names the root's commands, and
// takesValue the flags whose value is the next argument, so that
// "--root jobs --exec x" is still --exec.
//
// A text flag takes its text as --exec=TEXT, as the next argument when
// that is not a flag, or else as the first argument after the flags
// (--exec --model m "prompt"). The text goes after "--", so a prompt that
// reads like a command name ("result") or starts with "-" stays a prompt;
// a lone "-" (--exec -, standard input) stays where it is. Two text flags,
// or one with --decide or --stop-ceremony, are a usage error.
func mapLegacy(args []string, isCommand, takesValue func(string) bool) ([]string, error) {
	var found []legacy
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		a := args[i]
		if l, ok := legacyFlag(a); ok {
			if !slices.ContainsFunc(found, func(f legacy) bool { return f.flag == l.flag }) {
				found = append(found, l)
			}
			continue
		}
		if len(found) == 0 && isCommand(a) {
			return args, nil
		}
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(name, "=") && takesValue(name) {
			i++
		}
	}
	if len(found) == 0 {
		return args, nil
	}
	first := found[0]
	for _, l := range found[1:] {
		if first.text || l.text {
			return nil, cmdutil.FlagErrorf("--%s and --%s cannot be used together", first.flag, l.flag)
		}
	}
	if !first.text {
		return append(slices.Clone(first.verb), args...), nil
	}
	value, rest := takeText(args, first.flag)
	out := slices.Clone(first.verb)
	at := slices.Index(rest, "--")
	if value == "" {
		return append(out, rest...), nil
	}
	if at < 0 {
		return append(append(out, rest...), "--", value), nil
	}
	out = append(out, rest[:at]...)
	return append(append(out, "--", value), rest[at+1:]...), nil
}

// legacyFlag reports which legacy flag a is: --name or --name=value.
func legacyFlag(a string) (legacy, bool) {
	name, ok := strings.CutPrefix(a, "--")
	if !ok {
		return legacy{}, false
	}
	for _, l := range legacyFlags {
		if name == l.flag || strings.HasPrefix(name, l.flag+"=") {
			return l, true
		}
	}
	return legacy{}, false
}

// takeText takes --name and its text out of args (before "--"): the text
// is --name=TEXT's, or the next argument's when that is not a flag, else
// empty. pflag would take the argument after --name even when that is
// another flag.
func takeText(args []string, name string) (value string, rest []string) {
	flag := "--" + name
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return value, append(rest, args[i:]...)
		case a == flag:
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
				i++
			}
		case strings.HasPrefix(a, flag+"="):
			value = strings.TrimPrefix(a, flag+"=")
		default:
			rest = append(rest, a)
		}
	}
	return value, rest
}
