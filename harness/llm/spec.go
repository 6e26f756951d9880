package llm

import (
	"fmt"
	"strings"
	"unicode"
)

// Spec is a parsed "provider:model" string.
type Spec struct {
	Provider string
	Model    string
}

func (s Spec) String() string { return s.Provider + ":" + s.Model }

// ParseSpec splits a model spec at its first colon, so model ids may contain
// colons ("ollama:llama3:8b"). Both halves must be non-empty and free of spaces.
func ParseSpec(s string) (Spec, error) {
	if s == "" {
		return Spec{}, fmt.Errorf("model spec is empty: want provider:model, e.g. anthropic:claude-sonnet-4-6")
	}
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return Spec{}, fmt.Errorf("model spec %q contains whitespace", s)
	}
	provider, model, ok := strings.Cut(s, ":")
	if !ok {
		return Spec{}, fmt.Errorf("model spec %q has no provider: want provider:model, e.g. anthropic:%s", s, s)
	}
	if provider == "" {
		return Spec{}, fmt.Errorf("model spec %q has an empty provider", s)
	}
	if model == "" {
		return Spec{}, fmt.Errorf("model spec %q has an empty model id", s)
	}
	return Spec{Provider: provider, Model: model}, nil
}
