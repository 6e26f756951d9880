package llm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
)

func TestErrorKindsThroughWrapping(t *testing.T) {
	base := &llm.Error{
		Kind: llm.ErrRateLimit, Provider: "anthropic", StatusCode: 429,
		RequestID: "req_1", RetryAfter: 3 * time.Second, Code: "rate_limit_error", Message: "slow down",
	}
	err := fmt.Errorf("agent: model call: %w", base)

	assert.True(t, errors.Is(err, llm.ErrRateLimit))
	assert.False(t, errors.Is(err, llm.ErrContextOverflow))
	assert.True(t, llm.IsRateLimit(err))
	assert.True(t, llm.IsRetryable(err))
	assert.Equal(t, llm.ErrRateLimit, llm.KindOf(err))
	d, ok := llm.RetryAfter(err)
	require.True(t, ok)
	assert.Equal(t, 3*time.Second, d)
	assert.Equal(t, "agent: model call: anthropic: rate limit (HTTP 429, rate_limit_error, request req_1): slow down; retry after 3s", err.Error())

	e, ok := llm.AsError(err)
	require.True(t, ok)
	assert.Same(t, base, e)
}

func TestErrorKindPredicates(t *testing.T) {
	tests := []struct {
		kind      llm.ErrorKind
		retryable bool
		check     func(error) bool
	}{
		{llm.ErrAuthentication, false, llm.IsAuthentication},
		{llm.ErrBilling, false, nil},
		{llm.ErrRateLimit, true, llm.IsRateLimit},
		{llm.ErrOverloaded, true, nil},
		{llm.ErrServer, true, nil},
		{llm.ErrContextOverflow, false, llm.IsContextOverflow},
		{llm.ErrTimeout, true, llm.IsTimeout},
		{llm.ErrConnection, true, nil},
		{llm.ErrInvalidRequest, false, nil},
		{llm.ErrBadResponse, false, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", &llm.Error{Kind: tt.kind, Err: context.DeadlineExceeded})
			assert.Equal(t, tt.retryable, llm.IsRetryable(err))
			assert.True(t, errors.Is(err, tt.kind))
			assert.True(t, errors.Is(err, context.DeadlineExceeded), "the cause stays reachable")
			if tt.check != nil {
				assert.True(t, tt.check(err))
			}
		})
	}
	plain := errors.New("plain")
	assert.False(t, llm.IsRetryable(plain))
	assert.Equal(t, llm.ErrorKind(""), llm.KindOf(plain))
	_, ok := llm.RetryAfter(plain)
	assert.False(t, ok)
}

func TestErrorMessageFallsBackToCause(t *testing.T) {
	err := &llm.Error{Kind: llm.ErrConnection, Provider: "openai", Err: errors.New("connection reset")}
	assert.Equal(t, "openai: connection: connection reset", err.Error())
	assert.Equal(t, "llm: context overflow", llm.ErrContextOverflow.Error())
}
