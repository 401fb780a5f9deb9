// Package install is axlr-tui jobs install: it installs a merged job's
// candidate build over axlrd's executable and this axlr-tui's.
package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what install needs of axlrd.
type Client interface {
	cmdutil.Worker
	InstallJob(ctx context.Context, id, tuiPath string) (domain.Record, error)
}

var _ Client = (*client.Client)(nil)

// InstallOptions are install's dependencies and flags.
type InstallOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Executable is axlr-tui's own path, which install replaces too.
	Executable func() (string, error)

	ID   string
	JSON bool
}

// NewCmdInstall returns the install command. It parses the arguments,
// then calls runF, or installRun when runF is nil.
func NewCmdInstall(f *factory.Factory, runF func(context.Context, *InstallOptions) error) *cobra.Command {
	opts := &InstallOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Executable: os.Executable}
	cmd := &cobra.Command{
		Use:   "install ID",
		Short: "Install a merged job's candidate over axlrd and axlr-tui (restart axlrd after)",
		Long: `Install the candidate build of a merged job over axlrd's executable and
this axlr-tui's, each kept first as a backup beside it. axlrd never
restarts itself: restart it (and any axlr-tui running) to run the new
build; --json prints the record.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("install ID [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, installRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record as JSON")
	return cmd
}

func installRun(ctx context.Context, opts *InstallOptions) error {
	rec, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (domain.Record, error) {
		self, err := opts.Executable()
		if err != nil {
			return domain.Record{}, fmt.Errorf("jobs install: find axlr-tui's own executable: %w", err)
		}
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		return c.InstallJob(ctx, opts.ID, self)
	})
	if err != nil {
		return err
	}
	version := ""
	if rec.Candidate != nil {
		version = rec.Candidate.Version
	}
	var installed []domain.Installed
	if rec.Installed != nil {
		installed = append(installed, *rec.Installed)
	}
	cmdutil.Report(opts.IO.Out, opts.JSON, rec, workflows.InstallNote(version, installed))
	return nil
}
