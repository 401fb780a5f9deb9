package agent

import (
	"encoding/json"
	"reflect"
	"testing"
)

func fp(f float64) *float64 { return &f }

func TestUsageAdd(t *testing.T) {
	cases := []struct {
		name    string
		a, b    Usage
		want    Usage
		wantNil bool
	}{
		{
			name: "tokens sum, both costs nil",
			a:    Usage{PromptTokens: 10, CachedTokens: 4, CacheWriteTokens: 2, CompletionTokens: 3, ReasoningTokens: 1},
			b:    Usage{PromptTokens: 5, CachedTokens: 1, CacheWriteTokens: 7, CompletionTokens: 2, ReasoningTokens: 6},
			want: Usage{PromptTokens: 15, CachedTokens: 5, CacheWriteTokens: 9, CompletionTokens: 5, ReasoningTokens: 7},
		},
		{name: "cost on the left only", a: Usage{CostUSD: fp(0.5)}, b: Usage{}, want: Usage{CostUSD: fp(0.5)}},
		{name: "cost on the right only", a: Usage{}, b: Usage{CostUSD: fp(0.25)}, want: Usage{CostUSD: fp(0.25)}},
		{name: "both costs", a: Usage{CostUSD: fp(0.5)}, b: Usage{CostUSD: fp(0.25)}, want: Usage{CostUSD: fp(0.75)}},
		{name: "zero cost is not nil", a: Usage{}, b: Usage{CostUSD: fp(0)}, want: Usage{CostUSD: fp(0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			a.Add(tc.b)
			if !reflect.DeepEqual(a, tc.want) {
				t.Errorf("Add = %s, want %s", js(a), js(tc.want))
			}
		})
	}
}

// Add must not share the cost pointer of its argument.
func TestUsageAddDoesNotAlias(t *testing.T) {
	var sum Usage
	o := Usage{CostUSD: fp(1)}
	sum.Add(o)
	*o.CostUSD = 100
	if *sum.CostUSD != 1 {
		t.Errorf("sum cost changed to %v when the added usage changed", *sum.CostUSD)
	}
}

func TestParseUsage(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want Usage
	}{
		{name: "empty", raw: "", want: Usage{}},
		{name: "null", raw: "null", want: Usage{}},
		{
			name: "openrouter",
			raw: `{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"cost":0.0012,"is_byok":false,` +
				`"prompt_tokens_details":{"cached_tokens":80,"cache_write_tokens":10,"audio_tokens":0},` +
				`"completion_tokens_details":{"reasoning_tokens":12,"image_tokens":0},"cost_details":{"upstream_inference_cost":null}}`,
			want: Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 80, CacheWriteTokens: 10, ReasoningTokens: 12, CostUSD: fp(0.0012)},
		},
		{
			name: "cache_write_tokens wins over cache_creation_input_tokens",
			raw:  `{"prompt_tokens":1,"prompt_tokens_details":{"cache_write_tokens":9},"cache_creation_input_tokens":3}`,
			want: Usage{PromptTokens: 1, CacheWriteTokens: 9},
		},
		{
			name: "null details and counts",
			raw:  `{"prompt_tokens":7,"completion_tokens":null,"prompt_tokens_details":null,"completion_tokens_details":null,"cost":null}`,
			want: Usage{PromptTokens: 7},
		},
		{name: "float counts", raw: `{"prompt_tokens":12.0,"completion_tokens":3}`, want: Usage{PromptTokens: 12, CompletionTokens: 3}},
		{
			name: "a field of the wrong type is skipped",
			raw:  `{"prompt_tokens":"many","completion_tokens":4,"cost":0.5}`,
			want: Usage{CompletionTokens: 4, CostUSD: fp(0.5)},
		},
		{name: "negative counts are zero", raw: `{"prompt_tokens":-3}`, want: Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseUsage(tc.raw); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseUsage(%s) = %s, want %s", tc.raw, js(got), js(tc.want))
			}
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
