package evals_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

// soon makes the provider's retries wait a millisecond instead of the
// default backoff, as a server's retry-after header asks.
var soon = http.Header{"Retry-After-Ms": {"1"}}

// evidenceSuite is a one-case suite against srv as provider "local";
// extra is more top-level YAML (mode, limits, providers' headers, …).
func evidenceSuite(srv *llmserver.Server, extra, headers string) string {
	return "version: 1\nname: evidence\nproviders: {local: {kind: openai-compatible, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: TEST_KEY" + headers + "}}\n" +
		"models: [local:m]\nagent: {tools: [{name: lookup}]}\ntools: {lookup: {mock: {result: found}}}\n" + extra +
		"cases:\n  - {id: one, input: first, checks: [{final_answer: {contains: one}}]}\n"
}

func lookupThenAnswer() *convModel {
	return &convModel{convs: map[string][]llm.Message{"first": {say("", call("lookup", `{"q":"x"}`)), say("answer one")}}}
}

// recordGood records the suite's cassette against a healthy provider and
// returns the suite's path, the cassette's path and its bytes.
func recordGood(t *testing.T) (suitePath, cassettePath string, good []byte) {
	t.Helper()
	srv := server(t, lookupThenAnswer())
	suitePath = writeSuite(t, map[string]string{"suite.yaml": evidenceSuite(srv, "mode: record\n", "")})
	oc := runSuite(t, suitePath, evals.Options{})
	require.Equal(t, evals.StatusPass, resultOf(t, oc, "one").Status, resultOf(t, oc, "one").Error)
	cassettePath = filepath.Join(filepath.Dir(suitePath), "cassettes", "one--local-m--default--e1.yaml")
	return suitePath, cassettePath, readFile(t, cassettePath)
}

// TestRecordNeverLosesAGoodCassette is observation 3 of issue 12:
// recording while the provider fails leaves the good cassette
// byte-identical and says so in the cell's error; a retried 429 is not
// stored; an unset ${VAR} in the provider's headers stops the run before
// anything is called; record-missing re-records a cassette of failures.
func TestRecordNeverLosesAGoodCassette(t *testing.T) {
	t.Run("500 on every attempt", func(t *testing.T) {
		suitePath, cassettePath, good := recordGood(t)
		srv := server(t, lookupThenAnswer())
		for n := 1; n <= 3; n++ {
			srv.FailOn(n, llmserver.Fault{Status: 500, Header: soon})
		}
		require.NoError(t, os.WriteFile(suitePath, []byte(evidenceSuite(srv, "mode: record\n", "")), 0o644))
		r := resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
		assert.Equal(t, evals.StatusError, r.Status, "a provider error is no verdict on the agent")
		assert.Contains(t, r.Error, "HTTP 500")
		assert.Contains(t, r.Error, "kept the previous cassette "+cassettePath+": the run ended with a provider error; the recording had 1 provider error (POST /v1/chat/completions: 500 Internal Server Error, after 3 attempts)")
		assert.Len(t, srv.Requests(), 3, "the call was retried while recording")
		assert.Equal(t, string(good), string(readFile(t, cassettePath)), "the good cassette is byte-identical")
		lint, err := cassette.LintFile(cassettePath, cassette.LintOptions{})
		require.NoError(t, err)
		assert.Empty(t, lint)
	})

	t.Run("429 then 200", func(t *testing.T) {
		srv := server(t, lookupThenAnswer())
		srv.FailOn(1, llmserver.Fault{Status: 429, Header: soon})
		suitePath := writeSuite(t, map[string]string{"suite.yaml": evidenceSuite(srv, "mode: record\n", "")})
		r := resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
		require.Equal(t, evals.StatusPass, r.Status, r.Error)
		assert.Len(t, srv.Requests(), 3, "the rate-limited call was retried")
		c, err := cassette.Read(filepath.Join(filepath.Dir(suitePath), "cassettes", "one--local-m--default--e1.yaml"))
		require.NoError(t, err)
		require.Len(t, c.Interactions, 2, "the 429 is not stored")
		for _, it := range c.Interactions {
			assert.Equal(t, 200, it.Response.Code)
		}
		srv.Close()
		require.NoError(t, os.WriteFile(suitePath, []byte(evidenceSuite(srv, "", "")), 0o644))
		r = resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
		assert.Equal(t, evals.StatusPass, r.Status, "replay gets the answer, not the 429: %s", r.Error)
	})

	t.Run("unset header variable", func(t *testing.T) {
		suitePath, cassettePath, good := recordGood(t)
		srv := server(t, lookupThenAnswer())
		require.NoError(t, os.WriteFile(suitePath, []byte(evidenceSuite(srv, "mode: record\n", ", headers: {X-Team: \"${TEAM_TOKEN}\"}")), 0o644))
		s, err := evals.Load(suitePath)
		require.NoError(t, err)
		_, err = s.Run(t.Context(), evals.Options{Getenv: testEnv})
		require.Error(t, err, "the run stops before any cell")
		assert.Contains(t, err.Error(), "suite.yaml:3:")
		assert.Contains(t, err.Error(), "providers.local")
		assert.Contains(t, err.Error(), "set TEAM_TOKEN (referenced by its base_url or headers)")
		assert.Contains(t, err.Error(), "no cassette was touched")
		assert.Empty(t, srv.Requests())
		assert.Equal(t, string(good), string(readFile(t, cassettePath)))
	})

	t.Run("record-missing re-records a cassette of failures", func(t *testing.T) {
		for name, content := range map[string]string{
			"no interactions": "---\nversion: 2\ninteractions: []\n",
			"an error answer": "---\nversion: 2\ninteractions:\n    - id: 0\n      request:\n        body: '{}'\n        url: http://127.0.0.1/v1/chat/completions\n        method: POST\n      response:\n        body: '{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}'\n        status: 500 Internal Server Error\n        code: 500\n",
		} {
			t.Run(name, func(t *testing.T) {
				srv := server(t, lookupThenAnswer())
				suitePath := writeSuite(t, map[string]string{
					"suite.yaml": evidenceSuite(srv, "mode: record-missing\n", ""),
					"cassettes/one--local-m--default--e1.yaml": content,
				})
				r := resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
				require.Equal(t, evals.StatusPass, r.Status, r.Error)
				assert.Len(t, srv.Requests(), 2)
				lint, err := cassette.LintFile(filepath.Join(filepath.Dir(suitePath), "cassettes", "one--local-m--default--e1.yaml"), cassette.LintOptions{})
				require.NoError(t, err)
				assert.Empty(t, lint)
			})
		}
	})
}

// TestUnplayedInteractionsErrorTheCell is observation 5 of issue 12: a
// cassette holding calls the agent no longer makes errors the cell, or is
// a named warning under allow_unused (per suite, overridable per case).
func TestUnplayedInteractionsErrorTheCell(t *testing.T) {
	suitePath, cassettePath, _ := recordGood(t)
	// The agent used to hand work to a subagent: two more calls in its lane.
	c, err := cassette.Read(cassettePath)
	require.NoError(t, err)
	for _, it := range c.Interactions[:2] {
		cp := *it
		cp.Request.Headers = it.Request.Headers.Clone()
		cp.Request.Headers.Set(cassette.LaneHeader, "main/task:researcher")
		c.Interactions = append(c.Interactions, &cp)
	}
	require.NoError(t, cassette.Write(cassettePath, c, nil))
	c, err = cassette.Read(cassettePath)
	require.NoError(t, err)
	srv := server(t, lookupThenAnswer())
	srv.Close()

	write := func(extra, caseExtra string) {
		s := strings.Replace(evidenceSuite(srv, extra, ""), "checks: [{final_answer: {contains: one}}]", "checks: [{final_answer: {contains: one}}]"+caseExtra, 1)
		require.NoError(t, os.WriteFile(suitePath, []byte(s), 0o644))
	}
	write("", "")
	r := resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
	assert.Equal(t, evals.StatusError, r.Status)
	want := "cassette " + cassettePath + ` has 2 recorded calls the agent never made (first: POST /v1/chat/completions #3 in lane "main/task:researcher", line ` + strconv.Itoa(c.Lines[2]) + ") — the agent's behaviour changed; re-record with DAGEVAL_RECORD=1"
	assert.Equal(t, want, r.Error)

	write("allow_unused: true\n", "")
	r = resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
	assert.Equal(t, evals.StatusPass, r.Status, r.Error)
	assert.Equal(t, []string{"unused_interactions: " + want + " (allowed by allow_unused)"}, r.Warnings)

	write("allow_unused: true\n", ", allow_unused: false")
	r = resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
	assert.Equal(t, evals.StatusError, r.Status, "the case's own setting wins")
}

// TestProviderStallIsAnError is observation 6 of issue 12: a provider that
// holds the call past limits.provider_timeout errors the cell (it says
// nothing about the agent), the error names the timeout that fired, and a
// recording keeps the previous cassette. The server holds each request
// until the client gives up.
func TestProviderStallIsAnError(t *testing.T) {
	suitePath, cassettePath, good := recordGood(t)
	for _, mode := range []string{"record", "live"} {
		t.Run(mode, func(t *testing.T) {
			srv := server(t, lookupThenAnswer())
			srv.FailOn(1, llmserver.Fault{Stall: true})
			limits := "limits: {timeout: 1h, provider_timeout: 20ms, provider_retries: 0}\n"
			require.NoError(t, os.WriteFile(suitePath, []byte(evidenceSuite(srv, "mode: "+mode+"\n"+limits, "")), 0o644))
			r := resultOf(t, runSuite(t, suitePath, evals.Options{}), "one")
			assert.Equal(t, evals.StatusError, r.Status, "a stalled provider is not the agent failing")
			assert.Equal(t, evals.CauseProviderStall, r.Cause)
			assert.True(t, strings.HasPrefix(r.Error, "provider stall: "), r.Error)
			assert.Contains(t, r.Error, "local: timeout: no answer within 20ms (the per-attempt provider timeout; attempt 1 of 1)")
			assert.Contains(t, r.Error, "limits.provider_timeout 20ms fired, not the agent's limits.timeout")
			if mode == "record" {
				assert.Contains(t, r.Error, "kept the previous cassette "+cassettePath+": a model call stalled")
			}
			assert.Equal(t, string(good), string(readFile(t, cassettePath)))
		})
	}
}

// TestSuiteProviderLimits checks the parsing of the provider limits.
func TestSuiteProviderLimits(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte("version: 1\nname: x\nmodels: [anthropic:claude-sonnet-4-6]\nagent: {name: a}\nlimits: {provider_timeout: 90s, provider_retries: 4}\ncases: [{id: a, input: hi}]\n"))
	require.NoError(t, err)
	assert.Equal(t, "1m30s", s.Limits.ProviderTimeout.String())
	require.NotNil(t, s.Limits.ProviderRetries)
	assert.Equal(t, 4, *s.Limits.ProviderRetries)
	for _, tt := range []struct{ limits, want string }{
		{"{provider_timeout: soon}", `suite.yaml:5:10: limits.provider_timeout: not a positive duration: "soon" (e.g. 90s; the default is 2m0s)`},
		{"{provider_retries: -1}", "limits.provider_retries: provider_retries must not be negative, got -1"},
	} {
		_, err := evals.Parse("suite.yaml", []byte("version: 1\nname: x\nmodels: [anthropic:claude-sonnet-4-6]\nagent: {name: a}\nlimits: "+tt.limits+"\ncases: [{id: a, input: hi}]\n"))
		assert.ErrorContains(t, err, tt.want)
	}
}

// TestGoTestHonoursDAGEVALRecord is observation 4 of issue 12 under go
// test: evals.Run records when DAGEVAL_RECORD says so, against the local
// server as the real provider, and replays the recording once it is unset.
func TestGoTestHonoursDAGEVALRecord(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("TEST_KEY", "test-key")
	srv := server(t, lookupThenAnswer())
	suitePath := writeSuite(t, map[string]string{"suite.yaml": evidenceSuite(srv, "", "")})
	cassettePath := filepath.Join(filepath.Dir(suitePath), "cassettes", "one--local-m--default--e1.yaml")

	t.Setenv("DAGEVAL_RECORD", "1")
	rr := evals.Run(t, suitePath)
	assert.Equal(t, "record", string(rr.Mode))
	assert.Equal(t, "DAGEVAL_RECORD=1", rr.ModeReason)
	assert.Len(t, srv.Requests(), 2)
	assert.FileExists(t, cassettePath)

	srv.Close()
	t.Setenv("DAGEVAL_RECORD", "")
	rr = evals.Run(t, suitePath)
	assert.Equal(t, "replay", string(rr.Mode))
	assert.Equal(t, 1, rr.Summary.Totals.Passed, "the recording replays offline")

	// missing records only what the cassettes lack.
	srv2 := server(t, &convModel{convs: map[string][]llm.Message{"second": {say("answer two")}}})
	two := strings.Replace(evidenceSuite(srv2, "", ""), "cases:\n", "cases:\n  - {id: two, input: second}\n", 1)
	require.NoError(t, os.WriteFile(suitePath, []byte(two), 0o644))
	t.Setenv("DAGEVAL_RECORD", "missing")
	rr = evals.Run(t, suitePath)
	assert.Equal(t, "record-missing", string(rr.Mode))
	assert.Equal(t, 2, rr.Summary.Totals.Passed)
	assert.Len(t, srv2.Requests(), 1, "only the new case reached the provider")
}
