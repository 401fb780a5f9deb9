// Package exec is axlr-tui's --exec and --decide: it runs a prompt as one
// durable execution in axlrd (in a new session, or one it continues), or
// decides the call a session waits on, then follows the execution to its
// result through axlrd restarts. Ctrl+C interrupts the execution it
// watches; a second Ctrl+C leaves it running. The runtime contract
// (shared/seeds/runtime-contract.txt) fixes its flags, output and exit
// codes.
package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// MaxPromptSize bounds a prompt read from standard input (--exec -).
// Temporal refuses a payload over 2 MiB, and the prompt travels whole in
// the execute update and the turn's first activity; 1 MiB leaves room for
// JSON's escapes, and is more text than a model's context holds anyway.
const MaxPromptSize = 1 << 20

// InterruptReason is the interrupted result's error after a Ctrl+C.
const InterruptReason = "interrupted from axlr-tui"

// Client is what --exec and --decide need of axlrd.
type Client interface {
	CheckWorker(ctx context.Context) error
	Start(ctx context.Context, req workflows.ExecuteRequest) (client.Execution, error)
	Execute(ctx context.Context, sessionID string, req workflows.ExecuteRequest) (client.Execution, error)
	PendingCall(ctx context.Context, sessionID string) (*contract.PendingCall, error)
	Decide(ctx context.Context, sessionID string, req workflows.DecideRequest) (client.Execution, error)
	Result(ctx context.Context, sessionID string) (*contract.Result, error)
	StopCeremony(ctx context.Context, sessionID string, req workflows.StopCeremonyRequest) (client.Execution, error)
	Interrupt(ctx context.Context, ex client.Execution, reason string) error
	Watch(ctx context.Context, ex client.Execution, w client.Watcher) (*contract.Result, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// ExecOptions are the dependencies and flags of --exec and --decide.
type ExecOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Getwd is the directory --root defaults to and resolves against.
	Getwd func() (string, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal

	// Prompt is --exec's prompt; "-" reads it from standard input.
	Prompt string
	// Model, empty: the session's, then settings.json's.
	Model string
	// Root is the workspace (default: the current directory for a new
	// session, the session's own when it continues one).
	Root    string
	Mode    string
	Approve string
	// SessionID is the session to continue or decide in.
	SessionID string
	// Decide is approve or deny; empty runs Prompt.
	Decide string
	// CallID is the call to decide (default: the session's pending call).
	CallID string
	// StopCeremony stops the session's ceremony.
	StopCeremony bool
	Reason       string
	PolicyFile   string
	JSON         bool
	// Web, when set, offers or removes the web tools for the session.
	Web *bool
}

// NewCmdExec returns the command of --exec and --decide. It parses and
// validates the flags, then calls runF, or execRun when runF is nil.
func NewCmdExec(f *factory.Factory, runF func(context.Context, *ExecOptions) error) *cobra.Command {
	opts := &ExecOptions{
		IO:         f.IOStreams,
		Getwd:      f.Getwd,
		Interrupts: f.Interrupts,
		Client:     factory.ClientFunc[Client](f),
	}
	cmd := &cobra.Command{
		Use:   "axlr-tui --exec PROMPT | --session ID --decide approve|deny",
		Short: "Run a prompt, or decide a pending call, as a durable execution in axlrd",
		Long:  long(),
		// pflag takes the argument after a string flag as its value even
		// when it is a flag, so RunE takes --exec out of the arguments
		// first: --exec --model m "prompt" works as --exec "prompt".
		DisableFlagParsing: true,
		SilenceErrors:      true,
		SilenceUsage:       true,
		RunE: func(cmd *cobra.Command, args []string) error {
			isExec, prompt, rest := cmdutil.TakeTextFlag(args, "exec")
			if err := cmd.Flags().Parse(rest); err != nil {
				return cmdutil.FlagErrorWrap(err)
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			if fl := cmd.Flags().Lookup("web"); fl.Changed {
				web := fl.Value.String() == "true"
				opts.Web = &web
			}
			if err := opts.complete(isExec, prompt, cmd.Flags().Args()); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return execRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "model `NAME` (default: the session's, then settings.json's)")
	fl.StringVar(&opts.Root, "root", "", "workspace `DIR` (default: the current directory)")
	fl.StringVar(&opts.Mode, "mode", "normal", "work mode: "+strings.Join(workflows.SupportedModes, ", "))
	fl.StringVar(&opts.Approve, "approve", string(policy.ApproveNone), "approval level: none, local or all")
	fl.StringVar(&opts.SessionID, "session", "", "session `ID` to continue, or to decide in")
	fl.StringVar(&opts.Decide, "decide", "", "decide the pending call: approve or deny")
	fl.StringVar(&opts.CallID, "call", "", "the call `ID` to decide (default: the pending one)")
	fl.BoolVar(&opts.StopCeremony, "stop-ceremony", false, "stop the ceremony the session runs (its instance ends CANCELLED)")
	fl.StringVar(&opts.Reason, "reason", "", "why, with --decide deny or --stop-ceremony")
	fl.StringVar(&opts.PolicyFile, "policy", "", "execution policy `FILE` (JSON)")
	fl.BoolVar(&opts.JSON, "json", false, "print the event lines and the result as JSON")
	fl.Bool("web", true, "offer web_fetch and web_search to the session (--web=false removes them from it)")
	cmdutil.AddConnectionFlags(fl, &f.Conn)
	return cmd
}

func long() string {
	return fmt.Sprintf(`Run a prompt as one durable execution in axlrd, or decide the call a
session waits on, and print what came of it.

  axlr-tui --exec "<prompt>" [--model NAME] [--root DIR]
           [--mode normal|review|writer|research|debug|delivery]
           [--approve none|local|all] [--session ID] [--policy FILE]
           [--web=false] [--json]
  axlr-tui --session ID --decide approve|deny [--call ID] [--reason TEXT]
           [--policy FILE] [--json]
  axlr-tui --session ID --stop-ceremony [--reason TEXT] [--json]

--exec takes the prompt as its value or as the first argument after the
flags; --exec - reads it from standard input (up to %d MiB). Without
--session the prompt opens a new session in --root.

--decide decides the call --call names or, without --call, the call the
session's last result waits on; axlr-tui says on stderr which it decides.

--stop-ceremony stops the ceremony the session runs (a /debug or /delivery
step left open): the step is cancelled, the MADE instance ends CANCELLED,
the session is back in normal mode and nothing in the workspace is rolled
back. The next prompt tells the model not to resume it.

Without --json, stdout is the answer and stderr the progress. With --json,
stdout is one JSON line per event, then {"type":"result","result":{...}}.
Event fields:
%s
Result fields:
%s

An execution keeps running in axlrd when axlr-tui stops or axlrd restarts:
axlr-tui reconnects and waits for its result. Ctrl+C interrupts the
execution; a second Ctrl+C leaves without waiting.

Exit codes: 0 completed, 3 a call waits for a decision, 1 interrupted or
failed, 2 usage error, 4 axlrd unreachable, 130 left with a second Ctrl+C.`,
		MaxPromptSize>>20, cmdutil.FieldsHelp(cmdutil.EventFields), cmdutil.FieldsHelp(cmdutil.ResultFields))
}

// complete sets the prompt and validates the flags.
func (o *ExecOptions) complete(isExec bool, prompt string, pos []string) error {
	if isExec && prompt == "" && len(pos) > 0 {
		prompt, pos = pos[0], pos[1:]
	}
	o.Prompt = prompt
	if len(pos) > 0 {
		return cmdutil.FlagErrorf("unexpected argument %q", pos[0])
	}
	switch {
	case isExec && o.Decide != "":
		return cmdutil.FlagErrorf("--exec and --decide cannot be used together")
	case o.StopCeremony && (isExec || o.Decide != ""):
		return cmdutil.FlagErrorf("--stop-ceremony cannot be used with --exec or --decide")
	case o.StopCeremony:
		if o.SessionID == "" {
			return cmdutil.FlagErrorf("--stop-ceremony needs --session ID")
		}
	case o.Decide != "":
		if o.SessionID == "" {
			return cmdutil.FlagErrorf("--decide needs --session ID")
		}
		if o.Decide != string(contract.Approve) && o.Decide != string(contract.Deny) {
			return cmdutil.FlagErrorf("--decide %q: use approve or deny", o.Decide)
		}
	case isExec:
		if strings.TrimSpace(o.Prompt) == "" {
			return cmdutil.FlagErrorf("--exec needs a prompt")
		}
		if !slices.Contains(workflows.SupportedModes, o.Mode) {
			return cmdutil.FlagErrorf("unknown mode %q: this axlr-tui supports %s", o.Mode, strings.Join(workflows.SupportedModes, ", "))
		}
		if _, err := policy.ParseApproval(o.Approve); err != nil {
			return cmdutil.FlagErrorf("--approve: %v", err)
		}
	default:
		return cmdutil.FlagErrorf("nothing to do: use --exec \"<prompt>\", --decide, --stop-ceremony, result or history (see --help)")
	}
	if o.SessionID != "" && !session.ValidID(o.SessionID) {
		return cmdutil.FlagErrorf("--session %q is not a session id (a lowercase UUID)", o.SessionID)
	}
	return nil
}

func execRun(ctx context.Context, opts *ExecOptions) error {
	pol, err := readPolicy(opts.PolicyFile)
	if err != nil {
		return err
	}
	if opts.Decide != "" {
		return decideRun(ctx, opts, pol)
	}
	if opts.StopCeremony {
		return stopRun(ctx, opts)
	}
	req := workflows.ExecuteRequest{Prompt: opts.Prompt, Model: opts.Model, Mode: opts.Mode, Approval: policy.Approval(opts.Approve), Policy: pol, Web: opts.Web}
	if req.Prompt == "-" {
		if req.Prompt, err = readPrompt(opts.IO.In); err != nil {
			return err
		}
	}
	if opts.SessionID == "" || opts.Root != "" {
		if req.Root, err = absRoot(opts.Root, opts.Getwd); err != nil {
			return err
		}
	}
	c, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	var ex client.Execution
	if opts.SessionID != "" {
		ex, err = c.Execute(ctx, opts.SessionID, req)
	} else {
		ex, err = c.Start(ctx, req)
	}
	if err != nil {
		return err
	}
	return watch(ctx, opts, c, ex)
}

func decideRun(ctx context.Context, opts *ExecOptions, pol *policy.Policy) error {
	c, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	call := opts.CallID
	if call == "" {
		p, err := c.PendingCall(ctx, opts.SessionID)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "axlr-tui: deciding call %s (%s)\n", p.CallID, p.Tool)
		call = p.CallID
	}
	ex, err := c.Decide(ctx, opts.SessionID, workflows.DecideRequest{
		CallID: call, Decision: contract.Decision(opts.Decide), Reason: opts.Reason, Policy: pol,
	})
	if err != nil {
		return err
	}
	return watch(ctx, opts, c, ex)
}

// stopRun stops the ceremony the session's last result shows running,
// naming it, and follows the stop to its result.
func stopRun(ctx context.Context, opts *ExecOptions) error {
	c, err := connect(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	req := workflows.StopCeremonyRequest{Reason: opts.Reason}
	if r, err := c.Result(ctx, opts.SessionID); err == nil && r.Ceremony != nil && !r.Ceremony.Ended {
		req.InstanceID = r.Ceremony.InstanceID
		fmt.Fprintf(opts.IO.ErrOut, "axlr-tui: stopping ceremony %s (%s %s, state %s)\n", req.InstanceID, r.Ceremony.Definition, r.Ceremony.Version, r.Ceremony.State)
	}
	ex, err := c.StopCeremony(ctx, opts.SessionID, req)
	if err != nil {
		return err
	}
	return watch(ctx, opts, c, ex)
}

// connect dials axlrd and makes sure its worker serves this host.
func connect(ctx context.Context, opts *ExecOptions) (Client, error) {
	c, err := opts.Client(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.CheckWorker(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func readPolicy(path string) (*policy.Policy, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, cmdutil.FlagErrorf("read policy: %v", err)
	}
	p, err := policy.Parse(data)
	if err != nil {
		return nil, cmdutil.FlagErrorf("%s: %v", path, err)
	}
	return p, nil
}

// readPrompt reads --exec -'s prompt: all of standard input, up to
// MaxPromptSize.
func readPrompt(in io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(in, MaxPromptSize+1))
	if err != nil {
		return "", fmt.Errorf("read the prompt from standard input: %w", err)
	}
	if len(b) > MaxPromptSize {
		return "", cmdutil.FlagErrorf("--exec -: the prompt on standard input is over the %d MiB limit", MaxPromptSize>>20)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", cmdutil.FlagErrorf("--exec -: standard input holds no prompt")
	}
	return string(b), nil
}

// absRoot is the workspace's absolute path: dir, resolved against the
// current directory, which it defaults to.
func absRoot(dir string, getwd func() (string, error)) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		wd, err := getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		dir = filepath.Join(wd, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return "", cmdutil.FlagErrorf("root %s is not a directory", dir)
	}
	return filepath.Clean(dir), nil
}

// watch follows the execution to its result and prints it. The first
// Ctrl+C interrupts the execution, naming it; the second leaves.
func watch(ctx context.Context, opts *ExecOptions, c Client, ex client.Execution) error {
	stderr := cmdutil.NewLockedWriter(opts.IO.ErrOut)
	wctx, stop := cmdutil.OnInterrupt(ctx, opts.Interrupts, stderr, "axlr-tui: interrupting the execution (Ctrl+C again to leave without waiting)",
		func(ctx context.Context) error { return c.Interrupt(ctx, ex, InterruptReason) })
	res, err := c.Watch(wctx, ex, &printer{out: opts.IO.Out, errOut: stderr, json: opts.JSON})
	if left := stop(); err != nil {
		if left {
			return cmdutil.ErrLeft
		}
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, contract.Event{Type: contract.EventResult, Result: res})
	} else {
		cmdutil.PrintResult(opts.IO.Out, stderr, res)
	}
	return cmdutil.StatusExit(res.Status)
}
