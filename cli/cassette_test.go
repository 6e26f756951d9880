package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const thirdParty = "../cassettes/thirdparty/pydantic-ai"

func runCLIEnv(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: getenv}
	code := runMain(t.Context(), e, args)
	return code, out.String(), errb.String()
}

func TestCassetteImportAndLintEveryRecording(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(thirdParty, "test_*", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 13)
	dir := t.TempDir()
	var outs []string
	for _, f := range files {
		out := filepath.Join(dir, filepath.Base(filepath.Dir(f)), filepath.Base(f))
		code, stdout, stderr := runCLI(t, "cassette", "import", "--from", "vcrpy", f, "-o", out)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stdout, "imported ")
		assert.Contains(t, stdout, "(match order)")
		want, err := os.ReadFile(filepath.Join(thirdParty, "imported", filepath.Base(filepath.Dir(f)), filepath.Base(f)))
		require.NoError(t, err)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "the CLI writes what the committed import holds")
		outs = append(outs, out)
	}
	code, stdout, stderr := runCLI(t, append([]string{"cassette", "lint"}, outs...)...)
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Equal(t, "13 files ok\n", stdout)

	// The raw vcrpy files still carry cookies and account ids.
	code, stdout, stderr = runCLI(t, "cassette", "lint", filepath.Join(thirdParty, "test_openai_responses", "test_tool_output.yaml"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "test_tool_output.yaml:136: interaction 1: secret: request header Cookie is not redacted")
	assert.Contains(t, stderr, "3 problems in 1 of 1 files")
}

func TestCassetteCommandErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(thirdParty, "test_openai", "test_text_response.yaml")
	broken := filepath.Join(dir, "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("interactions:\n- request: {method: POST}\n  response: {status: {code: 200}}\nversion: 1\n"), 0o644))
	goVCR := filepath.Join(thirdParty, "imported", "test_openai", "test_text_response.yaml")
	empty := filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(empty, []byte("---\nversion: 2\ninteractions: []\n"), 0o644))
	answer := func(code int, body string) string {
		return "    - id: 0\n      request:\n        body: '{\"n\":" + strconv.Itoa(code) + "}'\n        url: https://api.anthropic.com/v1/messages\n        method: POST\n      response:\n        body: '" + body + "'\n        code: " + strconv.Itoa(code) + "\n"
	}
	onlyErrors := filepath.Join(dir, "errors.yaml")
	require.NoError(t, os.WriteFile(onlyErrors, []byte("---\nversion: 2\ninteractions:\n"+answer(500, `{"error":"boom"}`)+answer(502, `{"error":"gateway"}`)), 0o644))
	someErrors := filepath.Join(dir, "some.yaml")
	require.NoError(t, os.WriteFile(someErrors, []byte("---\nversion: 2\ninteractions:\n"+answer(429, `{"error":"slow down"}`)+answer(200, `{"ok":true}`)), 0o644))
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"cassette alone lists subcommands", []string{"cassette"}, 2, nil, []string{"Subcommands:", "import", "lint"}},
		{"cassette --help", []string{"cassette", "--help"}, 0, []string{"Usage: dageval cassette <subcommand>"}, nil},
		{"help cassette", []string{"help", "cassette"}, 0, []string{"Subcommands:"}, nil},
		{"unknown subcommand", []string{"cassette", "rewind"}, 2, nil, []string{`unknown subcommand "rewind"`}},
		{"import --help", []string{"cassette", "import", "--help"}, 0, []string{"Usage: dageval cassette import --from vcrpy IN -o OUT", "parsed_body", "-match"}, nil},
		{"lint --help", []string{"cassette", "lint", "--help"}, 0, []string{"Usage: dageval cassette lint", "unreachable", "-ignore-field"}, nil},
		{"import without --from", []string{"cassette", "import", in, "-o", filepath.Join(dir, "x.yaml")}, 2, nil, []string{"--from is required"}},
		{"import from an unknown format", []string{"cassette", "import", "--from", "har", in, "-o", filepath.Join(dir, "x.yaml")}, 2, nil, []string{`--from "har" is not supported`}},
		{"import without -o", []string{"cassette", "import", "--from", "vcrpy", in}, 2, nil, []string{"-o OUT is required"}},
		{"import two inputs", []string{"cassette", "import", "--from", "vcrpy", in, in, "-o", filepath.Join(dir, "x.yaml")}, 2, nil, []string{"exactly one input"}},
		{"import a missing file", []string{"cassette", "import", "--from", "vcrpy", filepath.Join(dir, "nope.yaml"), "-o", filepath.Join(dir, "x.yaml")}, 2, nil, []string{"no such file"}},
		{"import a broken file", []string{"cassette", "import", "--from", "vcrpy", broken, "-o", filepath.Join(dir, "x.yaml")}, 2, nil, []string{"broken.yaml:2: interactions[0].request.uri: missing"}},
		{"import a go-vcr file", []string{"cassette", "import", "--from", "vcrpy", goVCR, "-o", filepath.Join(dir, "x.yaml")}, 2, nil, []string{"version 2 is a go-vcr cassette"}},
		{"import with a bad match", []string{"cassette", "import", "--from", "vcrpy", "--match", "fuzzy", in, "-o", filepath.Join(dir, "x.yaml")}, 2, nil, []string{"unknown match mode"}},
		{"lint nothing", []string{"cassette", "lint"}, 2, nil, []string{"no cassette files given"}},
		{"lint a missing file", []string{"cassette", "lint", filepath.Join(dir, "nope.yaml")}, 2, nil, []string{"no such file"}},
		{"lint a broken file", []string{"cassette", "lint", broken}, 1, []string{"broken.yaml:2: parse: interactions[0].request.uri: missing"}, nil},
		{"lint in body mode", []string{"cassette", "lint", "--match", "body", goVCR}, 0, []string{"1 files ok"}, nil},
		{"lint an empty cassette", []string{"cassette", "lint", empty}, 1, []string{"empty.yaml: empty: the cassette has no interactions"}, []string{"1 problems in 1 of 1 files"}},
		{"lint a cassette of error answers", []string{"cassette", "lint", onlyErrors}, 1, []string{"errors.yaml:4: interaction 0: error-answer (warning): the recorded answer is 500 Internal Server Error", "errors.yaml: empty: every interaction is an error answer"}, nil},
		{"lint warns on an error answer", []string{"cassette", "lint", someErrors}, 0, []string{"some.yaml:4: interaction 0: error-answer (warning): the recorded answer is 429 Too Many Requests", "1 files ok, 1 warnings"}, nil},
		{"lint with a bad flag", []string{"cassette", "lint", "--strict", goVCR}, 2, nil, []string{"unknown flag --strict", "dageval cassette lint --help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, s := range tt.stdout {
				assert.Contains(t, stdout, s)
			}
			for _, s := range tt.stderr {
				assert.Contains(t, stderr, s)
			}
		})
	}
	_, err := os.Stat(filepath.Join(dir, "x.yaml"))
	assert.True(t, os.IsNotExist(err), "failed imports write nothing")
}

func TestCassetteImportRefusesSecrets(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "leaky.yaml")
	require.NoError(t, os.WriteFile(in, []byte(`interactions:
- request:
    method: POST
    uri: https://api.openai.com/v1/chat/completions
    headers: {authorization: [Bearer sk-proj-live0123456789abcdefghijkl]}
    body: '{"messages":[{"role":"user","content":"my key is sk-proj-live0123456789abcdefghijkl"}]}'
  response:
    status: {code: 200, message: OK}
    body: {string: '{"note":"hello env-only-secret-42"}'}
version: 1
`), 0o644))
	out := filepath.Join(dir, "out.yaml")
	code, stdout, stderr := runCLIEnv(t, func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "env-only-secret-42"
		}
		return ""
	}, "cassette", "import", "--from", "vcrpy", in, "-o", out)
	assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "leaky.yaml:2: interaction 0: secret: request body contains what looks like an OpenAI-style API key")
	assert.Contains(t, stdout, "secret: response body contains the value of configured secret #1")
	assert.NotContains(t, stdout+stderr, "live0123456789", "the secret itself is never printed")
	assert.NotContains(t, stdout+stderr, "env-only-secret-42")
	assert.Contains(t, stderr, "refusing to write")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err))

	// Lint reads the raw file, so it also reports the authorization header
	// that import would have redacted.
	code, stdout, _ = runCLI(t, "cassette", "lint", in)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "request header Authorization is not redacted")
}

// TestCassetteImportAgreesWithLintAndShow: a vcrpy recording with a repeated
// request, an image download and a call on an API no adapter speaks
// imports with warnings that point into the written file; lint passes it,
// since order-only replay reaches both copies of the repeat; show lists the
// download as no model call and fails only on the unspoken API, naming it.
func TestCassetteImportAgreesWithLintAndShow(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.yaml")
	chat := `  - request:
      method: POST
      uri: https://api.openai.com/v1/chat/completions
      headers: {content-type: [application/json]}
      body: '{"messages":[{"role":"user","content":"ping"}],"model":"gpt-4o-mini"}'
    response:
      status: {code: 200, message: OK}
      headers: {content-type: [application/json]}
      body: {string: '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":1,"total_tokens":9}}'}
`
	require.NoError(t, os.WriteFile(in, []byte(`interactions:
  - request:
      method: GET
      uri: https://example.com/cat.png
      headers: {}
      body: null
    response:
      status: {code: 200, message: OK}
      headers: {content-type: [image/png]}
      body: {string: "png"}
`+chat+chat+`  - request:
      method: POST
      uri: https://api.cohere.com/v2/chat
      headers: {content-type: [application/json]}
      body: '{"messages":[{"role":"user","content":"ping"}],"model":"command-r"}'
    response:
      status: {code: 200, message: OK}
      headers: {content-type: [application/json]}
      body: {string: '{"id":"c1","message":{"role":"assistant","content":[{"type":"text","text":"pong"}]},"finish_reason":"COMPLETE"}'}
version: 1
`), 0o644))
	out := filepath.Join(dir, "out.yaml")
	code, stdout, stderr := runCLI(t, "cassette", "import", "--from", "vcrpy", in, "-o", out)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	written, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(string(written), "\n")
	lineOf := func(id int) int {
		for i, l := range lines {
			if strings.TrimSpace(l) == fmt.Sprintf("- id: %d", id) {
				return i + 1
			}
		}
		t.Fatalf("no interaction %d in %s", id, out)
		return 0
	}
	assert.Contains(t, stderr, fmt.Sprintf("warning: %s:%d: interaction 0: GET /cat.png: not a model call", out, lineOf(0)))
	assert.Contains(t, stderr, fmt.Sprintf("warning: %s:%d: interaction 3: POST /v2/chat: a model call on an API no adapter speaks", out, lineOf(3)))
	assert.NotContains(t, stderr, "interaction 1:")
	assert.NotContains(t, stderr, "duplicate")

	code, stdout, stderr = runCLI(t, "cassette", "lint", out)
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Equal(t, "1 files ok\n", stdout)

	code, stdout, stderr = runCLI(t, "cassette", "show", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "outcome      not a model call")
	assert.Contains(t, stderr, "1 of 4 interactions cannot be replayed through an adapter")
	assert.Contains(t, stderr, "interaction 3 (POST https://api.cohere.com/v2/chat): a model call on an API no adapter speaks")
	assert.NotContains(t, stderr, "interaction 0")
}
