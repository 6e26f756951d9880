package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrorKind classifies a failed model call so that every layer (retry
// policy, summarization, eval runner) can decide what to do without knowing
// which provider failed. Each kind is itself an error, so
// errors.Is(err, llm.ErrRateLimit) works on any wrapped *Error.
type ErrorKind string

// Error kinds. Retryable kinds are rate limit, overloaded, server, timeout and
// connection; the others fail the same way when repeated.
const (
	// ErrAuthentication: the key is missing, wrong or lacks permission (401/403).
	ErrAuthentication ErrorKind = "authentication"
	// ErrBilling: the account is out of credit or quota; waiting does not help.
	ErrBilling ErrorKind = "billing"
	// ErrRateLimit: too many requests or tokens for now (429); see RetryAfter.
	ErrRateLimit ErrorKind = "rate_limit"
	// ErrOverloaded: the provider is temporarily overloaded (Anthropic 529, 503).
	ErrOverloaded ErrorKind = "overloaded"
	// ErrServer: any other 5xx answer.
	ErrServer ErrorKind = "server"
	// ErrContextOverflow: the prompt (plus max tokens) does not fit the model's
	// context window; summarising the history and retrying can help.
	ErrContextOverflow ErrorKind = "context_overflow"
	// ErrTimeout: the call did not finish within its deadline (ours or the server's).
	ErrTimeout ErrorKind = "timeout"
	// ErrConnection: the network failed or a stream ended before it was complete.
	ErrConnection ErrorKind = "connection"
	// ErrInvalidRequest: any other 4xx answer; the request itself must change.
	ErrInvalidRequest ErrorKind = "invalid_request"
	// ErrBadResponse: the server answered 2xx with something that is not a valid response.
	ErrBadResponse ErrorKind = "bad_response"
)

func (k ErrorKind) Error() string { return "llm: " + strings.ReplaceAll(string(k), "_", " ") }

// Retryable reports whether repeating the same call later may succeed.
func (k ErrorKind) Retryable() bool {
	switch k {
	case ErrRateLimit, ErrOverloaded, ErrServer, ErrTimeout, ErrConnection:
		return true
	}
	return false
}

// Error is a failed model call, provider-neutral. Provider adapters return it
// (possibly wrapped) for every failure they can classify.
type Error struct {
	Kind ErrorKind
	// Provider is the provider entry that failed ("anthropic", "ollama", ...).
	Provider string
	// StatusCode is the HTTP status, 0 when no response arrived or the
	// failure came as an event inside a stream.
	StatusCode int
	// RequestID is the provider's id of the request, for support tickets.
	RequestID string
	// RetryAfter is how long the server asked us to wait, 0 if it did not say.
	RetryAfter time.Duration
	// Code is the provider's own error type or code, e.g. "overloaded_error"
	// or "context_length_exceeded".
	Code string
	// Message is the provider's explanation, with secrets removed.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	var sb strings.Builder
	if e.Provider != "" {
		sb.WriteString(e.Provider)
		sb.WriteString(": ")
	}
	sb.WriteString(strings.ReplaceAll(string(e.Kind), "_", " "))
	var meta []string
	if e.StatusCode != 0 {
		meta = append(meta, fmt.Sprintf("HTTP %d", e.StatusCode))
	}
	if e.Code != "" {
		meta = append(meta, e.Code)
	}
	if e.RequestID != "" {
		meta = append(meta, "request "+e.RequestID)
	}
	if len(meta) > 0 {
		sb.WriteString(" (" + strings.Join(meta, ", ") + ")")
	}
	switch {
	case e.Message != "":
		sb.WriteString(": " + e.Message)
	case e.Err != nil:
		sb.WriteString(": " + e.Err.Error())
	}
	if e.RetryAfter > 0 {
		sb.WriteString("; retry after " + e.RetryAfter.String())
	}
	return sb.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the error's kind, so errors.Is(err, llm.ErrContextOverflow) works.
func (e *Error) Is(target error) bool {
	k, ok := target.(ErrorKind)
	return ok && k == e.Kind
}

// Retryable reports whether repeating the call later may succeed.
func (e *Error) Retryable() bool { return e.Kind.Retryable() }

// AsError returns the *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// KindOf returns the kind of the *Error in err's chain, or "" when err is not
// a classified model error.
func KindOf(err error) ErrorKind {
	if e, ok := AsError(err); ok {
		return e.Kind
	}
	return ""
}

// IsContextOverflow reports whether err says the prompt did not fit the
// model's context window; summarising the history and retrying can help.
func IsContextOverflow(err error) bool { return errors.Is(err, ErrContextOverflow) }

// IsRateLimit reports whether err is a rate-limit refusal.
func IsRateLimit(err error) bool { return errors.Is(err, ErrRateLimit) }

// IsAuthentication reports whether err is a missing, invalid or unauthorised key.
func IsAuthentication(err error) bool { return errors.Is(err, ErrAuthentication) }

// IsTimeout reports whether err is a model call that ran out of time.
func IsTimeout(err error) bool { return errors.Is(err, ErrTimeout) }

// IsRetryable reports whether err is a classified failure that may succeed
// when repeated later.
func IsRetryable(err error) bool {
	e, ok := AsError(err)
	return ok && e.Retryable()
}

// RetryAfter returns the wait the server asked for, if err carries one.
func RetryAfter(err error) (time.Duration, bool) {
	if e, ok := AsError(err); ok && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}
