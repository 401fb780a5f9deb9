package publish

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

type fakeClient struct {
	res  workflows.PublishDefinitionResult
	sent []byte
}

func (c *fakeClient) Close()                            {}
func (c *fakeClient) CheckWorker(context.Context) error { return nil }
func (c *fakeClient) PublishDefinition(_ context.Context, yaml []byte) (workflows.PublishDefinitionResult, error) {
	c.sent = yaml
	return c.res, nil
}

// TestPublish: the file's bytes go to axlrd as they are, and the answer
// says what the publication did, with its digest and warnings.
func TestPublish(t *testing.T) {
	file := filepath.Join(t.TempDir(), "note.yaml")
	if err := os.WriteFile(file, []byte("name: team_note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		outcome, want string
	}{
		{"published", "team_note 1.0 published; digest abc\n"},
		{"already_published", "team_note 1.0 was published already with these bytes: nothing changed; digest abc\n"},
	} {
		ios, _, out, errOut := factory.Test()
		c := &fakeClient{res: workflows.PublishDefinitionResult{Outcome: tt.outcome, Name: "team_note", Version: "1.0", Digest: "abc", Warnings: []string{"line 9: role `R`: unused"}}}
		opts := &PublishOptions{IO: ios, File: file, Client: func(context.Context) (Client, error) { return c, nil }}
		if err := publishRun(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.want || errOut.String() != "warning: line 9: role `R`: unused\n" || string(c.sent) != "name: team_note\n" {
			t.Errorf("%s: %q %q sent %q", tt.outcome, out, errOut, c.sent)
		}
	}
	ios, _, _, _ := factory.Test()
	err := publishRun(context.Background(), &PublishOptions{IO: ios, File: filepath.Join(t.TempDir(), "gone.yaml")})
	if err == nil || !strings.Contains(err.Error(), "ceremonies publish: stat") {
		t.Errorf("a missing file: %v", err)
	}
	cmd := NewCmdPublish(&factory.Factory{IOStreams: ios}, func(context.Context, *PublishOptions) error { return nil })
	cmd.SetArgs([]string{})
	if _, err := cmd.ExecuteC(); !errors.As(err, new(*cmdutil.FlagError)) || !strings.Contains(err.Error(), "usage: axlr-tui ceremonies publish FILE.yaml [--json]") {
		t.Errorf("no file: %v", err)
	}
}
