package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// PlanTask implements workflows.PlanTaskActivities: what a plan task's
// worker compares its steps by, and what puts its scope back. Digests
// reads files through an os.Root of the workspace, so a path or a
// symbolic link cannot lead out of it; Status runs git in the workspace
// as a check runs (argv, the restricted environment, a timeout, capped
// output); HandBack reads a red or green hand-back from the transcript
// and validates it again. All three only read, so a retry repeats
// nothing. KeepScope, RestoreScope and DropScope (keptscope.go) keep the
// scope files' content in a file of their own under Scopes, never in
// history nor in the session log (whose redaction would change it), and
// each is idempotent on its key.
type PlanTask struct {
	Store      *session.Store
	Workspaces *Workspaces
	// Scopes is the directory the scopes are kept in (axlrd:
	// <state dir>/scopes); KeepScope refuses without one.
	Scopes string
}

var _ workflows.PlanTaskActivities = (*PlanTask)(nil)

// MaxStatusBytes bounds what git status may print for a task's workspace.
const MaxStatusBytes = 1 << 20

// Digests returns the SHA-256 digest, in hex, of each file named, "" for
// one that does not exist. A path that is not a clean workspace path, that
// leads out of the workspace, or that names something other than a regular
// file (a directory, a FIFO) is refused.
func (a *PlanTask) Digests(ctx context.Context, in workflows.DigestsInput) (map[string]string, error) {
	if err := checkRoot(in.Root); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(in.Root)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", in.Root, err)
	}
	defer root.Close()
	out := make(map[string]string, len(in.Paths))
	for _, p := range in.Paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, err := digest(root, p)
		if err != nil {
			return nil, err
		}
		out[p] = sum
	}
	return out, nil
}

func digest(root *os.Root, p string) (string, error) {
	refuse := func(why string, err error) (string, error) {
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("digest of %q: %s", p, why), workflows.ErrTypeBadRequest, err)
	}
	if c, ok := plans.CleanPath(p); !ok || c != p {
		return refuse("not a clean path inside the workspace", nil)
	}
	fi, err := root.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return "", nil
	case err != nil:
		return refuse(err.Error(), err)
	case !fi.Mode().IsRegular():
		return refuse("not a regular file ("+fi.Mode().Type().String()+")", nil)
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("digest of %q: %w", p, err)
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !opened.Mode().IsRegular() {
		return refuse("replaced while it was read", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("digest of %q: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Status runs git in the workspace: a workspace outside a Git work tree
// (or a host without git) has Git false; inside one, HEAD (empty before
// the first commit) and every path git status --porcelain shows inside
// the workspace, untracked files one by one, relative to the workspace.
func (a *PlanTask) Status(ctx context.Context, in workflows.StatusInput) (workflows.WorkspaceStatus, error) {
	ws, err := a.Workspaces.Get(in.Root)
	if err != nil {
		return workflows.WorkspaceStatus{}, err
	}
	prefix, ok, err := runGit(ctx, ws, "rev-parse", "--show-prefix")
	if err != nil || !ok {
		return workflows.WorkspaceStatus{}, err
	}
	s := workflows.WorkspaceStatus{Git: true}
	if head, ok, err := runGit(ctx, ws, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return workflows.WorkspaceStatus{}, err
	} else if ok {
		s.Head = strings.TrimSpace(head)
	}
	out, ok, err := runGit(ctx, ws, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", ".")
	if err != nil {
		return workflows.WorkspaceStatus{}, err
	}
	if !ok {
		return workflows.WorkspaceStatus{}, fmt.Errorf("git status in %s failed: %s", in.Root, strings.TrimSpace(out))
	}
	s.Changed, err = porcelainPaths(out, strings.TrimSpace(prefix))
	if err != nil {
		return workflows.WorkspaceStatus{}, fmt.Errorf("git status in %s: %w", in.Root, err)
	}
	return s, nil
}

// runGit runs git with args in the workspace: its output (stdout; stderr
// when it failed) and whether it exited zero. A git that cannot start is
// a run that did not succeed.
func runGit(ctx context.Context, ws *tools.Workspace, args ...string) (string, bool, error) {
	raw, err := json.Marshal(tools.ExecArgs{Program: "git", Args: args, TimeoutMS: ptr64(CheckTimeout.Milliseconds()), MaxOutputBytes: ptr64(MaxStatusBytes)})
	if err != nil {
		return "", false, fmt.Errorf("encode git %s: %w", strings.Join(args, " "), err)
	}
	res, err := ws.Call(ctx, tools.Exec, raw)
	if ctx.Err() != nil {
		return "", false, ctx.Err()
	}
	var te *tools.Error
	switch {
	case errors.As(err, &te) && te.Code == tools.CodeTimeout:
		return "", false, fmt.Errorf("git %s ran out of time: %s", strings.Join(args, " "), te.Message)
	case errors.As(err, &te):
		return te.Message, false, nil
	case err != nil:
		return "", false, fmt.Errorf("run git %s: %w", strings.Join(args, " "), err)
	}
	var out tools.ExecOutput
	if err := json.Unmarshal(res, &out); err != nil {
		return "", false, fmt.Errorf("decode the output of git %s: %w", strings.Join(args, " "), err)
	}
	if out.Truncated {
		return "", false, fmt.Errorf("git %s printed more than %d bytes", strings.Join(args, " "), MaxStatusBytes)
	}
	if out.ExitCode != 0 {
		return out.Stderr, false, nil
	}
	return out.Stdout, true, nil
}

// porcelainPaths reads git status --porcelain=v1 -z --no-renames: one
// "XY path" entry per NUL, the path relative to the repository's top,
// which the workspace is prefix under. It returns the paths relative to
// the workspace, sorted.
func porcelainPaths(out, prefix string) ([]string, error) {
	var paths []string
	for entry := range strings.SplitSeq(out, "\x00") {
		if entry == "" {
			continue
		}
		if len(entry) < 4 || entry[2] != ' ' {
			return nil, fmt.Errorf("unexpected entry %q", entry)
		}
		p, ok := strings.CutPrefix(entry[3:], prefix)
		if !ok {
			return nil, fmt.Errorf("%q is outside the workspace %q", entry[3:], prefix)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// HandBack reads the axlr_step_done call of a plan task's red or green
// step from the transcript and returns its fields. The driver's hand-back
// check accepted the call before, so one that no longer validates means
// the transcript diverged.
func (a *PlanTask) HandBack(ctx context.Context, in workflows.HandBackInput) (workflows.TaskHandBack, error) {
	log, err := openLog(a.Store, in.SessionID)
	if err != nil {
		return workflows.TaskHandBack{}, err
	}
	tc, err := findCall(log, in.CallKey)
	if err != nil {
		return workflows.TaskHandBack{}, err
	}
	hb, err := ceremonies.Validate(in.Definition, in.Version, in.Step, []byte(tc.Arguments), in.Compact)
	if err != nil {
		return workflows.TaskHandBack{}, temporal.NewNonRetryableApplicationError("hand-back no longer valid: "+err.Error(), workflows.ErrTypeSessionDiverged, err)
	}
	return workflows.TaskHandBackOf(hb), nil
}
