// Package memory is axlr-tui memory: it groups the operator's reads of
// axlrd's memory, each verb in its own package: memory/wake (what the
// memory recalls about an about for an intent, as work is woken with),
// memory/list (an about's entries, newest first) and memory/show (one
// entry with its evidence and links). Each runs axlrd's short
// workflows.MemoryRead and prints its answer, or the memory's refusal in
// its own words.
package memory

import (
	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/memory/list"
	"github.com/underpass-ai/axlr/internal/cmd/memory/show"
	"github.com/underpass-ai/axlr/internal/cmd/memory/wake"
)

// NewCmdMemory returns the memory command with its verbs. Alone it
// prints its help on stderr and is a usage error: it has no read of its
// own.
func NewCmdMemory(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Read what axlrd's memory holds: a wake, an about's entries, one entry",
		Long: `Read what axlrd's memory holds: wake prints what it recalls about an
about for an intent, as the work axlrd runs is woken with; list prints an
about's entries, newest first; show prints one entry with its evidence
and links. An about names what memories are about: repo:OWNER/NAME for a
repository's, ws:SESSION_ID for a session's. A ref names one entry (it
holds ":entry:"); the lines of a wake and of a listing carry theirs.

  axlr-tui memory wake ABOUT "<intent>" [--bytes N] [--json]
  axlr-tui memory list ABOUT [--kind KIND] [--limit N] [--json]
  axlr-tui memory show REF [--about ABOUT] [--json]

--json prints the memory's own result, indented: the wake, the listing or
the entry. An about the memory holds nothing about, or a ref it does not
hold, is refused in the memory's words (not_found: …).

` + cmdutil.ExitHelp,
		Args: cmdutil.NoCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(f.IOStreams.ErrOut)
			if err := cmd.Help(); err != nil {
				return err
			}
			return cmdutil.FlagErrorf("memory needs a verb: wake, list or show")
		},
	}
	cmd.AddCommand(
		wake.NewCmdWake(f, nil),
		list.NewCmdList(f, nil),
		show.NewCmdShow(f, nil),
	)
	return cmd
}
