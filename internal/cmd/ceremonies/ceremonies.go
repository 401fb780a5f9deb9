// Package ceremonies is axlr-tui ceremonies: alone it lists the ceremony
// definitions axlrd runs, its own and those the person published; its
// verb publish (ceremonies/publish) publishes one.
package ceremonies

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/ceremonies/publish"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what the listing needs of axlrd.
type Client interface {
	cmdutil.Worker
	Definitions(ctx context.Context) ([]workflows.DefinitionSummary, error)
}

var _ Client = (*client.Client)(nil)

// ListOptions are the listing's dependencies and flags.
type ListOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	JSON   bool
}

// NewCmdCeremonies returns the ceremonies command with its verb publish.
// It lists through runF, or listRun when runF is nil.
func NewCmdCeremonies(f *factory.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "ceremonies",
		Short: "List the ceremony definitions axlrd runs, and publish your own",
		Long: `List the ceremony definitions axlrd runs: its own, with the mode, job or
plan that starts each, then those you published, each with its versions
and the newest one's description. --json
prints a JSON array of {name, versions, description, starts, built_in}.

  axlr-tui ceremonies [--json]
  axlr-tui ceremonies publish FILE.yaml [--json]

` + cmdutil.ExitHelp,
		Args: cmdutil.NoCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.Run(cmd.Context(), opts, runF, listRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the definitions as a JSON array")
	cmd.AddCommand(publish.NewCmdPublish(f, nil))
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	defs, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) ([]workflows.DefinitionSummary, error) { return c.Definitions(ctx) })
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, defs)
		return nil
	}
	printDefinitions(opts.IO.Out, defs)
	return nil
}

// printDefinitions prints one definition a line: name, versions, what
// starts it and the newest version's description.
func printDefinitions(out io.Writer, defs []workflows.DefinitionSummary) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSIONS\tSTARTS\tDESCRIPTION")
	for _, d := range defs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Name, strings.Join(d.Versions, ", "), d.Starts, d.Description)
	}
	tw.Flush()
}
