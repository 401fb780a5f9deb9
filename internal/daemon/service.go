package daemon

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/agent"
	axlrclient "github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/live"
	"github.com/underpass-ai/axlr/internal/service"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/made"
)

// openService binds the service API's listeners (unless both are off);
// Run serves them beside the worker.
func (d *Daemon) openService(o Options, set *settings.Loaded, deltas *live.Broker, r *ready) error {
	svc := set.Service
	if svc.ListenAddress() == "" && svc.ProbeAddress() == "" {
		return nil
	}
	c := axlrclient.New(d.temporal, d.info.HostID, &set.Settings, o.Getenv)
	s, err := service.New(service.Options{Settings: svc, Client: c, Live: deltas, StateDir: o.StateDir,
		Model: set.Settings.Model, Ready: r.checks, Heartbeat: svc.Heartbeat(), Log: d.log.With().Str("component", "service").Logger()})
	if err != nil {
		return err
	}
	d.add("the service API", func() error { s.Close(); return nil })
	d.service = s
	d.info.ServiceURL, d.info.ProbeAddr = s.URL(), s.ProbeAddr()
	return nil
}

// ready is what /readyz checks: Temporal answers, a model is configured
// (never asked: readiness costs no paid request), MADE and the memory
// answer. Results are kept readyFor, so a probe every second asks each
// part at most that often.
type ready struct {
	temporal client.Client
	made     made.Engine
	memory   kmp.Store
	model    string
	provider agent.Config

	mu   sync.Mutex
	at   time.Time
	last []service.Check
}

// readyFor is how long a readiness answer stands.
const readyFor = 5 * time.Second

func (r *ready) checks(ctx context.Context) []service.Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && time.Since(r.at) < readyFor {
		return r.last
	}
	check := func(name string, err error) service.Check {
		c := service.Check{Name: name, OK: err == nil}
		if err != nil {
			c.Error = err.Error()
		}
		return c
	}
	var out []service.Check
	_, err := r.temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
	out = append(out, check("temporal", err))
	var modelErr error
	switch {
	case strings.TrimSpace(r.model) == "":
		modelErr = errors.New("no default model: set model in settings.json or AXLR_MODEL")
	case r.provider.APIKey == "" && r.provider.BaseURL == "":
		modelErr = errors.New("no provider: set OPENAI_API_KEY (and OPENAI_BASE_URL for a server other than OpenAI's)")
	}
	out = append(out, check("model", modelErr))
	_, err = r.made.Get(ctx, "axlr-readyz")
	if err != nil && !errors.Is(err, made.ErrUnavailable) {
		err = nil // an answer, even "no such instance", is MADE reachable
	}
	out = append(out, check("made", err))
	_, err = r.memory.Inspect(ctx, kmp.InspectRequest{Ref: "kmp:entry:0"})
	if kmp.CodeOf(err) != kmp.CodeUnavailable {
		err = nil
	}
	out = append(out, check("memory", err))
	r.last, r.at = out, time.Now()
	return out
}
