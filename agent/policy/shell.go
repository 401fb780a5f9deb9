package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shells run their -c argument as a script; the destructive list looks inside.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ash", "fish"}

// shellScript returns the script a shell's arguments run with -c (also in a
// cluster such as -ec or -lc, and fish's --command): the first argument that
// is not an option. ok is false when the shell runs no -c script.
func shellScript(args []string) (script string, ok bool) {
	command := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			if command && i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case strings.HasPrefix(a, "--command="):
			return strings.TrimPrefix(a, "--command="), true
		case a == "--command":
			command = true
		case a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, f := range a[1:] {
				switch f {
				case 'c':
					command = true
				case 'o', 'O':
					// -o pipefail, -O extglob: the option's name follows.
					i++
				}
			}
		default:
			if command {
				return a, true
			}
			return "", false
		}
	}
	return "", false
}

// scriptCalls parses a script with the Bash grammar (every shell's scripts
// are read with it) and returns the words of every simple command in it, in
// source order: those in subshells, command and process substitutions,
// pipelines, && and || lists, if, while, for and case bodies and function
// bodies included. Leading assignments (FOO=1 cmd) are not words.
func scriptCalls(script string) ([][]string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	var out [][]string
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			argv := make([]string, len(c.Args))
			for i, w := range c.Args {
				argv[i] = literal(w)
			}
			out = append(out, argv)
		}
		return true
	})
	return out, nil
}

// literal returns a word's text as the command receives it, quotes and
// escapes removed. Expansions ($X, $(…), $((…))) only the running shell can
// resolve: they count as empty, so a word counts by its literal parts.
// $'…' strings keep their escapes as written.
func literal(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		writeLiteral(&b, p, false)
	}
	return b.String()
}

func writeLiteral(b *strings.Builder, p syntax.WordPart, quoted bool) {
	switch p := p.(type) {
	case *syntax.Lit:
		b.WriteString(unescape(p.Value, quoted))
	case *syntax.SglQuoted:
		b.WriteString(p.Value)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			writeLiteral(b, q, true)
		}
	}
}

// unescape drops the backslashes the shell drops: before any character
// outside quotes, and before $ ` " \ and a newline inside double quotes.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!quoted || strings.IndexByte("$`\"\\\n", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
