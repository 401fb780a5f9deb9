// Package publish is axlr-tui ceremonies publish: it has axlrd validate a
// ceremony definition the person wrote and publish it to MADE, and prints
// its digest.
package publish

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what publish needs of axlrd.
type Client interface {
	cmdutil.Worker
	PublishDefinition(ctx context.Context, yaml []byte) (workflows.PublishDefinitionResult, error)
}

var _ Client = (*client.Client)(nil)

// PublishOptions are publish's dependencies and flags.
type PublishOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	File string
	JSON bool
}

// NewCmdPublish returns the publish command. It parses the arguments,
// then calls runF, or publishRun when runF is nil.
func NewCmdPublish(f *factory.Factory, runF func(context.Context, *PublishOptions) error) *cobra.Command {
	opts := &PublishOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "publish FILE.yaml",
		Short: "Validate a ceremony definition and publish it",
		Long: fmt.Sprintf(`Validate a ceremony definition you wrote with MADE's validator and publish
it: every error names its line (a YAML value that holds ": " must be
quoted). It prints the digest. The same bytes again change nothing and say
so; other bytes under a published name and version are refused: publish a
new version. Names that begin with axlr_ are axlrd's own. At most %d KiB.
--json prints {outcome, name, version, digest, warnings}.

`, workflows.MaxDefinitionBytes>>10) + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, "usage: axlr-tui ceremonies publish FILE.yaml [--json]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, publishRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the publication as JSON")
	return cmd
}

func publishRun(ctx context.Context, opts *PublishOptions) error {
	fi, err := os.Stat(opts.File)
	if err != nil {
		return fmt.Errorf("ceremonies publish: %w", err)
	}
	if fi.Size() > workflows.MaxDefinitionBytes {
		return fmt.Errorf("ceremonies publish: %s is %d bytes: a definition is at most %d", opts.File, fi.Size(), workflows.MaxDefinitionBytes)
	}
	yaml, err := os.ReadFile(opts.File)
	if err != nil {
		return fmt.Errorf("ceremonies publish: %w", err)
	}
	res, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (workflows.PublishDefinitionResult, error) {
		return c.PublishDefinition(ctx, yaml)
	})
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(opts.IO.ErrOut, "warning: "+w)
	}
	cmdutil.Report(opts.IO.Out, opts.JSON, res, sentence(res))
	return nil
}

// sentence says what the publication did.
func sentence(r workflows.PublishDefinitionResult) string {
	what := "published"
	if r.Outcome == "already_published" {
		what = "was published already with these bytes: nothing changed"
	}
	return strings.Join([]string{r.Name, r.Version, what + ";", "digest", r.Digest}, " ")
}
