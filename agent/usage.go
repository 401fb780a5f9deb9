package agent

import (
	"encoding/json"
	"math"
)

// Usage is the token accounting of one response, or a sum of several.
type Usage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	// CachedTokens is prompt_tokens_details.cached_tokens: prompt tokens read
	// from the provider's cache.
	CachedTokens int64 `json:"cached_tokens"`
	// CacheWriteTokens is prompt_tokens_details.cache_write_tokens (OpenRouter)
	// or cache_creation_input_tokens (Anthropic style), whichever is reported.
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// ReasoningTokens is completion_tokens_details.reasoning_tokens.
	ReasoningTokens int64 `json:"reasoning_tokens"`
	// CostUSD is usage.cost when the provider reports it (OpenRouter), nil
	// otherwise.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// Add adds o to u. CostUSD stays nil only when both costs are nil; a nil cost
// counts as zero next to a reported one.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CachedTokens += o.CachedTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CompletionTokens += o.CompletionTokens
	u.ReasoningTokens += o.ReasoningTokens
	if o.CostUSD == nil {
		return
	}
	sum := *o.CostUSD
	if u.CostUSD != nil {
		sum += *u.CostUSD
	}
	u.CostUSD = &sum
}

// wireUsage is the usage object as OpenAI-compatible providers send it,
// including fields openai-go does not know. Counts are decoded as numbers of
// any form so that a provider writing 12.0 still parses.
type wireUsage struct {
	PromptTokens        float64 `json:"prompt_tokens"`
	CompletionTokens    float64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     float64 `json:"cached_tokens"`
		CacheWriteTokens float64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens float64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	CacheCreationInputTokens float64  `json:"cache_creation_input_tokens"`
	Cost                     *float64 `json:"cost"`
}

// parseUsage reads a usage object from its raw JSON. It is best effort: usage
// is accounting, so a field of an unexpected type is skipped rather than
// failing a response whose content is fine. Empty or null input is zero usage.
func parseUsage(raw string) Usage {
	if raw == "" || raw == "null" {
		return Usage{}
	}
	var w wireUsage
	// An *json.UnmarshalTypeError leaves the other fields decoded; openai-go
	// has already checked that raw is valid JSON.
	_ = json.Unmarshal([]byte(raw), &w)
	u := Usage{
		PromptTokens:     count(w.PromptTokens),
		CompletionTokens: count(w.CompletionTokens),
		CostUSD:          w.Cost,
	}
	if d := w.PromptTokensDetails; d != nil {
		u.CachedTokens = count(d.CachedTokens)
		u.CacheWriteTokens = count(d.CacheWriteTokens)
	}
	if u.CacheWriteTokens == 0 {
		u.CacheWriteTokens = count(w.CacheCreationInputTokens)
	}
	if d := w.CompletionTokensDetails; d != nil {
		u.ReasoningTokens = count(d.ReasoningTokens)
	}
	return u
}

func count(f float64) int64 {
	if f <= 0 || math.IsNaN(f) {
		return 0
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Round(f))
}
