// Package list is axlr-tui memory list: the entries axlrd's memory holds
// about an about, newest first, of every kind or of one.
package list

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what list needs of axlrd.
type Client interface {
	cmdutil.Worker
	Memory(ctx context.Context, in workflows.MemoryReadInput) (workflows.MemoryReadResult, error)
}

var _ Client = (*client.Client)(nil)

// ListOptions are list's dependencies and flags.
type ListOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	About string
	// Kind keeps the entries of one of kmp.Kinds; empty: all.
	Kind string
	// Limit bounds the entries: 1 to kmp.MaxListLimit.
	Limit int
	JSON  bool
}

// summaryWidth is how many characters of an entry's text the table shows.
const summaryWidth = 80

// NewCmdList returns the list command. It parses and validates the
// arguments, then calls runF, or listRun when runF is nil.
func NewCmdList(f *factory.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "list ABOUT",
		Short: "List the entries the memory holds about an about, newest first",
		Long: fmt.Sprintf(`List the entries axlrd's memory holds about ABOUT (repo:OWNER/NAME,
ws:SESSION_ID), newest first: each one's ref, kind, when it was observed
(RFC 3339) and its text, cut to %d characters, then how many of the
about's entries it listed. --limit bounds the entries (default %d, at
most %d). --json prints the listing (kmp_list's result: entries, each
{ref, kind, text, metadata}, and page), indented. --kind keeps the
entries of one kind:
%s

  axlr-tui memory list ABOUT [--kind KIND] [--limit N] [--json]

`, summaryWidth, kmp.DefaultListLimit, kmp.MaxListLimit, cmdutil.FieldsHelp(kmp.Kinds)) + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, "usage: axlr-tui memory list ABOUT [--kind KIND] [--limit N] [--json]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.About = args[0]
			switch {
			case strings.TrimSpace(opts.About) == "":
				return cmdutil.FlagErrorf("memory list: ABOUT is empty: name what the memories are about (repo:OWNER/NAME, ws:SESSION_ID)")
			case opts.Kind != "" && !kmp.KnownKind(opts.Kind):
				return cmdutil.FlagErrorf("--kind %q: one of %s", opts.Kind, strings.Join(kmp.Kinds, ", "))
			case opts.Limit < 1 || opts.Limit > kmp.MaxListLimit:
				return cmdutil.FlagErrorf("--limit is %d: between 1 and %d", opts.Limit, kmp.MaxListLimit)
			}
			return cmdutil.Run(cmd.Context(), opts, runF, listRun)
		},
	}
	cmd.Flags().StringVar(&opts.Kind, "kind", "", "list the entries of one `KIND` only")
	cmd.Flags().IntVar(&opts.Limit, "limit", kmp.DefaultListLimit, "list at most `N` entries")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the listing as JSON")
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	res, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (workflows.MemoryReadResult, error) {
		return c.Memory(ctx, workflows.MemoryReadInput{Op: workflows.MemoryList, About: opts.About, Kind: opts.Kind, Limit: opts.Limit})
	})
	if err != nil {
		return err
	}
	l := res.List
	switch {
	case opts.JSON:
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	case len(l.Entries) == 0:
		what := "memories"
		if opts.Kind != "" {
			what = opts.Kind + " memories"
		}
		fmt.Fprintf(opts.IO.ErrOut, "axlr-tui: no %s about %s\n", what, opts.About)
		return nil
	}
	return printList(opts.IO.Out, l)
}

// printList prints a table of the entries, then how many of the about's
// it holds.
func printList(out io.Writer, l *kmp.ListResult) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tKIND\tOBSERVED\tSUMMARY")
	for _, e := range l.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Ref, e.Kind, observed(e.Metadata), cut(e.Text, summaryWidth))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d of %d memories\n", l.Page.Returned, l.Page.Total)
	return err
}

// observed is when an entry was observed, its metadata's observed_at in
// RFC 3339 (UTC, to the second); an observed_at that is no RFC 3339 time
// as it is, and none "-".
func observed(md map[string]any) string {
	s, _ := md["observed_at"].(string)
	if s == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format(time.RFC3339)
}

// cut is s on one line, cut to n characters on a rune boundary: the
// n-th is "…" when it was longer.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n - 1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}
