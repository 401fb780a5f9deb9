package tools

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/sandbox"
)

// SandboxConfig is tools.sandbox and its lists, as settings hold them.
type SandboxConfig struct {
	Mode sandbox.Mode
	Read []string
	// Write nil is the default: the Go build cache.
	Write   *[]string
	Connect []int
	// Network "open" leaves TCP unrestricted; empty or "ports" allows
	// only Connect's ports.
	Network string
}

// NewSandbox decides how exec children run under cfg on this kernel, for
// children with environment env: confined (Landlock), unconfined with
// the reason, or refused (required without Landlock). The Go toolchain,
// its module cache and its env file, as go env names them in env, are
// readable, and its build cache writable unless cfg.Write says otherwise;
// go env runs at the first confined command, not here. So is git's global
// configuration, which git refuses to run without when it exists and
// cannot be read. It also
// returns what axlrd's log should warn of: a sandbox that does not
// confine.
func NewSandbox(cfg SandboxConfig, env []string) (*Sandbox, string) {
	abi, why := sandbox.ABI()
	plan, err := sandbox.Decide(cfg.Mode, abi, why)
	if err != nil {
		return &Sandbox{Refused: err.Error()}, err.Error() + ": every command the model runs, and every check, is refused"
	}
	b := &Sandbox{Plan: plan, Read: cfg.Read, OpenNetwork: cfg.Network == "open"}
	for _, p := range cfg.Connect {
		b.Connect = append(b.Connect, uint16(p))
	}
	if cfg.Write != nil {
		b.Write = *cfg.Write
	}
	b.toolchain = func() (read, write []string) {
		goenv := goEnv(env)
		read = append([]string{goenv["GOROOT"], goenv["GOMODCACHE"], goenv["GOENV"]}, gitConfig(env)...)
		if c := goenv["GOCACHE"]; cfg.Write == nil && c != "" && c != "off" {
			write = []string{c}
		}
		return read, write
	}
	if plan.ABI == 0 {
		return b, "commands run unconfined: " + plan.Why
	}
	return b, ""
}

// gitConfig are the files of git's global configuration for children with
// environment env (git-config(1)): GIT_CONFIG_GLOBAL, or ~/.gitconfig and
// $XDG_CONFIG_HOME/git/config, with the ignore and attributes files beside
// it. Not the directory: git's credential store may live there.
func gitConfig(env []string) []string {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	xdg := vars["XDG_CONFIG_HOME"]
	if xdg == "" && vars["HOME"] != "" {
		xdg = filepath.Join(vars["HOME"], ".config")
	}
	var files []string
	if g := vars["GIT_CONFIG_GLOBAL"]; g != "" {
		files = append(files, g)
	} else if vars["HOME"] != "" {
		files = append(files, filepath.Join(vars["HOME"], ".gitconfig"))
	}
	if xdg != "" {
		for _, f := range []string{"config", "ignore", "attributes"} {
			files = append(files, filepath.Join(xdg, "git", f))
		}
	}
	return files
}

// goEnv is what go env says of the toolchain's directories for children
// with environment env; empty when go is not installed there.
func goEnv(env []string) map[string]string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	out := map[string]string{}
	goBin := ""
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			continue
		}
		if p, err := exec.LookPath(dir + "/go"); err == nil {
			goBin = p
			break
		}
	}
	if goBin == "" {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "env", "GOROOT", "GOMODCACHE", "GOCACHE", "GOENV")
	cmd.Env = env
	b, err := cmd.Output()
	if err != nil {
		return out
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i, k := range []string{"GOROOT", "GOMODCACHE", "GOCACHE", "GOENV"} {
		if i < len(lines) {
			out[k] = strings.TrimSpace(lines[i])
		}
	}
	return out
}
