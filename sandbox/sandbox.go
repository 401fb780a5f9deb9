// Package sandbox confines the commands the model runs (local_exec, a
// ceremony's checks, a plan task's checks, a job's candidate build) with
// Landlock, so that an autonomous command cannot read the person's keys,
// axlrd's state or another repository, nor write outside its workspace.
//
// The ruleset is applied in the child, before the program starts: Wrap
// makes a command run this process's own executable as a launcher
// (argv[1] is launcher.Arg), whose init restricts itself with the rules
// and then execs the program, which inherits the Landlock domain. axlrd
// itself stays unconfined. Any binary that imports the package is a
// launcher, test binaries included.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/sandbox/launcher"
)

// Mode is tools.sandbox: whether commands are confined.
type Mode string

// The modes.
const (
	// Auto confines where the kernel offers Landlock, and runs unconfined,
	// saying so, where it does not.
	Auto Mode = "auto"
	// Required refuses to run a command the kernel cannot confine.
	Required Mode = "required"
	// Off runs every command unconfined, saying so.
	Off Mode = "off"
)

// ParseMode reads a mode; empty is Auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Auto, nil
	case Auto, Required, Off:
		return m, nil
	}
	return "", fmt.Errorf("unknown sandbox mode %q: use auto, required or off", s)
}

// Rules are what a confined command may reach: the paths it may read
// (and execute from), those it may also write, and the TCP ports it may
// connect to (on ABI 4 and later; none by default).
type Rules = launcher.Rules

// SystemReads are the system's directories every confined command may
// read: its programs, libraries and configuration, and the kernel's views
// of itself that runtimes read.
var SystemReads = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev", "/run"}

// ABI is the Landlock ABI version the kernel offers (0 with the reason
// when it offers none).
func ABI() (int, error) { return launcher.ABI() }

// Plan is how a command runs under a mode: confined (ABI > 0) or not, with
// the reason.
type Plan struct {
	ABI int
	// Why says why a command runs unconfined.
	Why string
}

// Status is what a call's result records of how it ran: "landlock ABI 7",
// or "none: <why>".
func (p Plan) Status() string {
	if p.ABI > 0 {
		return fmt.Sprintf("landlock ABI %d", p.ABI)
	}
	return "none: " + p.Why
}

// ErrUnavailable is a command refused under Required on a kernel without
// Landlock.
var ErrUnavailable = errors.New("tools.sandbox is required, but this kernel cannot confine commands")

// Decide is how commands run under mode on this kernel (abi and why are
// ABI's answer); Required without Landlock is ErrUnavailable with the
// reason.
func Decide(mode Mode, abi int, why error) (Plan, error) {
	switch {
	case mode == Off:
		return Plan{Why: "tools.sandbox is off"}, nil
	case abi > 0:
		return Plan{ABI: abi}, nil
	}
	reason := "the kernel offers no Landlock"
	if why != nil {
		reason += " (" + why.Error() + ")"
	}
	if mode == Required {
		return Plan{}, fmt.Errorf("%w: %s", ErrUnavailable, reason)
	}
	return Plan{Why: reason}, nil
}

// Wrap makes cmd run its program under rules through the launcher: this
// process's executable, re-executed as the launcher. cmd's Path, Args,
// Env, Dir and everything else stay the program's.
func Wrap(cmd *exec.Cmd, rules Rules) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sandbox: find the launcher: %w", err)
	}
	cmd.Args = append([]string{"axlr-sandbox"}, launcher.Args(rules, cmd.Path, cmd.Args)...)
	cmd.Path = self
	return nil
}

// Denied is the line AXLR adds to a command's output when it failed on a
// path the sandbox keeps from it: the command's own error says which, and
// this says why and how the person allows it. Empty when the output shows
// no permission denied.
func Denied(output string) string {
	if !strings.Contains(output, "ermission denied") && !strings.Contains(output, "EACCES") {
		return ""
	}
	return "[AXLR] The sandbox (Landlock) may have refused that path: a command reads only the workspace, the system and the toolchain, and writes only the workspace and its TMPDIR, and connects to no port not listed; the person allows more with tools.sandbox_read, tools.sandbox_write and tools.sandbox_connect (or tools.sandbox_network \"open\") in settings.json."
}

// Clean is r with each list sorted and without duplicates or empty paths,
// so a call's record reads the same whatever order it was built in.
func Clean(r Rules) Rules {
	clean := func(in []string) []string {
		var out []string
		for _, p := range in {
			if p != "" {
				out = append(out, p)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	r.Read, r.Write = clean(r.Read), clean(r.Write)
	slices.Sort(r.Connect)
	r.Connect = slices.Compact(r.Connect)
	return r
}
