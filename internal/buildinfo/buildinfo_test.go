package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	info := func(version string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: version}, Settings: settings}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tt := range []struct {
		name, stamped string
		read          func() (*debug.BuildInfo, bool)
		want          string
	}{
		{"stamped wins", "repair-x-0123456789ab", info("v1.2.3"), "repair-x-0123456789ab"},
		{"module version", "", info("v1.2.3"), "v1.2.3"},
		{"vcs revision", "", info("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef"}), "devel-0123456789ab"},
		{"modified tree", "", info("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef"}, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "devel-0123456789ab-dirty"},
		{"nothing recorded", "", info("(devel)"), "devel"},
		{"no build info", "", none, "devel"},
	} {
		if got := resolve(tt.stamped, tt.read); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if String() == "" {
		t.Error("String is empty")
	}
}
