// Package exec is axlr-tui exec (and the runtime contract's --exec,
// --decide and --stop-ceremony, which root maps onto it): it runs a prompt
// as one durable execution in axlrd (in a new session, or one it
// continues), decides the call a session waits on, or stops its ceremony,
// then follows the execution to its result through axlrd restarts. Ctrl+C interrupts the execution it
// watches; a second Ctrl+C leaves it running. The runtime contract
// (shared/seeds/runtime-contract.txt) fixes its flags, output and exit
// codes.
package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
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

// Client is what exec needs of axlrd.
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

// ExecOptions are the dependencies and flags of exec.
type ExecOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Getwd is the directory --root defaults to and resolves against.
	Getwd func() (string, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal

	// Prompt is the prompt; "-" reads it from standard input.
	Prompt string
	// Model, empty: the session's, then settings.json's.
	Model string
	// Root is the workspace (default: the current directory for a new
	// session, the session's own when it continues one).
	Root string
	Mode string
	// Ceremony names the published definition to run (NAME[@VERSION]);
	// it runs in ceremony mode, the prompt its brief.
	Ceremony string
	Approve  string
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
	// Deltas follows a session's live deltas from this host's service
	// API (factory.Factory.Deltas); nil, or off a terminal, the answer
	// prints whole at the end.
	Deltas func(ctx context.Context, sessionID string, fn func(contract.Event)) error
}

// NewCmdExec returns the exec command. It parses and validates the
// flags, then calls runF, or execRun when runF is nil.
func NewCmdExec(f *factory.Factory, runF func(context.Context, *ExecOptions) error) *cobra.Command {
	opts := &ExecOptions{
		IO:         f.IOStreams,
		Getwd:      f.Getwd,
		Interrupts: f.Interrupts,
		Client:     factory.ClientFunc[Client](f),
		Deltas:     f.Deltas,
	}
	cmd := &cobra.Command{
		Use:   "exec [flags] PROMPT | exec --session ID --decide approve|deny | exec --session ID --stop-ceremony",
		Short: "Run a prompt, or decide a pending call, as a durable execution in axlrd",
		Long:  long(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fl := cmd.Flags().Lookup("web"); fl.Changed {
				web := fl.Value.String() == "true"
				opts.Web = &web
			}
			if opts.Ceremony != "" {
				if fl := cmd.Flags().Lookup("mode"); fl.Changed && opts.Mode != ceremonies.ModeCeremony {
					return cmdutil.FlagErrorf("--ceremony runs in ceremony mode, not --mode %s", opts.Mode)
				}
				opts.Mode = ceremonies.ModeCeremony
			}
			if err := opts.complete(args); err != nil {
				return err
			}
			return cmdutil.Run(cmd.Context(), opts, runF, execRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "model `NAME` (default: the session's, then settings.json's)")
	fl.StringVar(&opts.Root, "root", "", "workspace `DIR` (default: the current directory)")
	fl.StringVar(&opts.Mode, "mode", "normal", "work mode: "+strings.Join(workflows.SupportedModes, ", "))
	fl.StringVar(&opts.Ceremony, "ceremony", "", "run the published definition `NAME[@VERSION]` (default: its newest version), the prompt as its brief")
	fl.StringVar(&opts.Approve, "approve", string(policy.ApproveNone), "approval level: none, local or all")
	fl.StringVar(&opts.SessionID, "session", "", "session `ID` to continue, or to decide in")
	fl.StringVar(&opts.Decide, "decide", "", "decide the pending call: approve or deny")
	fl.StringVar(&opts.CallID, "call", "", "the call `ID` to decide (default: the pending one)")
	fl.BoolVar(&opts.StopCeremony, "stop-ceremony", false, "stop the ceremony the session runs (its instance ends CANCELLED)")
	fl.StringVar(&opts.Reason, "reason", "", "why, with --decide deny or --stop-ceremony")
	fl.StringVar(&opts.PolicyFile, "policy", "", "execution policy `FILE` (JSON)")
	fl.BoolVar(&opts.JSON, "json", false, "print the event lines and the result as JSON")
	fl.Bool("web", true, "offer web_fetch and web_search to the session (--web=false removes them from it)")
	return cmd
}

func long() string {
	return fmt.Sprintf(`Run a prompt as one durable execution in axlrd, or decide the call a
session waits on, and print what came of it.

  axlr-tui exec "<prompt>" [--model NAME] [--root DIR]
           [--mode normal|review|writer|research|debug|delivery|incident]
           [--ceremony NAME[@VERSION]]
           [--approve none|local|all] [--session ID] [--policy FILE]
           [--web=false] [--json]
  axlr-tui exec --session ID --decide approve|deny [--call ID]
           [--reason TEXT] [--policy FILE] [--json]
  axlr-tui exec --session ID --stop-ceremony [--reason TEXT] [--json]

The runtime contract's forms are the same command: axlr-tui --exec
"<prompt>" ..., axlr-tui --session ID --decide approve|deny ... and
axlr-tui --session ID --stop-ceremony ....

exec - (or --exec -) reads the prompt from standard input (up to %d MiB);
a prompt that starts with "-" goes after "--". Without --session the
prompt opens a new session in --root.

--decide decides the call --call names or, without --call, the call the
session's last result waits on; axlr-tui says on stderr which it decides.

--ceremony runs a definition you published (axlr-tui ceremonies publish)
through the generic loop, its newest version unless @VERSION names one:
the prompt is its brief, every required input AXLR does not fill. Each
step's own config.prompt goes to the model; a human guard ends the
execution waiting for --decide approve, which grants it as the approver.

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

// complete takes the prompt from the arguments and validates the flags.
func (o *ExecOptions) complete(args []string) error {
	if len(args) > 0 {
		o.Prompt, args = args[0], args[1:]
	}
	if len(args) > 0 {
		return cmdutil.FlagErrorf("unexpected argument %q", args[0])
	}
	switch {
	case o.StopCeremony && (o.Prompt != "" || o.Decide != ""):
		return cmdutil.FlagErrorf("--stop-ceremony cannot be used with a prompt or --decide")
	case o.StopCeremony:
		if o.SessionID == "" {
			return cmdutil.FlagErrorf("--stop-ceremony needs --session ID")
		}
	case o.Decide != "" && o.Prompt != "":
		return cmdutil.FlagErrorf("a prompt and --decide cannot be used together")
	case o.Decide != "":
		if o.SessionID == "" {
			return cmdutil.FlagErrorf("--decide needs --session ID")
		}
		if o.Decide != string(contract.Approve) && o.Decide != string(contract.Deny) {
			return cmdutil.FlagErrorf("--decide %q: use approve or deny", o.Decide)
		}
	default:
		if strings.TrimSpace(o.Prompt) == "" {
			return cmdutil.FlagErrorf("exec needs a prompt: axlr-tui exec \"<prompt>\", or exec - to read it from standard input")
		}
		if !slices.Contains(workflows.SupportedModes, o.Mode) {
			return cmdutil.FlagErrorf("unknown mode %q: this axlr-tui supports %s", o.Mode, strings.Join(workflows.SupportedModes, ", "))
		}
		if _, err := policy.ParseApproval(o.Approve); err != nil {
			return cmdutil.FlagErrorf("--approve: %v", err)
		}
		if o.Ceremony != "" {
			if _, _, err := ceremonies.ParseRef(o.Ceremony); err != nil {
				return cmdutil.FlagErrorf("--ceremony: %v", err)
			}
		}
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
	var start func(c Client) (client.Execution, error)
	switch {
	case opts.Decide != "":
		start = func(c Client) (client.Execution, error) { return decide(ctx, opts, c, pol) }
	case opts.StopCeremony:
		start = func(c Client) (client.Execution, error) { return stopCeremony(ctx, opts, c) }
	default:
		req, err := opts.request(pol)
		if err != nil {
			return err
		}
		start = func(c Client) (client.Execution, error) {
			if opts.SessionID != "" {
				return c.Execute(ctx, opts.SessionID, req)
			}
			return c.Start(ctx, req)
		}
	}
	return cmdutil.WithWorker(ctx, opts.Client, func(c Client) error {
		ex, err := start(c)
		if err != nil {
			return err
		}
		return watch(ctx, opts, c, ex)
	})
}

// request is the prompt's execute request: the prompt read from standard
// input for "-", and the workspace of a new session or the one --root
// names.
func (o *ExecOptions) request(pol *policy.Policy) (workflows.ExecuteRequest, error) {
	req := workflows.ExecuteRequest{Prompt: o.Prompt, Model: o.Model, Mode: o.Mode, Ceremony: o.Ceremony, Approval: policy.Approval(o.Approve), Policy: pol, Web: o.Web}
	var err error
	if req.Prompt == "-" {
		if req.Prompt, err = readPrompt(o.IO.In); err != nil {
			return req, err
		}
	}
	if o.SessionID == "" || o.Root != "" {
		if req.Root, err = cmdutil.AbsRoot(o.Root, o.Getwd); err != nil {
			return req, err
		}
	}
	return req, nil
}

// decide decides the call --call names, or the one the session waits on,
// saying which. An incident's draft is approved by the digest the pending
// call shows (so without --call): axlrd refuses the approval if another
// waits by then, and an approval that names no digest.
func decide(ctx context.Context, opts *ExecOptions, c Client, pol *policy.Policy) (client.Execution, error) {
	req := workflows.DecideRequest{CallID: opts.CallID, Decision: contract.Decision(opts.Decide), Reason: opts.Reason, Policy: pol}
	if req.CallID == "" {
		p, err := c.PendingCall(ctx, opts.SessionID)
		if err != nil {
			return client.Execution{}, err
		}
		req.CallID = p.CallID
		what := p.Tool
		if p.Tool == workflows.ApproveTool {
			var a workflows.DraftApproval
			if err := json.Unmarshal(p.Arguments, &a); err != nil {
				return client.Execution{}, fmt.Errorf("read the pending draft of call %s: %w", p.CallID, err)
			}
			req.Digest = a.Digest
			what = fmt.Sprintf("%s, draft %s, sha256 %s", p.Tool, a.Path, a.Digest)
		}
		if p.Tool == workflows.GrantTool {
			var g workflows.GuardApproval
			if err := json.Unmarshal(p.Arguments, &g); err == nil {
				what = fmt.Sprintf("%s, guard %s of instance %s, as %s", p.Tool, g.Guard, g.InstanceID, g.Role)
			}
		}
		fmt.Fprintf(opts.IO.ErrOut, "axlr-tui: deciding call %s (%s)\n", p.CallID, what)
	}
	return c.Decide(ctx, opts.SessionID, req)
}

// stopCeremony stops the ceremony the session's last result shows
// running, naming it.
func stopCeremony(ctx context.Context, opts *ExecOptions, c Client) (client.Execution, error) {
	req := workflows.StopCeremonyRequest{Reason: opts.Reason}
	if r, err := c.Result(ctx, opts.SessionID); err == nil && r.Ceremony != nil && !r.Ceremony.Ended {
		req.InstanceID = r.Ceremony.InstanceID
		fmt.Fprintf(opts.IO.ErrOut, "axlr-tui: stopping ceremony %s (%s %s, state %s)\n", req.InstanceID, r.Ceremony.Definition, r.Ceremony.Version, r.Ceremony.State)
	}
	return c.StopCeremony(ctx, opts.SessionID, req)
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

// watch follows the execution to its result and prints it. The first
// Ctrl+C interrupts the execution, naming it; the second leaves.
func watch(ctx context.Context, opts *ExecOptions, c Client, ex client.Execution) error {
	live := &liveText{}
	f := cmdutil.Follow[*contract.Result]{
		IO: opts.IO, Interrupts: opts.Interrupts, JSON: opts.JSON,
		Notice:    "axlr-tui: interrupting the execution (Ctrl+C again to leave without waiting)",
		Interrupt: func(ctx context.Context) error { return c.Interrupt(ctx, ex, InterruptReason) },
		Watch: func(ctx context.Context, w client.Watcher) (*contract.Result, error) {
			return c.Watch(ctx, ex, w)
		},
		End: func(res *contract.Result) cmdutil.End {
			return cmdutil.End{Line: contract.Event{Type: contract.EventResult, Result: res}, Status: res.Status,
				Print: func(stdout, stderr io.Writer) { cmdutil.PrintResult(stdout, stderr, live.rest(stdout, res)) }}
		},
	}
	if opts.Deltas != nil && opts.IO.IsStdoutTTY() {
		f.Beside = func(ctx context.Context, _ io.Writer) <-chan struct{} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = opts.Deltas(ctx, ex.SessionID, func(ev contract.Event) { live.add(opts.IO.Out, ev) })
			}()
			return done
		}
	}
	return f.Run(ctx)
}

// liveText is the answer as it streamed to a terminal: text deltas are
// printed a line at a time as they come (so the event lines on stderr
// fall between lines, never inside one), and the result's answer then
// prints only when the stream did not end with it.
type liveText struct {
	mu       sync.Mutex
	streamed strings.Builder
	// line is the streamed text after the last newline, not printed yet.
	line string
}

func (l *liveText) add(out io.Writer, ev contract.Event) {
	if ev.Type != contract.EventTextDelta {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streamed.WriteString(ev.Text)
	l.line += ev.Text
	if i := strings.LastIndexByte(l.line, '\n'); i >= 0 {
		fmt.Fprint(out, l.line[:i+1])
		l.line = l.line[i+1:]
	}
}

// rest ends the streamed text and returns the result to print after it:
// without its answer when the terminal shows it already.
func (l *liveText) rest(out io.Writer, res *contract.Result) *contract.Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.streamed.String()
	if s == "" {
		return res
	}
	fmt.Fprintln(out, l.line)
	l.line = ""
	if res.Answer == "" || !strings.HasSuffix(strings.TrimSpace(s), strings.TrimSpace(res.Answer)) {
		return res
	}
	shown := *res
	shown.Answer = ""
	return &shown
}
