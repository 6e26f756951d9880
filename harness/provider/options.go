package provider

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Option keys accepted by ApplyOptions.
var optionKeys = []string{
	"api_key_env", "api_version", "auth_header", "base_url", "extra_body", "headers",
	"max_retries", "max_tokens", "project", "region", "retry_initial_backoff", "retry_max_backoff",
	"timeout", "use_responses_api",
}

// OptionKeys lists the keys ApplyOptions understands, sorted.
func OptionKeys() []string { return slices.Clone(optionKeys) }

// ApplyOptions sets configuration from an options map, the form harness
// profiles use for provider init options, e.g.
// {"use_responses_api": true, "base_url": "http://localhost:8000/v1", "timeout": "90s"}.
//
//	base_url               string
//	api_key_env            string (an environment variable name)
//	auth_header            string
//	headers                map of string to string
//	use_responses_api      bool
//	max_tokens             integer > 0
//	timeout                duration string ("90s") or seconds; negative disables
//	max_retries            integer >= 0 (attempts = max_retries + 1)
//	retry_initial_backoff  duration string or seconds
//	retry_max_backoff      duration string or seconds
//	extra_body             map of top-level request fields sent as is
//	region                 string: AWS region (bedrock) or Google Cloud location (vertex)
//	project                string: Google Cloud project (vertex)
//	api_version            string: Azure OpenAI api-version (azure-openai)
//
// Keys are applied in sorted order; an unknown key or a value of the wrong
// type is an error naming the key. Putting a literal API key in options is
// refused: keys belong in the environment (api_key_env).
func ApplyOptions(c *Config, opts map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := opts[k]
		var err error
		switch k {
		case "base_url":
			// The entry's URL, and any variable it left unset, is replaced.
			c.BaseURL, err = asString(v)
			c.unsetURL = nil
		case "api_key_env":
			c.APIKeyEnv, err = asString(v)
			if err == nil && !envName().MatchString(c.APIKeyEnv) {
				err = fmt.Errorf("%q is not an environment variable name", c.APIKeyEnv)
			}
		case "auth_header":
			c.AuthHeader, err = asString(v)
		case "region":
			c.Region, err = asString(v)
		case "project":
			c.Project, err = asString(v)
		case "api_version":
			c.APIVersion, err = asString(v)
		case "headers":
			var h map[string]string
			if h, err = asStringMap(v); err == nil {
				if c.Headers == nil {
					c.Headers = map[string]string{}
				}
				maps.Copy(c.Headers, h)
			}
		case "use_responses_api":
			var b bool
			if b, err = asBool(v); err == nil {
				c.UseResponsesAPI = &b
			}
		case "max_tokens":
			var n int
			if n, err = asInt(v); err == nil && n <= 0 {
				err = fmt.Errorf("must be positive, got %d", n)
			}
			c.MaxTokens = n
		case "timeout":
			c.Timeout, err = asDuration(v)
			if err == nil && c.Timeout < 0 {
				c.Timeout = -1
			}
		case "max_retries":
			var n int
			if n, err = asInt(v); err == nil {
				if n < 0 {
					err = fmt.Errorf("must not be negative, got %d", n)
				}
				c.Retry.MaxAttempts = n + 1
			}
		case "retry_initial_backoff":
			c.Retry.InitialBackoff, err = asDuration(v)
		case "retry_max_backoff":
			c.Retry.MaxBackoff, err = asDuration(v)
		case "extra_body":
			m, ok := v.(map[string]any)
			if !ok {
				err = fmt.Errorf("want a map, got %T", v)
				break
			}
			if c.ExtraBody == nil {
				c.ExtraBody = map[string]any{}
			}
			maps.Copy(c.ExtraBody, m)
		case "api_key":
			err = fmt.Errorf("literal API keys are not accepted in options; name the environment variable with api_key_env")
		default:
			err = fmt.Errorf("unknown provider option; known options: %s", strings.Join(optionKeys, ", "))
		}
		if err != nil {
			return fmt.Errorf("option %s: %w", k, err)
		}
	}
	return nil
}

func asString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T", v)
	}
	return s, nil
}

func asBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("want true or false, got %T", v)
	}
	return b, nil
}

// asInt accepts the integer types YAML and JSON decoders produce, and whole floats.
func asInt(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case uint64:
		if n > math.MaxInt32 {
			return 0, fmt.Errorf("%d is too large", n)
		}
		return int(n), nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			return 0, fmt.Errorf("want a whole number, got %v", n)
		}
		return int(n), nil
	}
	return 0, fmt.Errorf("want a whole number, got %T", v)
}

func asDuration(v any) (time.Duration, error) {
	if s, ok := v.(string); ok {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("want a duration such as \"30s\": %v", err)
		}
		return d, nil
	}
	switch n := v.(type) {
	case int, int64, uint64:
		i, err := asInt(n)
		return time.Duration(i) * time.Second, err
	case float64:
		return time.Duration(n * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("want a duration such as \"30s\" or a number of seconds, got %T", v)
}

func asStringMap(v any) (map[string]string, error) {
	out := map[string]string{}
	switch m := v.(type) {
	case map[string]string:
		maps.Copy(out, m)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s, ok := m[k].(string)
			if !ok {
				return nil, fmt.Errorf("value of %s: want a string, got %T", k, m[k])
			}
			out[k] = s
		}
	default:
		return nil, fmt.Errorf("want a map of strings, got %T", v)
	}
	return out, nil
}
