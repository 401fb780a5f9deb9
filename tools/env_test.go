package tools

import (
	"slices"
	"testing"
)

func TestRestrictedEnv(t *testing.T) {
	in := []string{
		"PATH=/usr/bin", "HOME=/home/u", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "LANG=C.UTF-8",
		"LC_ALL=C", "LC_CTYPE=C", "TERM=xterm", "TMPDIR=/tmp", "TZ=UTC",
		"GOPATH=/go", "GOFLAGS=-mod=mod", "GOCACHE=/c", "GOTOOLCHAIN=local",
		"CARGO_HOME=/c", "RUSTUP_HOME=/r", "JAVA_HOME=/j", "NODE_PATH=/n", "NPM_CONFIG_CACHE=/n",
		"PYTHONPATH=/p", "VIRTUAL_ENV=/v", "XDG_CACHE_HOME=/x", "XDG_CONFIG_HOME=/x", "XDG_DATA_HOME=/x",
	}
	out := []string{
		"OPENAI_API_KEY=sk", "ANTHROPIC_API_KEY=k", "GITHUB_TOKEN=t", "GH_TOKEN=t", "AWS_SECRET_ACCESS_KEY=s",
		"GOOGLE_APPLICATION_CREDENTIALS=/c", "GOOGLE_API_KEY=k", "SSH_AUTH_SOCK=/s", "LD_PRELOAD=/x.so",
		"path=/lower", "Path=/mixed", "LC=x", "XDG_RUNTIME_DIR=/run", "PWD=/w", "NOEQUALS", "=bare",
	}
	env := append(slices.Clone(out[:3]), in...)
	env = append(env, out[3:]...)
	got := RestrictedEnv(env)
	if !slices.Equal(got, in) {
		t.Errorf("RestrictedEnv =\n%q\nwant\n%q", got, in)
	}
	if got := RestrictedEnv(nil); got == nil || len(got) != 0 {
		t.Errorf("RestrictedEnv(nil) = %#v, want an empty, non-nil slice", got)
	}
}
