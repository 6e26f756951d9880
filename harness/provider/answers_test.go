package provider_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/provider"
)

type answer struct{ N int }

func jsonAnswer() *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
}

// Answers decodes as the SDKs do, and a replay decodes each body once.
func TestAnswersDecode(t *testing.T) {
	var c provider.Answers[*answer]
	calls := 0
	decode := func(raw []byte) (*answer, error) {
		calls++
		a := &answer{}
		return a, json.Unmarshal(raw, a)
	}
	body := []byte(" {\"N\":1}\n")
	first, err := c.Decode(jsonAnswer(), body, true, decode)
	require.NoError(t, err)
	assert.Equal(t, 1, first.N)
	again, err := c.Decode(jsonAnswer(), []byte(" {\"N\":1}\n"), true, decode)
	require.NoError(t, err)
	assert.Same(t, first, again, "a replayed body is decoded once")
	assert.Equal(t, 1, calls)

	live, err := c.Decode(jsonAnswer(), body, false, decode)
	require.NoError(t, err)
	assert.NotSame(t, first, live, "a live call decodes every answer")
	assert.Equal(t, 2, calls)

	// What follows the first value is ignored, as encoding/json's decoder
	// (and so the SDKs) ignores it; such a body is not kept.
	for range 2 {
		trailing, err := c.Decode(jsonAnswer(), []byte(`{"N":2} trailing`), true, decode)
		require.NoError(t, err)
		assert.Equal(t, 2, trailing.N)
	}
	assert.Equal(t, 4, calls)
}

func TestAnswersDecodeErrors(t *testing.T) {
	var c provider.Answers[*answer]
	failing := errors.New("bad member")
	decode := func([]byte) (*answer, error) { return nil, failing }

	_, err := c.Decode(&http.Response{Header: http.Header{"Content-Type": {"text/plain"}}}, []byte(`{}`), true, decode)
	assert.EqualError(t, err, "expected destination type of 'string' or '[]byte' for responses with content-type 'text/plain' that is not 'application/json'")

	_, err = c.Decode(jsonAnswer(), []byte(`{"N":`), true, decode)
	assert.EqualError(t, err, "error parsing response json: unexpected EOF")

	for range 2 {
		_, err = c.Decode(jsonAnswer(), []byte(`{"N":1}`), true, decode)
		assert.ErrorIs(t, err, failing, "a failure is not kept")
	}
	_, err = c.Decode(&http.Response{Header: http.Header{"Content-Type": {"application/problem+json"}}}, []byte(`{"N":1}`), true, decode)
	assert.ErrorIs(t, err, failing, "+json is JSON")
}

// Remember decodes a replayed value once, a live one every time, and keeps
// no failure.
func TestAnswersRemember(t *testing.T) {
	var c provider.Answers[*answer]
	calls := 0
	decode := func(raw []byte) (*answer, error) {
		calls++
		a := &answer{}
		return a, json.Unmarshal(raw, a)
	}
	first, err := c.Remember([]byte(`{"N":2}`), true, decode)
	require.NoError(t, err)
	again, err := c.Remember([]byte(`{"N":2}`), true, decode)
	require.NoError(t, err)
	assert.Same(t, first, again)
	assert.Equal(t, 2, again.N)
	assert.Equal(t, 1, calls)

	live, err := c.Remember([]byte(`{"N":2}`), false, decode)
	require.NoError(t, err)
	assert.NotSame(t, first, live)
	assert.Equal(t, 2, calls)

	for range 2 {
		_, err = c.Remember([]byte(`{"N":`), true, decode)
		require.Error(t, err)
	}
	assert.Equal(t, 4, calls, "a failure is decoded again")
}
