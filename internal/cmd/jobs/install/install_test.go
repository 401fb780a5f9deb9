package install

import (
	"context"
	"errors"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
)

func TestNewCmdInstall(t *testing.T) {
	cmdtest.Parse(t, NewCmdInstall, func(o InstallOptions) InstallOptions { return InstallOptions{ID: o.ID, JSON: o.JSON} }, []cmdtest.ParseCase[InstallOptions]{
		{Name: "id", Args: []string{"d"}, Want: InstallOptions{ID: "d"}},
		{Name: "json", Args: []string{"d", "--json"}, Want: InstallOptions{ID: "d", JSON: true}},
		{Name: "no id", Args: []string{}, Err: "usage: axlr-tui jobs install ID [--json]"},
	})
}

// TestInstallRun: a merged job's candidate goes over axlrd and this
// axlr-tui (its own path), with the note on restarting; a running job is
// refused; an axlr-tui that cannot find itself says so.
func TestInstallRun(t *testing.T) {
	records := append(cmdtest.JobRecords(), domain.Record{ID: "d", Status: domain.Completed, Candidate: &domain.Candidate{Path: "/c/d.bin", Version: "repair-d-0123456789ab"}})
	self := func() (string, error) { return "/usr/local/bin/axlr-tui", nil }
	tests := []struct {
		name       string
		id         string
		executable func() (string, error)
		ran        cmdtest.Ran
		installed  []string
	}{
		{name: "merged", id: "d", executable: self, installed: []string{"d /usr/local/bin/axlr-tui"}, ran: cmdtest.Ran{
			Stdout: "installed repair-d-0123456789ab over /usr/local/bin/axlrd (the previous one kept as /usr/local/bin/axlrd.before-repair-d); restart axlrd (and any axlr-tui running) to run it: axlrd never restarts itself. To go back, rename a backup over its executable.\n"}},
		{name: "running", id: records[0].ID, executable: self, installed: []string{records[0].ID + " /usr/local/bin/axlr-tui"}, ran: cmdtest.Ran{Code: 1,
			Stderr: "axlr-tui: job 20261201-1200-the-watch-never-settles is awaiting_merge: only a merged job is installed\n"}},
		{name: "no executable", id: "d", executable: func() (string, error) { return "", errors.New("no /proc") }, ran: cmdtest.Ran{Code: 1,
			Stderr: "axlr-tui: jobs install: find axlr-tui's own executable: no /proc\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &cmdtest.Jobs{Records: records}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return installRun(context.Background(), &InstallOptions{IO: ios, Client: cmdtest.Dial[Client](fake), Executable: tt.executable, ID: tt.id})
			})
			if got != tt.ran || len(fake.Installed) != len(tt.installed) || len(tt.installed) > 0 && fake.Installed[0] != tt.installed[0] {
				t.Fatalf("ran %+v, want %+v; installed %v", got, tt.ran, fake.Installed)
			}
		})
	}
}
