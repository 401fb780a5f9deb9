// Package wake is axlr-tui memory wake: what axlrd's memory recalls about
// an about for an intent, within a budget of bytes, as the work axlrd
// runs is woken with: its state, causes, open loops, next actions and
// guardrails, each line with its ref.
package wake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what wake needs of axlrd.
type Client interface {
	cmdutil.Worker
	Memory(ctx context.Context, in workflows.MemoryReadInput) (workflows.MemoryReadResult, error)
}

var _ Client = (*client.Client)(nil)

// WakeOptions are wake's dependencies and flags.
type WakeOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	About  string
	Intent string
	// Bytes is the budget of the wake's lines: at least
	// kmp.MinBudgetBytes.
	Bytes int
	JSON  bool
}

const usage = `usage: axlr-tui memory wake ABOUT "<intent>" [--bytes N] [--json]`

// NewCmdWake returns the wake command. It parses and validates the
// arguments, then calls runF, or wakeRun when runF is nil.
func NewCmdWake(f *factory.Factory, runF func(context.Context, *WakeOptions) error) *cobra.Command {
	opts := &WakeOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   `wake ABOUT "<intent>"`,
		Short: "Print what the memory recalls about an about for an intent",
		Long: fmt.Sprintf(`Print what axlrd's memory recalls about ABOUT (repo:OWNER/NAME,
ws:SESSION_ID) for the intent, as the work axlrd runs is woken with: the
wake's summary, then its sections (current state, causes, open loops,
next actions, guardrails), one line each with the ref of its memory, and
how much of the budget it used. --bytes bounds the lines (default %d, at
least %d); when the memory left some out, the last line says so.
--json prints the wake (kmp_wake's result: summary, wake, proof, warnings,
projection), indented.

  axlr-tui memory wake ABOUT "<intent>" [--bytes N] [--json]

`, workflows.WakeBytes, kmp.MinBudgetBytes) + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(2, usage),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.About, opts.Intent = args[0], args[1]
			if strings.TrimSpace(opts.About) == "" {
				return cmdutil.FlagErrorf("memory wake: ABOUT is empty: name what the memories are about (repo:OWNER/NAME, ws:SESSION_ID)")
			}
			if opts.Bytes < kmp.MinBudgetBytes {
				return cmdutil.FlagErrorf("--bytes is %d: at least %d", opts.Bytes, kmp.MinBudgetBytes)
			}
			return cmdutil.Run(cmd.Context(), opts, runF, wakeRun)
		},
	}
	cmd.Flags().IntVar(&opts.Bytes, "bytes", workflows.WakeBytes, "the budget `N` of the wake's lines, in bytes")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the wake as JSON")
	return cmd
}

func wakeRun(ctx context.Context, opts *WakeOptions) error {
	res, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (workflows.MemoryReadResult, error) {
		return c.Memory(ctx, workflows.MemoryReadInput{Op: workflows.MemoryWake, About: opts.About, Intent: opts.Intent, MaxBytes: opts.Bytes})
	})
	if err != nil {
		return err
	}
	w := res.Wake
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(w)
	}
	for _, warning := range w.Warnings {
		fmt.Fprintln(opts.IO.ErrOut, "warning: "+warning)
	}
	printWake(opts.IO.Out, w)
	return nil
}

// printWake prints a wake for a person: its summary, each section that
// has lines under its heading, and what it used of its budget.
func printWake(out io.Writer, w *kmp.WakeResult) {
	fmt.Fprintln(out, w.Summary)
	for _, s := range []struct {
		heading string
		lines   []string
	}{
		{"current state", w.Wake.CurrentState},
		{"causes", kmp.Wake{CausalSpine: w.Wake.CausalSpine}.Lines()},
		{"open loops", w.Wake.OpenLoops},
		{"next actions", w.Wake.NextActions},
		{"guardrails", w.Wake.Guardrails},
	} {
		if len(s.lines) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s:\n", s.heading)
		for _, l := range s.lines {
			fmt.Fprintln(out, "  "+l)
		}
	}
	p := w.Projection
	footer := fmt.Sprintf("%d of %d bytes; %d of %d memories", p.Budget.UsedBytes, p.Budget.MaxBytes, p.Page.Returned, p.Page.Total)
	if p.Page.HasMore {
		footer += " (more left out: raise --bytes)"
	}
	fmt.Fprintln(out, "\n"+footer)
}
