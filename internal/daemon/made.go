package daemon

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/activities"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/made/mcp"
)

// madeEngine is an engine axlrd closes when it stops.
type madeEngine interface {
	made.Engine
	Close() error
}

// openMade starts made-mcp when settings name it (made.command), else opens
// the embedded engine: on the cluster's database (db, when --database
// names one), else in <state-dir>/made.
func openMade(ctx context.Context, o Options, set *settings.Loaded, db *sql.DB, log zerolog.Logger) (madeEngine, error) {
	m := set.Made
	if o.MadeCommand != "" {
		m.Command = o.MadeCommand
	}
	if db != nil { // with made.command, refused by Options.fill
		e, err := embedded.OpenDB(ctx, db, embedded.Options{})
		if err != nil {
			return nil, fmt.Errorf("open the embedded MADE engine: %w", err)
		}
		log.Debug().Str("engine", "embedded").Str("store", "postgres").Msg("MADE ready")
		return e, nil
	}
	if m.Command == "" {
		e, err := embedded.Open(filepath.Join(o.StateDir, "made"), embedded.Options{})
		if err != nil {
			return nil, fmt.Errorf("open the embedded MADE engine: %w", err)
		}
		log.Debug().Str("engine", "embedded").Msg("MADE ready")
		return e, nil
	}
	env := []string{
		"MADE_MCP_BACKEND=embedded",
		"MADE_MCP_REDB_PATH=" + filepath.Join(o.StateDir, "made", "made.redb"),
		"PATH=" + o.Getenv("PATH"),
		"HOME=" + o.Getenv("HOME"),
	}
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	if err := os.MkdirAll(filepath.Join(o.StateDir, "made"), 0o700); err != nil {
		return nil, fmt.Errorf("create MADE store dir: %w", err)
	}
	c, err := mcp.Start(ctx, mcp.Options{Command: m.Command, Args: m.Args, Env: env, Dir: o.StateDir,
		Stderr: log.With().Str("component", "made-mcp").Logger()})
	if err != nil {
		return nil, fmt.Errorf("start made-mcp (%s): %w", m.Command, err)
	}
	log.Debug().Str("engine", m.Command).Msg("MADE ready")
	return c, nil
}

// publishPinned publishes every pinned definition at start. A definition
// MADE holds under another digest is reported; its ceremony refuses to
// start, the others work.
func publishPinned(ctx context.Context, e made.Engine, log zerolog.Logger) {
	for _, def := range ceremonies.All() {
		if _, err := activities.PublishPinned(ctx, e, def); err != nil {
			log.Error().Str("ceremony", def.Name+" "+def.Version).Err(err).Msg("ceremony unavailable")
			continue
		}
		log.Debug().Str("ceremony", def.Name+" "+def.Version).Str("digest", def.Digest).Msg("ceremony published")
	}
}
