package cassette_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes/cassette"
)

// ix builds an interaction for lint tests.
type ix struct {
	lane, method, url, reqBody string
	reqHeader                  http.Header
	code                       int
	respBody, respType         string
	respHeader                 http.Header
}

func (x ix) interaction() *vcr.Interaction {
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range x.reqHeader {
		h[k] = v
	}
	if x.lane != "" {
		h.Set(cassette.LaneHeader, x.lane)
	}
	rh := http.Header{"Content-Type": {"application/json"}}
	if x.respType != "" {
		rh.Set("Content-Type", x.respType)
	}
	for k, v := range x.respHeader {
		rh[k] = v
	}
	if x.method == "" {
		x.method = "POST"
	}
	if x.url == "" {
		x.url = "https://api.anthropic.com/v1/messages"
	}
	if x.code == 0 {
		x.code = 200
	}
	if x.respBody == "" {
		x.respBody = `{"ok":true}`
	}
	return &vcr.Interaction{
		Request:  vcr.Request{Method: x.method, URL: x.url, Body: x.reqBody, Headers: h},
		Response: vcr.Response{Code: x.code, Body: x.respBody, Headers: rh},
	}
}

func lint(opts cassette.LintOptions, match cassette.Match, xs ...ix) []string {
	c := &cassette.Cassette{Version: 2, Path: "c.yaml"}
	if match != "" {
		c.Meta = &cassette.Meta{Match: match}
	}
	for _, x := range xs {
		c.Interactions = append(c.Interactions, x.interaction())
	}
	var out []string
	for _, p := range cassette.Lint(c, opts) {
		out = append(out, p.String())
	}
	return out
}

func TestLintChecks(t *testing.T) {
	turn := func(s string) string { return `{"messages":[{"role":"user","content":"` + s + `"}]}` }
	tests := []struct {
		name  string
		opts  cassette.LintOptions
		match cassette.Match
		xs    []ix
		want  []string // substrings, one per expected problem, in order
	}{
		{name: "clean", xs: []ix{{reqBody: turn("a")}, {reqBody: turn("b")}}},
		{name: "unredacted authorization", xs: []ix{{reqBody: turn("a"), reqHeader: http.Header{"Authorization": {"Bearer abcdefghijklmnop"}}}},
			want: []string{"c.yaml: interaction 0: secret: request header Authorization is not redacted (REDACTED expected)"}},
		{name: "redaction markers are fine", xs: []ix{{reqBody: turn("a"), reqHeader: http.Header{"Authorization": {"Bearer REDACTED"}, "X-Api-Key": {"***"}, "Api-Key": {"<redacted>"}, "Cookie": {""}}}}},
		{name: "set-cookie in a response", xs: []ix{{reqBody: turn("a"), respHeader: http.Header{"Set-Cookie": {"sid=1234567890"}}}},
			want: []string{"secret: response header Set-Cookie is not redacted"}},
		{name: "key-shaped strings", xs: []ix{{reqBody: turn("use sk-ant-api03-abcdefghijklmnopqrstuv please"), respBody: `{"k":"AIzaSyA1234567890abcdefghijklmnopqrstuv"}`}},
			want: []string{"secret: request body contains what looks like an Anthropic API key", "secret: response body contains what looks like a Google API key"}},
		{name: "key-shaped text inside a word is not a key", xs: []ix{{reqBody: turn("the task-sk-abcdefghijklmnopqrstuvwxyz0123 id")}}},
		{name: "configured secret", opts: cassette.LintOptions{Secrets: []string{"hunter2-but-longer"}}, xs: []ix{{reqBody: turn("a"), respBody: `{"echo":"hunter2-but-longer"}`}},
			want: []string{"secret: response body contains the value of configured secret #1 (18 characters)"}},
		{name: "short secrets are not searched", opts: cassette.LintOptions{Secrets: []string{"ollama"}}, xs: []ix{{reqBody: turn("ollama")}}},
		{name: "credential in the query", xs: []ix{{url: "https://g.example.com/v1/x?key=abcdef123456", reqBody: turn("a")}},
			want: []string{"secret: request url query parameter key is not redacted"}},
		{name: "duplicate", xs: []ix{{reqBody: turn("a")}, {reqBody: turn("b")}, {reqBody: turn("a")}},
			want: []string{"interaction 2: duplicate: repeats interaction 0 exactly"}},
		{name: "order mode: a repeated request is genuine", match: cassette.MatchOrder, xs: []ix{{reqBody: turn("a")}, {reqBody: turn("a")}}},
		{name: "duplicate ignores key order", xs: []ix{{reqBody: `{"a":1,"b":2}`}, {reqBody: `{"b":2, "a":1}`}},
			want: []string{"interaction 1: duplicate: repeats interaction 0"}},
		{name: "unreachable after a success", xs: []ix{{reqBody: turn("a"), respBody: `{"n":1}`}, {reqBody: turn("a"), respBody: `{"n":2}`}},
			want: []string{`interaction 1: unreachable: interaction 0 answers the same request (POST /v1/messages, lane "") first with status 200`}},
		{name: "a retry after a failure is reachable", xs: []ix{{reqBody: turn("a"), code: 529, respBody: `{"error":"overloaded"}`}, {reqBody: turn("a"), respBody: `{"n":2}`}},
			want: []string{"interaction 0: error-answer (warning): the recorded answer is 529;"}},
		{name: "no interactions", want: []string{"c.yaml: empty: the cassette has no interactions"}},
		{name: "only error answers", xs: []ix{{reqBody: turn("a"), code: 500, respBody: `{"error":"boom"}`}, {reqBody: turn("b"), code: 429, respBody: `{"error":"slow down"}`}},
			want: []string{"interaction 0: error-answer (warning)", "interaction 1: error-answer (warning): the recorded answer is 429 Too Many Requests", "c.yaml: empty: every interaction is an error answer"}},
		{name: "same request in another lane is reachable", xs: []ix{{lane: "main/task:a", reqBody: turn("a"), respBody: `{"n":1}`}, {lane: "main/task:b", reqBody: turn("a"), respBody: `{"n":2}`}}},
		{name: "an unlaned interaction shadows every lane", xs: []ix{{reqBody: turn("a"), respBody: `{"n":1}`}, {lane: "main", reqBody: turn("a"), respBody: `{"n":2}`}},
			want: []string{"interaction 1: unreachable"}},
		{name: "different query is a different request", xs: []ix{{url: "https://x.test/v1/messages?beta=true", reqBody: turn("a"), respBody: `{"n":1}`}, {url: "https://x.test/v1/messages", reqBody: turn("a"), respBody: `{"n":2}`}}},
		{name: "order mode: nothing is unreachable", match: cassette.MatchOrder, xs: []ix{{reqBody: turn("a"), respBody: `{"n":1}`}, {reqBody: turn("a"), respBody: `{"n":2}`}}},
		{name: "an ignore path that hides the turn", opts: cassette.LintOptions{IgnoreFields: []string{"messages"}}, xs: []ix{{reqBody: turn("a"), respBody: `{"n":1}`}, {reqBody: turn("b"), respBody: `{"n":2}`}},
			want: []string{"interaction 1: unreachable"}},
		{name: "invalid JSON bodies", xs: []ix{{reqBody: `{"a":`, respBody: `not json`}},
			want: []string{"parse: request body is not valid JSON though its content type is application/json", "parse: response body is not valid JSON"}},
		{name: "broken event stream", xs: []ix{{reqBody: turn("a"), respType: "text/event-stream", respBody: "event: a\ndata: {\"ok\":1}\n\ndata: {\"cut\n\ndata: [DONE]\n\n"}},
			want: []string{"parse: response event stream line 4: data is not valid JSON"}},
		{name: "unparseable url", xs: []ix{{url: "http://[::1", reqBody: turn("a")}},
			want: []string{"parse: request url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lint(tt.opts, tt.match, tt.xs...)
			require.Len(t, got, len(tt.want), "problems: %q", got)
			for i, w := range tt.want {
				assert.Contains(t, got[i], w)
			}
		})
	}
}

func TestLintFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}

	p := write("broken.yaml", "---\nversion: 2\ninteractions:\n  - request: [\n")
	probs, err := cassette.LintFile(p, cassette.LintOptions{})
	require.NoError(t, err)
	require.Len(t, probs, 1)
	assert.Equal(t, cassette.CheckParse, probs[0].Check)
	assert.Equal(t, p, probs[0].File)
	assert.Positive(t, probs[0].Line)

	p = write("typo.yaml", "---\nversion: 2\ninteractions:\n    - id: 0\n      request: {method: POST, url: 'https://x.test/a'}\n      respons: {code: 200}\n")
	probs, err = cassette.LintFile(p, cassette.LintOptions{})
	require.NoError(t, err)
	require.Len(t, probs, 1)
	assert.Contains(t, probs[0].String(), "typo.yaml:6: parse:")
	assert.Contains(t, probs[0].String(), "respons")

	_, err = cassette.LintFile(filepath.Join(dir, "absent.yaml"), cassette.LintOptions{})
	assert.ErrorIs(t, err, os.ErrNotExist)

	// A raw vcrpy file is linted as it is: pydantic-ai removed the auth
	// headers but left Cloudflare cookies and OpenAI account ids.
	probs, err = cassette.LintFile(filepath.Join(thirdParty, "test_openai/test_openai_tool_output.yaml"), cassette.LintOptions{})
	require.NoError(t, err)
	var lines []string
	for _, p := range probs {
		lines = append(lines, p.String())
	}
	assert.Equal(t, []string{
		"../../cassettes/thirdparty/pydantic-ai/test_openai/test_openai_tool_output.yaml:2: interaction 0: secret: response header Openai-Organization is not redacted (REDACTED expected)",
		"../../cassettes/thirdparty/pydantic-ai/test_openai/test_openai_tool_output.yaml:108: interaction 1: secret: request header Cookie is not redacted (REDACTED expected)",
		"../../cassettes/thirdparty/pydantic-ai/test_openai/test_openai_tool_output.yaml:108: interaction 1: secret: response header Openai-Organization is not redacted (REDACTED expected)",
	}, lines)

	// Every imported recording is clean, including against the keys in the environment.
	imported, _ := filepath.Glob(filepath.Join(thirdParty, "imported", "*", "*.yaml"))
	require.Len(t, imported, 13)
	for _, f := range imported {
		probs, err := cassette.LintFile(f, cassette.LintOptions{Secrets: cassette.EnvSecrets(os.Getenv)})
		require.NoError(t, err)
		assert.Empty(t, probs, f)
	}
	assert.True(t, strings.HasSuffix(imported[0], ".yaml"))
}
