package policy

import (
	"strings"
	"testing"
)

// run is a local_exec call of program with args.
func run(program string, args ...string) Call {
	return call("local_exec", map[string]any{"program": program, "args": args})
}

// sh is a local_exec call of sh -c script.
func sh(script string) Call { return run("sh", "-c", script) }

// TestDestructiveScript checks the commands a parsed -c script runs, and the
// words that only look like commands.
func TestDestructiveScript(t *testing.T) {
	tests := []struct {
		name string
		call Call
		want string
	}{
		{"subshell", sh("(cd x; git push --force)"), "git push --force"},
		{"command substitution", sh("echo $(git push --force)"), "git push --force"},
		{"substitution in double quotes", sh(`echo "$(git push --force)"`), "git push --force"},
		{"backticks", sh("echo `git reset --hard`"), "git reset --hard"},
		{"substitution in an assignment", sh("X=$(rm -rf build)"), "rm -rf"},
		{"process substitution", sh("diff <(git push --force) x"), "git push --force"},
		{"pipeline", sh("a | git push --force"), "git push --force"},
		{"and list", sh("true && git push --force"), "git push --force"},
		{"or list", sh("false || rm -rf /"), "rm -rf"},
		{"negated", sh("! git push --force"), "git push --force"},
		{"time", sh("time git push --force"), "git push --force"},
		{"group", sh("{ git push --force; }"), "git push --force"},
		{"if body", sh("if true; then git push --force; fi"), "git push --force"},
		{"else body", sh("if false; then :; else rm -rf x; fi"), "rm -rf"},
		{"for body", sh("for d in a b; do rm -rf $d; done"), "rm -rf"},
		{"while body", sh("while read l; do git reset --hard; done"), "git reset --hard"},
		{"case body", sh("case $x in y) git push --force;; esac"), "git push --force"},
		{"function body", sh("f() { git push --force; }; f"), "git push --force"},
		{"test clause", sh("[[ -n $(rm -rf x) ]]"), "rm -rf"},
		{"lines", sh("cd x\n  git push --force\n"), "git push --force"},
		{"leading assignment", sh("A=1 B=2 git push --force"), "git push --force"},
		{"double-quoted word", sh(`git push "--force"`), "git push --force"},
		{"single-quoted word", sh(`git push '--force'`), "git push --force"},
		{"escaped word", sh(`git push \-\-force`), "git push --force"},
		{"partly quoted word", sh(`git push --for"ce"`), "git push --force"},
		{"word with an expansion counts by its literal parts", sh(`git push --force$X`), "git push --force"},
		{"quoted program", sh(`"git" push --force`), "git push --force"},
		{"combined flags -ec", run("bash", "-ec", "git push --force"), "git push --force"},
		{"flags before -c", run("bash", "-e", "-o", "pipefail", "-c", "git push --force"), "git push --force"},
		{"-- before the script", run("bash", "-c", "--", "git push --force"), "git push --force"},
		{"fish --command", run("fish", "--command=git push --force"), "git push --force"},
		{"absolute shell path", run("/bin/dash", "-c", "rm -rf x"), "rm -rf"},
		{"nested shell", run("bash", "-c", `sh -c 'git push --force'`), "git push --force"},
		{"nested shell in a wrapper", run("bash", "-c", `sudo sh -c "timeout 5 git push --force"`), "git push --force"},

		{"echo argument", sh(`echo "git push --force"`), ""},
		{"separator inside quotes", sh(`echo 'a; git push --force'`), ""},
		{"and inside quotes", sh(`echo "x && rm -rf /"`), ""},
		{"parenthesis inside quotes", sh(`git commit -m "undo (rm -rf build)"`), ""},
		{"comment", sh("echo hi # ; git push --force"), ""},
		{"here-document body", sh("cat <<EOF\ngit push --force\nEOF\n"), ""},
		{"backslashes kept inside double quotes", sh(`git push "\-\-force"`), ""},
		{"script of a shell without -c", run("sh", "build.sh", "git push --force"), ""},
		{"-c without a script", run("sh", "-c"), ""},
		{"not a shell", run("python3", "-c", "git push --force"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Destructive(defaultAsk, tt.call)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Destructive = %q %v, want %q", got, ok, tt.want)
			}
		})
	}
}

// TestDestructiveWrappers checks that env, sudo, command, exec, nice,
// timeout and xargs are read past their options, in a script and as the
// program of the call.
func TestDestructiveWrappers(t *testing.T) {
	tests := []struct {
		name string
		call Call
		want string
	}{
		{"sudo", sh("sudo git push --force"), "git push --force"},
		{"sudo -u user", sh("sudo -u root git push --force"), "git push --force"},
		{"sudo -E", sh("sudo -E git push --force"), "git push --force"},
		{"sudo cluster with a value", sh("sudo -Eu root git push --force"), "git push --force"},
		{"sudo attached value", sh("sudo -uroot rm -rf /"), "rm -rf"},
		{"sudo --user=", sh("sudo --user=root git push --force"), "git push --force"},
		{"sudo --user value", sh("sudo --user root git push --force"), "git push --force"},
		{"sudo assignment", sh("sudo A=1 git push --force"), "git push --force"},
		{"env -i with assignment", sh("env -i A=1 git push --force"), "git push --force"},
		{"env -u", sh("env -u HOME git push --force"), "git push --force"},
		{"env --", sh("env -- A=1 git push --force"), "git push --force"},
		{"env -S", sh(`env -S 'git push --force'`), "git push --force"},
		{"env --split-string=", run("env", "--split-string=A=1 rm -rf", "x"), "rm -rf"},
		{"command -p", sh("command -p git push --force"), "git push --force"},
		{"exec", sh("exec git push --force"), "git push --force"},
		{"exec -a", sh("exec -a name git push --force"), "git push --force"},
		{"nice -n", sh("nice -n 5 git push --force"), "git push --force"},
		{"nice -N", sh("nice -5 rm -rf x"), "rm -rf"},
		{"nice --adjustment=", sh("nice --adjustment=5 rm -rf x"), "rm -rf"},
		{"timeout", sh("timeout 10 git push --force"), "git push --force"},
		{"timeout -s", sh("timeout -s KILL 10 git push --force"), "git push --force"},
		{"timeout --kill-after value", sh("timeout --kill-after 5 --foreground 10s git push --force"), "git push --force"},
		{"xargs -0", sh("find . -print0 | xargs -0 rm -rf"), "rm -rf"},
		{"xargs -I", sh("xargs -I {} rm -rf {}"), "rm -rf"},
		{"xargs -n -P", sh("xargs -n 1 -P 4 rm -rf"), "rm -rf"},
		{"xargs -i attached", sh("xargs -i{} rm -rf {}"), "rm -rf"},
		{"nested wrappers", sh("sudo env X=1 timeout 5 git push --force"), "git push --force"},
		{"program sudo", run("sudo", "git", "push", "--force"), "git push --force"},
		{"program env with a shell", run("/usr/bin/env", "-i", "A=1", "sh", "-c", "git push --force"), "git push --force"},
		{"program timeout with bash -lc", run("timeout", "5", "bash", "-lc", "rm -rf x"), "rm -rf"},
		{"program xargs", run("xargs", "-0", "rm", "-rf"), "rm -rf"},

		{"sudo's value is not the command", sh("sudo -u git push --force"), ""},
		{"timeout's duration is not the command", run("timeout", "git", "push", "--force"), ""},
		{"nice's value is not the command", sh("nice -n rm -rf x"), ""},
		{"wrapper without a command", sh("sudo -l"), ""},
		{"wrapper with a harmless command", run("sudo", "-u", "root", "git", "push", "origin"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Destructive(defaultAsk, tt.call)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Destructive = %q %v, want %q", got, ok, tt.want)
			}
		})
	}
}

// TestDestructiveReason checks what holds a call and the reason given, for
// entries that match and for calls that cannot be read.
func TestDestructiveReason(t *testing.T) {
	deep := func(n int, last ...string) Call {
		return run("sudo", append(strings.Fields(strings.Repeat("sudo ", n-1)), last...)...)
	}
	tests := []struct {
		name       string
		list       []string
		call       Call
		entry, why string
	}{
		{"command entry", defaultAsk, sh("true && git push --force"), "git push --force", `"git push --force" is in approvals.always_ask`},
		{"tool entry", []string{"local_write"}, call("local_write", map[string]any{"path": "a"}), "local_write", `"local_write" is in approvals.always_ask`},
		{"entry naming the wrapper", []string{"sudo rm"}, run("sudo", "rm", "x"), "sudo rm", `"sudo rm" is in approvals.always_ask`},
		{"unparsable script", defaultAsk, sh("echo 'x"), "git push --force",
			"approvals.always_ask cannot be checked: the sh -c script does not parse (1:6: reached EOF without closing quote `'`)"},
		{"unparsable nested script", []string{"local_write", "rm -rf"}, run("bash", "-c", `sh -c "echo (x"`), "rm -rf",
			"approvals.always_ask cannot be checked: the sh -c script does not parse (1:1: `foo(` must be followed by `)`)"},
		{"a match beats an unparsable script", defaultAsk, sh("rm -rf x; sh -c 'echo (x'"), "rm -rf", `"rm -rf" is in approvals.always_ask`},
		{"unparsable without command entries", []string{"local_write"}, sh("echo 'x"), "", ""},
		{"nested to the bound", defaultAsk, deep(maxDepth, "git", "push", "--force"), "git push --force", `"git push --force" is in approvals.always_ask`},
		{"harmless to the bound", defaultAsk, deep(maxDepth, "ls"), "", ""},
		{"nested past the bound", defaultAsk, deep(maxDepth+1, "ls"), "git push --force",
			"approvals.always_ask cannot be checked: shells and wrappers nest over 8 deep"},
		{"unreadable args", defaultAsk, Call{Tool: "local_exec", Args: map[string]Value{"program": {Text: "git"}, "args": {Text: "x", Truncated: true}}}, "git push --force", `"git push --force" is in approvals.always_ask`},
		{"unreadable args of another program", defaultAsk, Call{Tool: "local_exec", Args: map[string]Value{"program": {Text: "sh"}, "args": {Text: "x", Truncated: true}}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry, ok := Destructive(tt.list, tt.call)
			if entry != tt.entry || ok != (tt.entry != "") {
				t.Errorf("Destructive = %q %v, want %q", entry, ok, tt.entry)
			}
			why, ok := DestructiveReason(tt.list, tt.call)
			if why != tt.why || ok != (tt.why != "") {
				t.Errorf("DestructiveReason = %q %v, want %q", why, ok, tt.why)
			}
		})
	}
}

// TestDecideDestructiveReason checks that Decide asks with the destructive
// list's reason even when every other rule would approve.
func TestDecideDestructiveReason(t *testing.T) {
	tests := []struct {
		name string
		call Call
		want Decision
	}{
		{"entry", run("sudo", "git", "push", "--force"), Decision{Verdict: Ask, Reason: `"git push --force" is in approvals.always_ask`}},
		{"unparsable script", sh("echo 'x"), Decision{Verdict: Ask, Reason: "approvals.always_ask cannot be checked: the sh -c script does not parse (1:6: reached EOF without closing quote `'`)"}},
		{"harmless script", sh(`echo "git push --force"`), Decision{Verdict: Approve, Reason: "approvals.autonomous"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Input{Approval: ApproveAll, Settings: Settings{Autonomous: true, AlwaysAsk: defaultAsk}, Call: tt.call})
			if got != tt.want {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}
