package tools

import (
	"slices"
	"strings"
)

// RestrictedEnv filters an environment down to an allowlist safe for child
// processes: PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*, TERM, TMPDIR, TZ,
// and toolchain settings (GO* except GOOGLE_*, CARGO_HOME, RUSTUP_HOME,
// JAVA_HOME, NODE_PATH, NPM_CONFIG_CACHE, PYTHONPATH, VIRTUAL_ENV,
// XDG_CACHE_HOME, XDG_CONFIG_HOME, XDG_DATA_HOME). Nothing else passes: no
// *_API_KEY, no tokens. The result is never nil.
func RestrictedEnv(environ []string) []string {
	out := []string{}
	for _, kv := range environ {
		if key, _, ok := strings.Cut(kv, "="); ok && allowedEnv(key) {
			out = append(out, kv)
		}
	}
	return out
}

func allowedEnv(key string) bool {
	switch {
	case strings.HasPrefix(key, "LC_"):
		return true
	case strings.HasPrefix(key, "GO"):
		return !strings.HasPrefix(key, "GOOGLE_")
	}
	return slices.Contains([]string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ",
		"CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "NODE_PATH", "NPM_CONFIG_CACHE",
		"PYTHONPATH", "VIRTUAL_ENV", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
	}, key)
}
