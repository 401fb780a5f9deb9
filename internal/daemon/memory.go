package daemon

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/activities"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/embedded"
	"github.com/underpass-ai/axlr/kmp/mcp"
)

// memoryStore is a memory axlrd closes when it stops.
type memoryStore interface {
	kmp.Store
	Close() error
}

// openMemory opens the embedded store, on the cluster's database (db,
// when --database names one) or in <state-dir>/memory, or, when settings
// name kmp-mcp (kmp.command), a store that starts it. kmp-mcp that cannot
// start does not stop axlrd: its calls fail as unavailable (the work goes
// on, writes wait in the sidecars) and it is started again at a later
// call.
func openMemory(ctx context.Context, o Options, set *settings.Loaded, db *sql.DB, log zerolog.Logger) (memoryStore, error) {
	dir := filepath.Join(o.StateDir, "memory")
	k := set.Kmp
	if k.Command == "" && db != nil {
		s, err := embedded.OpenDB(ctx, db, embedded.Options{})
		if err != nil {
			return nil, fmt.Errorf("open the embedded memory: %w", err)
		}
		log.Debug().Str("engine", "embedded").Str("store", "postgres").Msg("memory ready")
		return s, nil
	}
	if db != nil {
		log.Warn().Str("command", k.Command).Msg("kmp-mcp keeps its own store: the memory is shared between hosts only if kmp.env points every host's kmp-mcp at one backend")
	}
	if k.Command == "" {
		s, err := embedded.Open(dir, embedded.Options{})
		if err != nil {
			return nil, fmt.Errorf("open the embedded memory: %w", err)
		}
		log.Debug().Str("engine", "embedded").Msg("memory ready")
		return s, nil
	}
	data := filepath.Join(dir, "kmp")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("create the kmp-mcp data dir: %w", err)
	}
	env := []string{
		"KMP_MCP_BACKEND=embedded",
		"KMP_MCP_DATA_DIR=" + data,
		"PATH=" + o.Getenv("PATH"),
		"HOME=" + o.Getenv("HOME"),
	}
	for k, v := range k.Env {
		env = append(env, k+"="+v)
	}
	s := &kmpProcess{opts: mcp.Options{Command: k.Command, Args: k.Args, Env: env, Dir: o.StateDir,
		Stderr: log.With().Str("component", "kmp-mcp").Logger()}, log: log}
	if _, err := s.client(ctx); err != nil {
		log.Warn().Str("command", k.Command).Err(err).Msg("memory unavailable: kmp-mcp did not start; axlr goes on without it and tries again later")
	} else {
		log.Debug().Str("engine", k.Command).Msg("memory ready")
	}
	return s, nil
}

// flushSidecars writes what the sidecars kept while memory was down, at
// start, within a bound: what still does not land waits for the next.
func flushSidecars(ctx context.Context, mem *activities.Memory, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := mem.FlushAll(ctx)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("memory sidecars not written")
	case res.Written > 0 || res.Waiting > 0:
		log.Info().Int("written", res.Written).Int("waiting", res.Waiting).Msg("memory sidecars written")
	}
}

// restartEvery bounds how often a kmp-mcp that is down is started again.
const restartEvery = 5 * time.Second

// kmpProcess is kmp-mcp as a kmp.Store: it starts the child on first use
// and again after a call found it gone (at most every restartEvery).
type kmpProcess struct {
	opts mcp.Options
	log  zerolog.Logger

	mu      sync.Mutex
	c       *mcp.Client
	tried   time.Time
	lastErr error
}

func (p *kmpProcess) client(ctx context.Context) (*mcp.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		return p.c, nil
	}
	if !p.tried.IsZero() && time.Since(p.tried) < restartEvery {
		return nil, kmp.Errorf(kmp.CodeUnavailable, "kmp-mcp is not running: %v", p.lastErr)
	}
	p.tried = time.Now()
	c, err := mcp.Start(ctx, p.opts)
	if err != nil {
		p.lastErr = err
		return nil, kmp.Errorf(kmp.CodeUnavailable, "start kmp-mcp (%s): %v", p.opts.Command, err)
	}
	p.c = c
	return c, nil
}

// done drops a client whose call found it unreachable, so the next call
// starts kmp-mcp again.
func (p *kmpProcess) done(c *mcp.Client, err error) {
	if kmp.CodeOf(err) != kmp.CodeUnavailable {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == c {
		p.log.Warn().Err(err).Msg("kmp-mcp unreachable; it is started again at a later call")
		c.Close()
		p.c, p.lastErr = nil, err
	}
}

func call[Req, Res any](p *kmpProcess, ctx context.Context, f func(*mcp.Client, context.Context, Req) (Res, error), req Req) (Res, error) {
	c, err := p.client(ctx)
	if err != nil {
		var zero Res
		return zero, err
	}
	res, err := f(c, ctx, req)
	p.done(c, err)
	return res, err
}

func (p *kmpProcess) Wake(ctx context.Context, req kmp.WakeRequest) (kmp.WakeResult, error) {
	return call(p, ctx, (*mcp.Client).Wake, req)
}

func (p *kmpProcess) Write(ctx context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	return call(p, ctx, (*mcp.Client).Write, req)
}

func (p *kmpProcess) Ask(ctx context.Context, req kmp.AskRequest) (kmp.AskResult, error) {
	return call(p, ctx, (*mcp.Client).Ask, req)
}

func (p *kmpProcess) Inspect(ctx context.Context, req kmp.InspectRequest) (kmp.InspectResult, error) {
	return call(p, ctx, (*mcp.Client).Inspect, req)
}

func (p *kmpProcess) List(ctx context.Context, req kmp.ListRequest) (kmp.ListResult, error) {
	return call(p, ctx, (*mcp.Client).List, req)
}

// Close stops kmp-mcp.
func (p *kmpProcess) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return nil
	}
	err := p.c.Close()
	p.c = nil
	return err
}
