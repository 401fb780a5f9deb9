package daemon

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"

	"github.com/underpass-ai/axlr/activities"
	"github.com/underpass-ai/axlr/forge"
	axlrclient "github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/hostid"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/plugins"
	"github.com/underpass-ai/axlr/web"
)

// The job request tools reach the registry through axlrd's own client.
var _ activities.JobClient = (*axlrclient.Client)(nil)

// providerKeys are environment variables a plugin never receives: the
// model provider's keys and the search key.
var providerKeys = []string{"OPENAI_API_KEY", "OPENROUTER_API_KEY", web.BraveKeyEnv}

// openHostTools builds the host tools the settings ask for: the web tools
// (unless tools.web is false), the registered MCP plugins, whose servers
// start on first use, and the job request tools, which reach the job
// registry through the worker's own Temporal client under axlrd's settings.
// It returns the secrets they hold, for the redactor. A plugin that cannot
// be registered stops axlrd with its reason: a person who registered it
// expects it.
func openHostTools(o *Options, set *settings.Loaded, log zerolog.Logger) (*activities.HostTools, []string, error) {
	host, err := hostid.Get(o.Getenv)
	if err != nil {
		return nil, nil, err
	}
	h := &activities.HostTools{
		Log: log.With().Str("component", "tools").Logger(),
		Jobs: func(ctx context.Context) activities.JobClient {
			return axlrclient.New(activity.GetClient(ctx), host, &set.Settings, o.Getenv)
		},
	}
	var secrets []string
	if set.WebTools() {
		w, err := web.New(web.OptionsFromEnv(o.Environ))
		if err != nil {
			return nil, nil, fmt.Errorf("web tools: %w", err)
		}
		h.Web = w
		secrets = append(secrets, w.Secrets()...)
		log.Debug().Str("engine", w.Engine()).Msg("web tools offered")
	}
	if len(set.Plugins) == 0 {
		return h, secrets, nil
	}
	var list []plugins.Plugin
	for i, p := range set.Plugins {
		m, err := plugins.ReadManifest(p.Manifest)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: plugins[%d]: %w", set.Path, i, err)
		}
		env, vals, err := pluginEnv(o, set, i, p, m)
		if err != nil {
			return nil, nil, err
		}
		secrets = append(secrets, vals...)
		list = append(list, plugins.Plugin{Manifest: m, Env: env})
	}
	ps, err := plugins.NewSet(list, plugins.Options{Stderr: h.Log})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: plugins: %w", set.Path, err)
	}
	h.Plugins = ps
	log.Debug().Strs("plugins", ps.IDs()).Msg("plugins registered")
	return h, secrets, nil
}

// pluginEnv is a stdio plugin's complete environment, from env and
// env_from, sorted; the values read from axlrd's environment are returned
// too, to be redacted. An HTTP plugin takes none, and no plugin is given a
// provider's key.
func pluginEnv(o *Options, set *settings.Loaded, i int, p settings.Plugin, m *plugins.Manifest) ([]string, []string, error) {
	if !m.Stdio() {
		if len(p.Env)+len(p.EnvFrom) > 0 {
			return nil, nil, fmt.Errorf("%s: plugins[%d] (%s) is a Streamable HTTP plugin: it takes no env or env_from", set.Path, i, m.ID)
		}
		return nil, nil, nil
	}
	env := []string{}
	var secrets []string
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		if slices.Contains(providerKeys, k) {
			return nil, nil, fmt.Errorf("%s: plugins[%d] (%s): env %s is a provider's key, which is never forwarded to a plugin", set.Path, i, m.ID, k)
		}
		env = append(env, k+"="+p.Env[k])
	}
	for _, k := range slices.Sorted(maps.Keys(p.EnvFrom)) {
		from := p.EnvFrom[k]
		if _, twice := p.Env[k]; twice {
			return nil, nil, fmt.Errorf("%s: plugins[%d] (%s): %s is in both env and env_from", set.Path, i, m.ID, k)
		}
		if slices.Contains(providerKeys, k) || slices.Contains(providerKeys, from) {
			return nil, nil, fmt.Errorf("%s: plugins[%d] (%s): env_from %s=%s names a provider's key, which is never forwarded to a plugin", set.Path, i, m.ID, k, from)
		}
		v := o.Getenv(from)
		if v == "" {
			return nil, nil, fmt.Errorf("%s: plugins[%d] (%s): env_from %s names %s, which is not set in axlrd's environment", set.Path, i, m.ID, k, from)
		}
		if set.Provider.APIKey != "" && v == set.Provider.APIKey {
			return nil, nil, fmt.Errorf("%s: plugins[%d] (%s): env_from %s holds the provider's key, which is never forwarded to a plugin", set.Path, i, m.ID, k)
		}
		env = append(env, k+"="+v)
		secrets = append(secrets, v)
	}
	return env, secrets, nil
}

// openForge builds the jobs' forge: the GitHub client of forge.api_url
// (default api.github.com) with the token GH_TOKEN, GITHUB_TOKEN,
// GH_ENTERPRISE_TOKEN or gh's own config gives for its host, also used to
// push over http(s). Without a token axlrd still starts; a job's forge
// calls are then refused with the reason.
func openForge(set *settings.Loaded, getenv func(string) string, log zerolog.Logger) *activities.Forge {
	api := cmp.Or(set.Forge.APIURL, forge.DefaultAPIURL)
	host, err := forge.APIHost(api)
	if err != nil {
		return &activities.Forge{NoGitHub: fmt.Sprintf("forge.api_url %s: %v", api, err)}
	}
	token, err := forge.Token(host, getenv)
	if err != nil {
		log.Debug().Err(err).Str("host", host).Msg("no GitHub token: jobs cannot reach their forge")
		return &activities.Forge{NoGitHub: err.Error()}
	}
	gh, err := forge.NewGitHub(forge.Options{APIURL: api, Token: token})
	if err != nil {
		return &activities.Forge{NoGitHub: err.Error()}
	}
	return &activities.Forge{GitHub: gh, Git: forge.GitAuth{Token: token}}
}
