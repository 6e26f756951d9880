package profile

import "errors"

// Errors callers branch on; the returned errors wrap them with details.
var (
	// ErrInvalidKey: a registry key is not "provider" or "provider:model".
	ErrInvalidKey = errors.New("invalid profile key")
	// ErrInvalidExclusion: an excluded_middleware entry is malformed (empty,
	// starts with "_", contains ":", or is not a middleware type).
	ErrInvalidExclusion = errors.New("invalid excluded_middleware entry")
	// ErrScaffolding: a profile excludes FilesystemMiddleware or
	// SubAgentMiddleware, which every deep agent needs.
	ErrScaffolding = errors.New("required scaffolding cannot be excluded")
	// ErrAmbiguousExclusion: a name exclusion matched two different
	// middleware types within one stack.
	ErrAmbiguousExclusion = errors.New("excluded_middleware name entry matched multiple distinct middleware types within a single stack")
	// ErrUnmatchedExclusion: an exclusion matched nothing in any stack it was
	// applied to, which usually means a typo.
	ErrUnmatchedExclusion = errors.New("excluded_middleware entries matched no middleware across any assembled stack")
	// ErrNotSerializable: a profile holds something a profile file cannot
	// express (extra middleware, or a type exclusion without a serialized name).
	ErrNotSerializable = errors.New("profile cannot be written as a profile config")
	// ErrInvalidProfile: a profile's fields contradict each other.
	ErrInvalidProfile = errors.New("invalid profile")
)
