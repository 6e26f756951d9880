package profile

import (
	"fmt"
	"strings"
	"unicode"
)

// ValidateKey checks a registry key: "provider" or "provider:model". It
// rejects empty keys, surrounding whitespace, more than one colon, an empty
// half and whitespace next to the colon, so that a typo never registers a
// profile nobody can look up.
func ValidateKey(key string) error {
	if _, _, _, err := splitKey(key); err != nil {
		return fmt.Errorf("%w %q: %s; want \"provider\" or \"provider:model\"", ErrInvalidKey, key, err)
	}
	return nil
}

type keyError string

func (e keyError) Error() string { return string(e) }

// splitKey parses a key or spec into its provider and model halves.
func splitKey(key string) (provider, model string, hasModel bool, err error) {
	switch {
	case key == "":
		return "", "", false, keyError("it is empty")
	case strings.TrimSpace(key) != key:
		return "", "", false, keyError("it has leading or trailing whitespace")
	case strings.Count(key, ":") > 1:
		return "", "", false, keyError("it has more than one colon")
	}
	provider, model, hasModel = strings.Cut(key, ":")
	if !hasModel {
		return provider, "", false, nil
	}
	switch {
	case provider == "":
		return "", "", false, keyError("the provider is empty")
	case model == "":
		return "", "", false, keyError("the model is empty")
	case endsWithSpace(provider) || startsWithSpace(model):
		return "", "", false, keyError("there is whitespace next to the colon")
	}
	return provider, model, true, nil
}

func endsWithSpace(s string) bool {
	r := []rune(s)
	return len(r) > 0 && unicode.IsSpace(r[len(r)-1])
}

func startsWithSpace(s string) bool {
	for _, r := range s {
		return unicode.IsSpace(r)
	}
	return false
}
