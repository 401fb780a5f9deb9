package agent

import (
	"net"
	"net/http"
	"strings"
	"time"
)

// Base URLs known to ConfigFromEnv.
const (
	DefaultBaseURL    = "https://api.openai.com/v1"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
)

// Config says where and how the Client reaches an OpenAI-compatible provider.
type Config struct {
	// BaseURL is the API root that "chat/completions" is resolved against.
	// Default: DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Default: none, for local
	// servers that need no key.
	APIKey string
	// HTTPClient sends the requests. Default: a client whose transport bounds
	// dialing (10s), the TLS handshake (10s) and the wait for response headers
	// (5 min), with no overall timeout: the caller's context bounds each call.
	HTTPClient *http.Client
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer and
	// X-Title). Default: none.
	Headers map[string]string
}

// ConfigFromEnv reads OPENAI_BASE_URL and OPENAI_API_KEY. When OPENAI_API_KEY
// is empty and OPENROUTER_API_KEY is set, the key is OPENROUTER_API_KEY and the
// base URL defaults to OpenRouterBaseURL; OPENAI_BASE_URL wins when set. getenv
// is os.Getenv in production.
func ConfigFromEnv(getenv func(string) string) Config {
	cfg := Config{
		BaseURL: strings.TrimSpace(getenv("OPENAI_BASE_URL")),
		APIKey:  strings.TrimSpace(getenv("OPENAI_API_KEY")),
	}
	if cfg.APIKey == "" {
		if key := strings.TrimSpace(getenv("OPENROUTER_API_KEY")); key != "" {
			cfg.APIKey = key
			if cfg.BaseURL == "" {
				cfg.BaseURL = OpenRouterBaseURL
			}
		}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	return cfg
}

// Transport bounds of the default HTTP client.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 5 * time.Minute
)

// newHTTPClient returns the default client described on Config.HTTPClient.
func newHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
	}}
}
