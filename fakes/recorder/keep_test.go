package recorder_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/internal/posttest"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
)

// goodCassette records one successful exchange into a new file and
// returns its path and bytes.
func goodCassette(t *testing.T) (string, []byte) {
	t.Helper()
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("good")))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "good.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
	require.NoError(t, rec.Stop())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, data
}

// TestFailedRecordingKeepsTheCassette: an error answer nobody retried, or a
// session that recorded nothing, leaves a good cassette byte-identical and
// says so.
func TestFailedRecordingKeepsTheCassette(t *testing.T) {
	t.Run("500", func(t *testing.T) {
		path, good := goodCassette(t)
		srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("never")))
		defer srv.Close()
		srv.FailOn(1, llmserver.Fault{Status: 500})
		rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
		require.NoError(t, err)
		r := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
		require.Equal(t, 500, r.Status)
		err = rec.Stop()
		var ns *recorder.NotSavedError
		require.ErrorAs(t, err, &ns)
		assert.True(t, ns.Kept)
		assert.Equal(t, "kept the previous cassette "+path+": the recording had 1 provider error (POST /v1/messages: 500 Internal Server Error)", err.Error())
		after, _ := os.ReadFile(path)
		assert.Equal(t, string(good), string(after))
	})
	t.Run("nothing recorded", func(t *testing.T) {
		path, good := goodCassette(t)
		rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
		require.NoError(t, err)
		err = rec.Stop()
		require.ErrorContains(t, err, "kept the previous cassette "+path+": the recording has no interactions")
		after, _ := os.ReadFile(path)
		assert.Equal(t, string(good), string(after))
	})
	t.Run("no previous cassette", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new.yaml")
		rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
		require.NoError(t, err)
		require.ErrorContains(t, rec.Stop(), "wrote no cassette "+path)
		assert.NoFileExists(t, path)
	})
	t.Run("abandoned", func(t *testing.T) {
		path, good := goodCassette(t)
		srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("a different answer")))
		defer srv.Close()
		rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
		require.NoError(t, err)
		posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
		require.EqualError(t, rec.Abandon("the run was cancelled"), "kept the previous cassette "+path+": the run was cancelled")
		require.NoError(t, rec.Stop(), "stopping twice is a no-op")
		after, _ := os.ReadFile(path)
		assert.Equal(t, string(good), string(after))
	})
}

// TestRetriedFailuresAreNotStored: a 429 (or a request that got no answer)
// followed by the same request that succeeded leaves only the success in
// the cassette, so replay, which never retries, gets the answer.
func TestRetriedFailuresAreNotStored(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("for Oslo"), fakes.Reply("after the retry"), fakes.Reply("for Rome")))
	defer srv.Close()
	srv.FailOn(1, llmserver.Fault{Status: 429})
	path := filepath.Join(t.TempDir(), "retried.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	ctx := recorder.WithLane(context.Background(), "main")
	first := posttest.MustPost(t, ctx, rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
	require.Equal(t, http.StatusTooManyRequests, first.Status)
	// Another lane's identical request is not a retry of it.
	other := posttest.MustPost(t, recorder.WithLane(context.Background(), "grader"), rec.Client(), srv.URL+"/v1/messages", turnBody("Oslo"), posttest.AnthropicHeaders("k")...)
	require.Equal(t, 200, other.Status)
	second := posttest.MustPost(t, ctx, rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
	require.Equal(t, 200, second.Status)

	// A transport failure that was retried is dropped the same way.
	failing := &failOnce{next: http.DefaultTransport}
	rec2path := filepath.Join(t.TempDir(), "transport.yaml")
	rec2, err := recorder.New(rec2path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv), recorder.WithRealTransport(failing))
	require.NoError(t, err)
	_, err = posttest.Post(t, ctx, rec2.Client(), srv.URL+"/v1/messages", turnBody("Rome"), posttest.AnthropicHeaders("k")...)
	require.Error(t, err)
	posttest.MustPost(t, ctx, rec2.Client(), srv.URL+"/v1/messages", turnBody("Rome"), posttest.AnthropicHeaders("k")...)
	require.NoError(t, rec2.Stop(), "the retried transport failure is not a provider error of the recording")
	c2, err := cassette.Read(rec2path)
	require.NoError(t, err)
	assert.Len(t, c2.Interactions, 1)

	require.NoError(t, rec.Stop())
	c, err := cassette.Read(path)
	require.NoError(t, err)
	require.Len(t, c.Interactions, 2)
	for _, it := range c.Interactions {
		assert.Equal(t, 200, it.Response.Code)
	}
	assert.Empty(t, cassette.Lint(c, cassette.LintOptions{}))
	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	assert.Equal(t, second.Body, posttest.MustPost(t, ctx, rep.Client(), "http://api.provider.test/v1/messages", turnBody("Paris")).Body)
}

// failOnce fails its first request without an answer.
type failOnce struct {
	next   http.RoundTripper
	failed bool
}

func (f *failOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if !f.failed {
		f.failed = true
		return nil, context.DeadlineExceeded
	}
	return f.next.RoundTrip(req)
}

// TestRecordMissingReRecordsUnfitCassettes: record-missing treats a
// cassette holding error answers or no interactions as absent and records
// it anew instead of replaying what broke.
func TestRecordMissingReRecordsUnfitCassettes(t *testing.T) {
	tests := []struct {
		name    string
		content string
	}{
		{"no interactions", "---\nversion: 2\ninteractions: []\n"},
		{"an error answer", "---\nversion: 2\ninteractions:\n    - id: 0\n      request:\n        body: '" + turnBody("Paris") + "'\n        url: https://api.anthropic.com/v1/messages\n        method: POST\n      response:\n        body: '{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}'\n        status: 500 Internal Server Error\n        code: 500\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("fresh")))
			defer srv.Close()
			path := filepath.Join(t.TempDir(), "unfit.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecordMissing), recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			r := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
			assert.Contains(t, r.Body, "fresh", "the request reached the provider instead of replaying the failure")
			require.NoError(t, rec.Stop())
			c, err := cassette.Read(path)
			require.NoError(t, err)
			require.Len(t, c.Interactions, 1)
			assert.Equal(t, 200, c.Interactions[0].Response.Code)
		})
	}
}

// TestVerifyPlayed names the first recorded call a replay never made.
func TestVerifyPlayed(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("one"), fakes.Reply("two"), fakes.Reply("three")))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "three.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	ctx := recorder.WithLane(context.Background(), "main")
	for _, city := range []string{"Paris", "Oslo", "Rome"} {
		posttest.MustPost(t, ctx, rec.Client(), srv.URL+"/v1/messages", turnBody(city), posttest.AnthropicHeaders("k")...)
	}
	assert.NoError(t, rec.VerifyPlayed(), "a recording has nothing to play")
	require.NoError(t, rec.Stop())
	c, err := cassette.Read(path)
	require.NoError(t, err)

	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	posttest.MustPost(t, ctx, rep.Client(), "http://api.provider.test/v1/messages", turnBody("Paris"))
	err = rep.VerifyPlayed()
	var ue *recorder.UnplayedError
	require.ErrorAs(t, err, &ue)
	require.Len(t, ue.Calls, 2)
	assert.Equal(t, 1, ue.Calls[0].Index)
	assert.Equal(t, c.Lines[1], ue.Calls[0].Line)
	assert.EqualError(t, err, "cassette "+path+` has 2 recorded calls the agent never made (first: POST /v1/messages #2 in lane "main", line `+strconv.Itoa(c.Lines[1])+`) — the agent's behaviour changed; re-record with DAGEVAL_RECORD=1`)

	for _, city := range []string{"Oslo", "Rome"} {
		posttest.MustPost(t, ctx, rep.Client(), "http://api.provider.test/v1/messages", turnBody(city))
	}
	assert.NoError(t, rep.VerifyPlayed())
}
