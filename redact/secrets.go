package redact

import "strings"

// Secrets collects secret values from an environment given as KEY=VALUE
// entries (os.Environ): the values of variables whose names end in _API_KEY,
// _TOKEN, _SECRET or _PASSWORD (compared case-insensitively), and of
// OPENAI_API_KEY, OPENROUTER_API_KEY, GITHUB_TOKEN, GH_TOKEN and
// AWS_SECRET_ACCESS_KEY. Empty values and repeats are left out; short values
// are kept here and ignored by New.
func Secrets(environ []string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" || seen[value] || !secretVar(strings.ToUpper(name)) {
			continue
		}
		seen[value] = true
		out = append(out, value)
	}
	return out
}

func secretVar(name string) bool {
	switch name {
	case "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY":
		return true
	}
	for _, suffix := range []string{"_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}
