package agent

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{name: "nothing set", want: Config{BaseURL: DefaultBaseURL}},
		{
			name: "openai key",
			env:  map[string]string{"OPENAI_API_KEY": "sk-oa"},
			want: Config{BaseURL: DefaultBaseURL, APIKey: "sk-oa"},
		},
		{
			name: "openrouter key selects openrouter",
			env:  map[string]string{"OPENROUTER_API_KEY": "sk-or"},
			want: Config{BaseURL: OpenRouterBaseURL, APIKey: "sk-or"},
		},
		{
			name: "openai base url wins over openrouter default",
			env:  map[string]string{"OPENROUTER_API_KEY": "sk-or", "OPENAI_BASE_URL": "https://gw.example/v1"},
			want: Config{BaseURL: "https://gw.example/v1", APIKey: "sk-or"},
		},
		{
			name: "openai key wins over openrouter key",
			env:  map[string]string{"OPENAI_API_KEY": "sk-oa", "OPENROUTER_API_KEY": "sk-or"},
			want: Config{BaseURL: DefaultBaseURL, APIKey: "sk-oa"},
		},
		{
			name: "both keys and a base url",
			env:  map[string]string{"OPENAI_API_KEY": "sk-oa", "OPENROUTER_API_KEY": "sk-or", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"},
			want: Config{BaseURL: "http://127.0.0.1:8000/v1", APIKey: "sk-oa"},
		},
		{
			name: "local server without key",
			env:  map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"},
			want: Config{BaseURL: "http://127.0.0.1:8080/v1"},
		},
		{
			name: "blank openai key falls through to openrouter",
			env:  map[string]string{"OPENAI_API_KEY": "  ", "OPENROUTER_API_KEY": " sk-or\n"},
			want: Config{BaseURL: OpenRouterBaseURL, APIKey: "sk-or"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ConfigFromEnv = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDefaultHTTPClient(t *testing.T) {
	hc := newHTTPClient()
	if hc.Timeout != 0 {
		t.Errorf("client timeout = %v, want none (the caller's context bounds the call)", hc.Timeout)
	}
	tr, ok := hc.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport is %T, want *http.Transport", hc.Transport)
	}
	if tr.TLSHandshakeTimeout != 10*time.Second || tr.ResponseHeaderTimeout != 5*time.Minute || tr.DialContext == nil || tr.Proxy == nil {
		t.Errorf("transport: TLS %v, response header %v, dialer set %v, proxy set %v",
			tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout, tr.DialContext != nil, tr.Proxy != nil)
	}
}
