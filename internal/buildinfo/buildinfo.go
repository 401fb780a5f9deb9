// Package buildinfo names the build of axlr that runs: the version a
// candidate build stamps with -ldflags "-X
// github.com/underpass-ai/axlr/internal/buildinfo.Version=…", else what the
// Go toolchain recorded (the module version, or the VCS revision and
// whether the tree was modified), else "devel". The job registry keys
// "already repaired by this build" and "three improvements per build" on it.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Version is set at link time by a candidate build; empty otherwise.
var Version string

var (
	once     sync.Once
	resolved string
)

// String returns the build's version.
func String() string {
	once.Do(func() { resolved = resolve(Version, debug.ReadBuildInfo) })
	return resolved
}

func resolve(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := read()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel-" + rev
}
