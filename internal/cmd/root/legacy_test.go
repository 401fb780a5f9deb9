package root

import (
	"errors"
	"slices"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

// TestMapLegacy: each legacy form becomes its verb, the text after "--"
// so that it stays a text whatever it reads like; the verbs' own forms,
// and anything without a legacy flag, stay as they are.
func TestMapLegacy(t *testing.T) {
	ios, _, _, _ := factory.Test()
	root := NewCmdRoot(&factory.Factory{IOStreams: ios})
	tests := []struct {
		name string
		args []string
		want []string
		err  string
	}{
		{name: "exec prompt", args: []string{"--exec", "fix it", "--model", "m"}, want: []string{"exec", "--model", "m", "--", "fix it"}},
		{name: "exec prompt that reads result", args: []string{"--exec", "result"}, want: []string{"exec", "--", "result"}},
		{name: "exec prompt after flags", args: []string{"--exec", "--model", "m", "history"}, want: []string{"exec", "--model", "m", "history"}},
		{name: "exec equals form", args: []string{"--exec=jobs list"}, want: []string{"exec", "--", "jobs list"}},
		{name: "exec from stdin", args: []string{"--exec", "-", "--json"}, want: []string{"exec", "-", "--json"}},
		{name: "exec prompt after --", args: []string{"--exec", "--", "-v is broken"}, want: []string{"exec", "--", "-v is broken"}},
		{name: "exec prompt and more after --", args: []string{"--exec", "x", "--", "y"}, want: []string{"exec", "--", "x", "y"}},
		{name: "exec after connection flags", args: []string{"--temporal-address", "h:1", "--exec", "x"}, want: []string{"exec", "--temporal-address", "h:1", "--", "x"}},
		{name: "exec after a root that reads jobs", args: []string{"--root", "jobs", "--exec", "x"}, want: []string{"exec", "--root", "jobs", "--", "x"}},
		{name: "exec without a prompt", args: []string{"--exec"}, want: []string{"exec"}},
		{name: "decide", args: []string{"--session", "S", "--decide", "approve", "--call", "exec-1"}, want: []string{"exec", "--session", "S", "--decide", "approve", "--call", "exec-1"}},
		{name: "decide equals form", args: []string{"--decide=deny", "--session", "S"}, want: []string{"exec", "--decide=deny", "--session", "S"}},
		{name: "stop ceremony", args: []string{"--session", "S", "--stop-ceremony"}, want: []string{"exec", "--session", "S", "--stop-ceremony"}},
		{name: "repair with a brief that reads jobs", args: []string{"--repair", "jobs", "--model", "m"}, want: []string{"jobs", "repair", "--model", "m", "--", "jobs"}},
		{name: "improve after its flags", args: []string{"--improve", "--detach", "add Double"}, want: []string{"jobs", "improve", "--detach", "add Double"}},
		{name: "repair issue", args: []string{"--repair=#12"}, want: []string{"jobs", "repair", "--", "#12"}},
		{name: "plan", args: []string{"--plan", "add a flag", "--root", "/w"}, want: []string{"plans", "new", "--root", "/w", "--", "add a flag"}},
		{name: "repair and improve", args: []string{"--repair", "a", "--improve", "b"}, err: "--repair and --improve cannot be used together"},
		{name: "exec and decide", args: []string{"--exec", "x", "--decide", "approve"}, err: "--exec and --decide cannot be used together"},
		{name: "decide and stop ceremony go to exec", args: []string{"--decide", "approve", "--stop-ceremony"}, want: []string{"exec", "--decide", "approve", "--stop-ceremony"}},
		{name: "the verb exec", args: []string{"exec", "--session", "S", "--decide", "approve"}, want: []string{"exec", "--session", "S", "--decide", "approve"}},
		{name: "the verb after connection flags", args: []string{"--temporal-address", "h:1", "exec", "--session", "S", "--stop-ceremony"},
			want: []string{"--temporal-address", "h:1", "exec", "--session", "S", "--stop-ceremony"}},
		{name: "a verb's brief that holds a flag's name", args: []string{"jobs", "repair", "--", "--plan"}, want: []string{"jobs", "repair", "--", "--plan"}},
		{name: "after --", args: []string{"history", "--", "--exec"}, want: []string{"history", "--", "--exec"}},
		{name: "no legacy flag", args: []string{"--model", "m"}, want: []string{"--model", "m"}},
		{name: "nothing", args: []string{}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mapLegacy(tt.args, commandOf(root), valueOf(root))
			if tt.err != "" {
				if !errors.As(err, new(*cmdutil.FlagError)) || err.Error() != tt.err {
					t.Fatalf("error %v, want usage error %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("mapLegacy(%q) = %q, %v; want %q", tt.args, got, err, tt.want)
			}
		})
	}
}
