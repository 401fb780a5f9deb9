// Package tools runs the six workspace tools of axlr — read, write, edit,
// exec, search and list — confined to one directory.
//
// A Workspace opens the directory once as an os.Root and sends every file
// operation through it, so a path that climbs out with "..", an absolute path
// or a symbolic link that resolves outside the directory is refused instead of
// followed. Each tool takes its arguments as a JSON object and answers a JSON
// object, with the argument names, output fields, defaults, limits and error
// codes of the one-request worker protocol (see Schema for the arguments).
// Failures are *Error values carrying a stable code.
//
// The package leaves to its callers everything around one call: which tools
// a model may use, approvals, serializing mutations across processes and
// recording results. Checks do not make a transaction against writers outside
// this process. exec confines only its working directory; the program runs
// with the host account's access and the environment of Options.Env.
// Only Unix systems are supported.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/underpass-ai/axlr/sandbox"
)

// Names of the six tools as the worker protocol calls them.
const (
	Read   = "read"
	Write  = "write"
	Edit   = "edit"
	Exec   = "exec"
	Search = "search"
	List   = "list"
)

// Names returns the six tool names in the protocol's order.
func Names() []string {
	return []string{Read, Write, Edit, Exec, Search, List}
}

// ReadOnly reports whether a tool never changes the workspace (read, search, list).
func ReadOnly(tool string) bool {
	return tool == Read || tool == Search || tool == List
}

// Statuses of a finished call as the worker protocol reports them.
const (
	StatusCompleted = "completed"
	StatusRejected  = "rejected"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimedOut  = "timed_out"
)

// Error codes of the tools (one-request-worker-errors.md).
const (
	CodeInvalidRequest   = "invalid_request"
	CodeInvalidArguments = "invalid_arguments"
	CodeInvalidPath      = "invalid_path"
	CodeInvalidOffset    = "invalid_offset"
	CodeLimitTooSmall    = "limit_too_small"
	CodeConflict         = "conflict"
	CodeNotFound         = "not_found"
	CodeNotRegularFile   = "not_regular_file"
	CodeInvalidText      = "invalid_text"
	CodeFileTooLarge     = "file_too_large"
	CodeNotSearchable    = "not_searchable"
	CodePermissionDenied = "permission_denied"
	CodeFilesystemError  = "filesystem_error"
	CodeStartFailed      = "start_failed"
	CodeProcessError     = "process_error"
	CodeTimeout          = "timeout"
	CodeCancelled        = "cancelled"
	CodeInternalError    = "internal_error"
)

// Error is a tool failure with a stable code (the codes of
// one-request-worker-errors.md) and an English message.
type Error struct {
	Code    string
	Message string
	// malformed: see Malformed.
	malformed bool
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Malformed reports whether the error refuses the shape of a call rather
// than the values of its arguments: an unknown tool, arguments that are not
// one JSON object, an unknown argument, a required one missing or null, or
// one of another JSON type (all invalid_request). The one-request worker
// treats these as malformed protocol input and exits 2.
func (e *Error) Malformed() bool { return e.malformed }

// Status returns the status under which the worker reports the error:
// rejected when the request or its arguments did not pass validation, or
// when a precondition the tool checks before it touches anything did not
// hold (conflict, not_regular_file, file_too_large, invalid_text,
// not_searchable: the operation was refused, not attempted); timed_out and
// cancelled for those codes; failed otherwise, when the system or the
// program failed (not_found, permission_denied, start_failed, ...).
func (e *Error) Status() string {
	switch e.Code {
	case CodeInvalidRequest, CodeInvalidArguments, CodeInvalidPath, CodeInvalidOffset, CodeLimitTooSmall,
		CodeConflict, CodeNotRegularFile, CodeFileTooLarge, CodeInvalidText, CodeNotSearchable:
		return StatusRejected
	case CodeTimeout:
		return StatusTimedOut
	case CodeCancelled:
		return StatusCancelled
	default:
		return StatusFailed
	}
}

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Limits of the protocol.
const (
	maxFileBytes       = 1 << 20 // write content, editable and searchable files
	defaultReadBytes   = 64 << 10
	maxReadBytes       = 1 << 20
	defaultTimeoutMS   = 30_000
	maxTimeoutMS       = 300_000
	defaultOutputBytes = 256 << 10
	maxOutputBytes     = 1 << 20
	defaultMaxResults  = 50
	maxMaxResults      = 200
	defaultMaxEntries  = 200
	maxMaxEntries      = 500
	defaultPageBytes   = 64 << 10
	maxPageBytes       = 1 << 20
	defaultMaxDepth    = 3
	maxContextLines    = 20
	maxSearchFiles     = 20_000
	maxSearchRead      = 64 << 20
	maxListEntries     = 20_000
	maxLineBytes       = 300
	binaryProbeBytes   = 8 << 10
)

// Options configures a Workspace.
type Options struct {
	// Env is the complete environment of exec children (KEY=VALUE). Nil means
	// RestrictedEnv(os.Environ()).
	Env []string
	// Sandbox confines exec children; nil runs them unconfined, and their
	// output says nothing of a sandbox.
	Sandbox *Sandbox
}

// Sandbox is how exec children are confined: the plan the mode and the
// kernel decided (sandbox.Decide), or why none may run (Refused: a
// required sandbox the kernel cannot give), and what each child may reach
// beside the workspace, a private TMPDIR and the system's directories.
type Sandbox struct {
	Plan    sandbox.Plan
	Refused string
	// Read are paths a child may read (the Go toolchain, its module
	// cache, tools.sandbox_read); Write those it may also write (the
	// caches named by tools.sandbox_write).
	Read, Write []string
	Connect     []uint16
	// OpenNetwork leaves TCP unrestricted (tools.sandbox_network open).
	OpenNetwork bool

	// toolchain finds what the Go toolchain adds to Read and Write, once,
	// at the first confined command (NewSandbox's; nil adds nothing), so
	// that a workspace that runs no command never asks go env.
	toolchain       func() (read, write []string)
	once            sync.Once
	tcRead, tcWrite []string
}

// Confine makes cmd, which runs in dir, run under the sandbox when it
// confines: dir, a private TMPDIR (removed by the returned cleanup) and
// write are writable, the system's directories and the sandbox's reads
// readable, nothing else. A sandbox that does not confine leaves cmd as it
// is; a refused one returns why.
func (b *Sandbox) Confine(cmd *exec.Cmd, dir string, write ...string) (func(), error) {
	switch {
	case b.Refused != "":
		return nil, errors.New(b.Refused)
	case b.Plan.ABI == 0:
		return func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "axlr-exec-")
	if err != nil {
		return nil, fmt.Errorf("create the command's TMPDIR: %w", err)
	}
	cleanup := func() { os.RemoveAll(tmp) }
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(slices.DeleteFunc(slices.Clone(cmd.Env), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }), "TMPDIR="+tmp)
	if err := sandbox.Wrap(cmd, b.rules(dir, tmp, write)); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

// rules are what a confined command in dir, with its TMPDIR tmp, may
// reach; write adds to what it may write.
func (b *Sandbox) rules(dir, tmp string, write []string) sandbox.Rules {
	b.once.Do(func() {
		if b.toolchain != nil {
			b.tcRead, b.tcWrite = b.toolchain()
		}
	})
	return sandbox.Clean(sandbox.Rules{
		Read:        slices.Concat(sandbox.SystemReads, []string{dir}, b.Read, b.tcRead),
		Write:       slices.Concat([]string{dir, tmp}, write, b.Write, b.tcWrite),
		Connect:     b.Connect,
		OpenNetwork: b.OpenNetwork,
	})
}

// Workspace confines every file operation to one directory through os.Root,
// opened once in Open. Safe for concurrent use by several goroutines.
type Workspace struct {
	dir  string
	root *os.Root
	env  []string
	box  *Sandbox
	// mu serializes write and edit so that their compare-and-replace is
	// atomic among the callers of this Workspace.
	mu sync.Mutex
}

// Open opens the workspace directory dir, which must exist and be a directory.
func Open(dir string, opts Options) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open workspace %s: not a directory", dir)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	env := opts.Env
	if env == nil {
		env = RestrictedEnv(os.Environ())
	}
	return &Workspace{dir: abs, root: root, env: append([]string{}, env...), box: opts.Sandbox}, nil
}

// Close releases the workspace directory.
func (w *Workspace) Close() error {
	if err := w.root.Close(); err != nil {
		return fmt.Errorf("close workspace %s: %w", w.dir, err)
	}
	return nil
}

// Dir returns the workspace directory, absolute and cleaned.
func (w *Workspace) Dir() string { return w.dir }

// Call runs one tool with its JSON arguments object and returns the tool's
// output object as JSON. Unknown fields in args are refused (invalid_request).
// It honours ctx: cancellation kills an exec child (status cancelled). Every
// error it returns is an *Error.
func (w *Workspace) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	out, err := w.call(ctx, tool, args)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (w *Workspace) call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, *Error) {
	if err := ctx.Err(); err != nil {
		return nil, newError(CodeCancelled, "%s was cancelled before it started", tool)
	}
	var (
		out any
		err *Error
	)
	switch tool {
	case Read:
		var a readRequest
		if a, err = parseRead(args); err == nil {
			out, err = w.read(a)
		}
	case Write:
		var a writeRequest
		if a, err = parseWrite(args); err == nil {
			out, err = w.write(ctx, a)
		}
	case Edit:
		var a editRequest
		if a, err = parseEdit(args); err == nil {
			out, err = w.edit(ctx, a)
		}
	case Exec:
		var a execRequest
		if a, err = parseExec(args); err == nil {
			out, err = w.exec(ctx, a)
		}
	case Search:
		var a searchRequest
		if a, err = parseSearch(args); err == nil {
			out, err = w.search(ctx, a)
		}
	case List:
		var a listRequest
		if a, err = parseList(args); err == nil {
			out, err = w.list(ctx, a)
		}
	default:
		return nil, unknownTool(tool)
	}
	if err != nil {
		return nil, err
	}
	b, merr := marshal(out)
	if merr != nil {
		return nil, newError(CodeInternalError, "encode %s output: %v", tool, merr)
	}
	return b, nil
}

// Check runs every check of Call that reads no file: JSON shape (unknown
// fields, types), relative paths without escaping "..", expected_sha256 being
// a SHA-256 hex digest, create without it and replace with it, non-empty
// old_text, content size and limits over their maxima. It returns nil or an
// *Error.
func Check(tool string, args json.RawMessage) error {
	var err *Error
	switch tool {
	case Read:
		_, err = parseRead(args)
	case Write:
		_, err = parseWrite(args)
	case Edit:
		_, err = parseEdit(args)
	case Exec:
		_, err = parseExec(args)
	case Search:
		_, err = parseSearch(args)
	case List:
		_, err = parseList(args)
	default:
		err = unknownTool(tool)
	}
	if err != nil {
		return err
	}
	return nil
}

func unknownTool(tool string) *Error {
	return malformed("unknown tool %q; the tools are read, write, edit, exec, search and list", tool)
}

// malformed returns an invalid_request error refusing the shape of a call.
func malformed(format string, args ...any) *Error {
	e := newError(CodeInvalidRequest, format, args...)
	e.malformed = true
	return e
}

// fsError turns an error of an os.Root operation on the workspace path p into
// a tool error. what names the argument ("path", "cwd", "program").
func fsError(what, p string, err error) *Error {
	switch {
	case escapes(err):
		return newError(CodeInvalidPath, "%s %q resolves outside the workspace through a symbolic link", what, p)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return newError(CodeNotFound, "%s %q does not exist", what, p)
	case errors.Is(err, fs.ErrPermission):
		return newError(CodePermissionDenied, "%s %q: permission denied", what, p)
	default:
		return newError(CodeFilesystemError, "%s %q: %v", what, p, cause(err))
	}
}

// escapes reports whether err is os.Root's refusal of a path that leaves the
// root. os.Root reports it with an unexported error whose text is stable.
func escapes(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// cause strips the operations and paths that os and os/exec wrap around a
// system error, since messages name the workspace path themselves.
func cause(err error) error {
	for {
		var (
			ee *exec.Error
			pe *fs.PathError
			le *os.LinkError
		)
		switch {
		case errors.As(err, &ee):
			err = ee.Err
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		default:
			return err
		}
	}
}
