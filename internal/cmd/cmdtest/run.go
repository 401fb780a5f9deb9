package cmdtest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

// ParseCase is a case of a TestNewCmdX: the arguments, and the options
// the command hands its run, or the text of the usage error it refuses
// them with.
type ParseCase[O any] struct {
	Name string
	Args []string
	Want O
	Err  string
}

// Parse runs each case through the command newCmd returns and compares
// flags(options) with Want, or the error with Err. flags picks the
// fields the arguments set (the dependencies are not compared).
func Parse[O any](t *testing.T, newCmd func(*factory.Factory, func(context.Context, *O) error) *cobra.Command, flags func(O) O, cases []ParseCase[O]) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			ios, _, _, _ := factory.Test()
			var got *O
			err := Execute(newCmd(&factory.Factory{IOStreams: ios}, func(_ context.Context, o *O) error { got = o; return nil }), tt.Args...)
			if tt.Err != "" {
				if !errors.As(err, new(*cmdutil.FlagError)) || !strings.Contains(err.Error(), tt.Err) {
					t.Fatalf("error %v, want a usage error containing %q", err, tt.Err)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("options %+v, %v", got, err)
			}
			if f := flags(*got); !reflect.DeepEqual(f, tt.Want) {
				t.Errorf("options\n%+v\nwant\n%+v", f, tt.Want)
			}
		})
	}
}

// Ran is what a command's run did: its exit code as axlr-tui's root
// maps its error, and what it printed.
type Ran struct {
	Code           int
	Stdout, Stderr string
}

// Run calls run with test streams (neither a terminal) and returns what
// it did.
func Run(run func(ios *factory.IOStreams) error) Ran {
	ios, _, out, errOut := factory.Test()
	code := cmdutil.ExitCode(run(ios), errOut)
	return Ran{Code: code, Stdout: out.String(), Stderr: errOut.String()}
}

// Dial returns a client constructor that hands out c.
func Dial[C any](c C) func(context.Context) (C, error) {
	return func(context.Context) (C, error) { return c, nil }
}

// Group checks a command that groups verbs: it holds want, in order, and
// refuses a word that is none of them.
func Group(t *testing.T, newCmd func(*factory.Factory) *cobra.Command, want ...string) {
	t.Helper()
	ios, _, _, _ := factory.Test()
	cmd := newCmd(&factory.Factory{IOStreams: ios})
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("verbs %q, want %q", names, want)
	}
	err := Execute(cmd, "bogus")
	if !errors.As(err, new(*cmdutil.FlagError)) || !strings.Contains(err.Error(), `unknown command "bogus" for "`+cmd.Name()+`"`) {
		t.Fatalf("error %v, want the unknown command refused", err)
	}
}
