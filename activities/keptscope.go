package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// Limits of what a task's start keeps of its scope files (KeepScope): a
// scope holds at most plans.MaxScope paths. A file over them is refused,
// so a task never starts on files it could not put back.
const (
	// MaxKeptFileBytes bounds one kept scope file: twice the most the
	// write tool writes.
	MaxKeptFileBytes = 2 << 20
	// MaxKeptScopeBytes bounds a task's kept scope files together.
	MaxKeptScopeBytes = 8 << 20
)

// keptVersion is the format of a kept scope's file.
const keptVersion = 1

// keptScope is what a worker's start kept of its scope, in its file under
// PlanTask.Scopes: each scope file's mode and content, or that it did not
// exist. Restore is the first RestoreScope's answer, given again by later
// ones.
type keptScope struct {
	Version int                     `json:"version"`
	Root    string                  `json:"root"`
	Files   []keptFile              `json:"files"`
	Restore *workflows.ScopeRestore `json:"restore,omitempty"`
}

type keptFile struct {
	Path string `json:"path"`
	// Exists: the file existed at the start; Mode (its permission bits)
	// and Content are then its.
	Exists  bool        `json:"exists"`
	Mode    fs.FileMode `json:"mode,omitempty"`
	Content []byte      `json:"content,omitempty"`
}

// keptPath is the file a key's scope is kept in:
// <Scopes>/<plan>/<task>/<session>.json. The key's parts must be a plan
// id, a task id and a session id, so the path stays under Scopes.
func (a *PlanTask) keptPath(k workflows.ScopeKey) (string, error) {
	switch {
	case a.Scopes == "":
		return "", temporal.NewNonRetryableApplicationError("no directory keeps the scope files of plan tasks on this host", workflows.ErrTypeBadRequest, nil)
	case !plans.ValidID(k.Plan) || !plans.ValidID(k.Task) || !session.ValidID(k.Session):
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("scope key %s/%s/%s: the plan and the task must be ids and the session a session id", k.Plan, k.Task, k.Session),
			workflows.ErrTypeBadRequest, nil)
	}
	return filepath.Join(a.Scopes, k.Plan, k.Task, k.Session+".json"), nil
}

// KeepScope keeps each scope file's mode and content, or that it does not
// exist, in the key's file (mode 0600, written whole or not at all). A key
// kept before for the same workspace and paths stays as it was: the
// worker keeps its scope once, before anything changes it. A path that is
// not clean, leads out of the workspace, is a symbolic link or is not a
// regular file, and a file over MaxKeptFileBytes or a scope over
// MaxKeptScopeBytes, are refused, naming the path and the limit.
func (a *PlanTask) KeepScope(ctx context.Context, in workflows.KeepScopeInput) error {
	file, err := a.keptPath(in.ScopeKey)
	if err != nil {
		return err
	}
	paths := slices.Sorted(slices.Values(in.Paths))
	if k, err := readKept(file); err == nil && k.Root == in.Root &&
		slices.EqualFunc(k.Files, paths, func(f keptFile, p string) bool { return f.Path == p }) {
		return nil
	}
	if err := checkRoot(in.Root); err != nil {
		return err
	}
	root, err := os.OpenRoot(in.Root)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", in.Root, err)
	}
	defer root.Close()
	k := keptScope{Version: keptVersion, Root: in.Root, Files: []keptFile{}}
	total := 0
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := keepFile(root, p)
		if err != nil {
			return err
		}
		if total += len(f.Content); total > MaxKeptScopeBytes {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the scope files are over %d bytes together (at %s); a task keeps its scope to put it back if it does not finish: give the task fewer or smaller files",
				MaxKeptScopeBytes, p), workflows.ErrTypeBadRequest, nil)
		}
		k.Files = append(k.Files, f)
	}
	return writeKept(file, k)
}

// keepFile reads one scope file for KeepScope.
func keepFile(root *os.Root, p string) (keptFile, error) {
	refuse := func(why string, err error) (keptFile, error) {
		return keptFile{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("keep scope file %q: %s", p, why), workflows.ErrTypeBadRequest, err)
	}
	if c, ok := plans.CleanPath(p); !ok || c != p {
		return refuse("not a clean path inside the workspace", nil)
	}
	fi, err := root.Lstat(p)
	switch {
	case absent(err):
		return keptFile{Path: p}, nil
	case err != nil:
		return refuse(err.Error(), err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return refuse("a symbolic link; a task's scope names the files themselves", nil)
	case !fi.Mode().IsRegular():
		return refuse("not a regular file ("+fi.Mode().Type().String()+")", nil)
	case fi.Size() > MaxKeptFileBytes:
		return refuse(fmt.Sprintf("%d bytes, over the %d a task keeps of a scope file to put it back if it does not finish; leave it out of the scope", fi.Size(), MaxKeptFileBytes), nil)
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return keptFile{}, fmt.Errorf("keep scope file %q: %w", p, err)
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !opened.Mode().IsRegular() {
		return refuse("replaced while it was read", err)
	}
	content, err := io.ReadAll(io.LimitReader(f, MaxKeptFileBytes+1))
	if err != nil {
		return keptFile{}, fmt.Errorf("keep scope file %q: %w", p, err)
	}
	if len(content) > MaxKeptFileBytes {
		return refuse(fmt.Sprintf("grew over %d bytes while it was read", MaxKeptFileBytes), nil)
	}
	return keptFile{Path: p, Exists: true, Mode: fi.Mode().Perm(), Content: content}, nil
}

// RestoreScope writes each kept file back whose content or mode differs
// now, or that is gone, through an os.Root of the workspace: into a
// temporary file beside it, then renamed over it (a symbolic link put in
// its place is replaced, not followed). A scope file that did not exist
// when it was kept and exists now is listed as created and left. The
// first call's answer is kept with the scope, and a later call, which
// finds the files as the first left them, answers it again. A scope file
// that is a directory now is refused; an error names the file and where
// its content is kept.
func (a *PlanTask) RestoreScope(ctx context.Context, key workflows.ScopeKey) (workflows.ScopeRestore, error) {
	file, err := a.keptPath(key)
	if err != nil {
		return workflows.ScopeRestore{}, err
	}
	k, err := readKept(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return workflows.ScopeRestore{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("no scope of task %s of plan %s is kept for session %s", key.Task, key.Plan, key.Session),
			workflows.ErrTypeBadRequest, err)
	case err != nil:
		return workflows.ScopeRestore{}, err
	case k.Root != key.Root:
		return workflows.ScopeRestore{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the scope kept in %s is of workspace %s, not %s", file, k.Root, key.Root),
			workflows.ErrTypeBadRequest, nil)
	}
	if err := checkRoot(key.Root); err != nil {
		return workflows.ScopeRestore{}, err
	}
	root, err := os.OpenRoot(key.Root)
	if err != nil {
		return workflows.ScopeRestore{}, fmt.Errorf("open workspace %s: %w", key.Root, err)
	}
	defer root.Close()
	var out workflows.ScopeRestore
	for _, f := range k.Files {
		if err := ctx.Err(); err != nil {
			return workflows.ScopeRestore{}, err
		}
		if !f.Exists {
			switch _, err := root.Lstat(f.Path); {
			case err == nil:
				out.Created = append(out.Created, f.Path)
			case !absent(err):
				return workflows.ScopeRestore{}, fmt.Errorf("restore scope file %q: %w", f.Path, err)
			}
			continue
		}
		wrote, err := restoreFile(root, f)
		if err != nil {
			return workflows.ScopeRestore{}, keptIn(err, file)
		}
		if wrote {
			out.Restored = append(out.Restored, f.Path)
		}
	}
	if k.Restore != nil {
		return *k.Restore, nil
	}
	k.Restore = &out
	if err := writeKept(file, k); err != nil {
		return workflows.ScopeRestore{}, err
	}
	return out, nil
}

// keptIn adds to a restore's error where the scope's content is kept,
// for the person to put it back by hand; a refusal stays one.
func keptIn(err error, file string) error {
	where := "; the content the task started with is kept in " + file
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return temporal.NewNonRetryableApplicationError(app.Message()+where, app.Type(), err)
	}
	return fmt.Errorf("%w%s", err, where)
}

// restoreFile writes a kept file back unless it is as it was kept, and
// reports whether it wrote it.
func restoreFile(root *os.Root, f keptFile) (bool, error) {
	fi, err := root.Lstat(f.Path)
	switch {
	case err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == f.Mode:
		now, err := digest(root, f.Path)
		if err != nil {
			return false, err
		}
		if sum := sha256.Sum256(f.Content); now == hex.EncodeToString(sum[:]) {
			return false, nil
		}
	case err == nil && fi.IsDir():
		return false, temporal.NewNonRetryableApplicationError(fmt.Sprintf("restore scope file %q: it is a directory now", f.Path), workflows.ErrTypeBadRequest, nil)
	case err != nil && !absent(err):
		return false, fmt.Errorf("restore scope file %q: %w", f.Path, err)
	}
	dir := path.Dir(f.Path)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("restore scope file %q: %w", f.Path, err)
	}
	tmp := path.Join(dir, "."+path.Base(f.Path)+".axlr-restore")
	w, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, f.Mode)
	if err != nil {
		return false, fmt.Errorf("restore scope file %q: %w", f.Path, err)
	}
	_, err = io.Copy(w, bytes.NewReader(f.Content))
	err = errors.Join(err, w.Sync(), w.Close())
	if err == nil {
		// The umask may have narrowed the mode the file was created with.
		err = root.Chmod(tmp, f.Mode)
	}
	if err == nil {
		err = root.Rename(tmp, f.Path)
	}
	if err != nil {
		return false, errors.Join(fmt.Errorf("restore scope file %q: %w", f.Path, err), ignoreAbsent(root.Remove(tmp)))
	}
	return true, nil
}

// DropScope removes the key's kept scope, and its task's and plan's
// directories once empty. A key with nothing kept is dropped already.
func (a *PlanTask) DropScope(_ context.Context, key workflows.ScopeKey) error {
	file, err := a.keptPath(key)
	if err != nil {
		return err
	}
	if err := ignoreAbsent(os.Remove(file)); err != nil {
		return fmt.Errorf("drop the kept scope %s: %w", file, err)
	}
	// A directory that still holds another worker's scope stays.
	if task := filepath.Dir(file); os.Remove(task) == nil {
		_ = os.Remove(filepath.Dir(task))
	}
	return nil
}

// readKept reads a kept scope's file.
func readKept(file string) (keptScope, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return keptScope{}, err
	}
	var k keptScope
	if err := json.Unmarshal(b, &k); err != nil {
		return keptScope{}, fmt.Errorf("read the kept scope %s: %w", file, err)
	}
	if k.Version != keptVersion {
		return keptScope{}, fmt.Errorf("read the kept scope %s: version %d; this axlrd reads version %d", file, k.Version, keptVersion)
	}
	return k, nil
}

// writeKept writes a kept scope's file whole or not at all (writeWhole).
func writeKept(file string, k keptScope) error {
	b, err := json.Marshal(k)
	if err != nil {
		return fmt.Errorf("encode the kept scope %s: %w", file, err)
	}
	if err := writeWhole(file, b); err != nil {
		return fmt.Errorf("keep the scope: %w", err)
	}
	return nil
}

// writeWhole writes data to file whole or not at all: a temporary file
// beside it synced, renamed over it, and its directory (made 0700 when
// missing) synced.
func writeWhole(file string, data []byte) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	tmp, err := os.CreateTemp(dir, ".axlr-tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", file, err), ignoreAbsent(os.Remove(tmp.Name())))
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return errors.Join(d.Sync(), d.Close())
}

// absent reports whether err says a path does not exist, or that one of
// its parents is not a directory.
func absent(err error) bool { return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) }

func ignoreAbsent(err error) error {
	if absent(err) {
		return nil
	}
	return err
}
