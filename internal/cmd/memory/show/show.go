// Package show is axlr-tui memory show: one entry of axlrd's memory by
// its ref, with its metadata, text, evidence and the links to and from
// it.
package show

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what show needs of axlrd.
type Client interface {
	cmdutil.Worker
	Memory(ctx context.Context, in workflows.MemoryReadInput) (workflows.MemoryReadResult, error)
}

var _ Client = (*client.Client)(nil)

// ShowOptions are show's dependencies and flags.
type ShowOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	Ref string
	// About, when set, is the about the entry must be of.
	About string
	JSON  bool
}

// NewCmdShow returns the show command. It parses and validates the
// arguments, then calls runF, or showRun when runF is nil.
func NewCmdShow(f *factory.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "show REF",
		Short: "Print one entry of the memory, with its evidence and links",
		Long: `Print the entry of axlrd's memory REF names (a ref holds ":entry:"; the
lines of a wake and of a listing carry theirs): its ref, kind, about,
actor, when it was observed and its labels, then its text, its evidence,
and the links to it (incoming) and from it (outgoing), each as
"<rel> <ref> — <why>". --about refuses an entry of another about.
--json prints the entry (kmp_inspect's result: summary, object, links,
evidence), indented.

  axlr-tui memory show REF [--about ABOUT] [--json]

` + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, "usage: axlr-tui memory show REF [--about ABOUT] [--json]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			if strings.TrimSpace(opts.Ref) == "" {
				return cmdutil.FlagErrorf("memory show: REF is empty: name an entry (ABOUT:entry:N, as a wake or a listing prints it)")
			}
			return cmdutil.Run(cmd.Context(), opts, runF, showRun)
		},
	}
	cmd.Flags().StringVar(&opts.About, "about", "", "refuse an entry that is not about `ABOUT`")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the entry as JSON")
	return cmd
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	res, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (workflows.MemoryReadResult, error) {
		return c.Memory(ctx, workflows.MemoryReadInput{Op: workflows.MemoryShow, Ref: opts.Ref, About: opts.About})
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res.Show)
	}
	printEntry(opts.IO.Out, res.Show)
	return nil
}

// printEntry prints an entry for a person, one field a line; a field
// with several lines goes on under its first. Empty fields are left out.
func printEntry(out io.Writer, r *kmp.InspectResult) {
	o := r.Object
	field := func(name string, values ...string) {
		for i, l := range values {
			if i > 0 {
				name = ""
			}
			fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("%-13s%s", name, l), " "))
		}
	}
	field("ref:", o.Ref)
	field("kind:", o.Kind)
	for _, k := range []string{"about", "actor", "observed_at"} {
		if v := metadata(o.Metadata, k); v != "" {
			field(k+":", v)
		}
	}
	if ls := labels(o.Metadata["labels"]); len(ls) > 0 {
		field("labels:", strings.Join(ls, ", "))
	}
	field("text:", lines(o.Text)...)
	var evidence []string
	for _, e := range r.Evidence {
		evidence = append(evidence, lines(e)...)
	}
	field("evidence:", evidence...)
	field("incoming:", links(r.Links.Incoming)...)
	field("outgoing:", links(r.Links.Outgoing)...)
}

// lines are s's lines; none when s is empty.
func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// metadata is the metadata's value of key as text, "" when absent.
func metadata(md map[string]any, key string) string {
	v, ok := md[key]
	if !ok || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// labels are an entry's labels as key=value, sorted: each value of a key
// (a JSON array's) its own.
func labels(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		values, ok := m[k].([]any)
		if !ok {
			values = []any{m[k]}
		}
		var vs []string
		for _, x := range values {
			vs = append(vs, fmt.Sprint(x))
		}
		slices.Sort(vs)
		for _, x := range vs {
			out = append(out, k+"="+x)
		}
	}
	return out
}

// links are an entry's links, "<rel> <ref> — <why>" each (without a
// why, "<rel> <ref>").
func links(ls []kmp.LinkedRef) []string {
	var out []string
	for _, l := range ls {
		s := l.Rel + " " + l.Ref
		if l.Why != "" {
			s += " — " + l.Why
		}
		out = append(out, s)
	}
	return out
}
