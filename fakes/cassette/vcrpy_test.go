package cassette_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes/cassette"
)

const thirdParty = "../../cassettes/thirdparty/pydantic-ai"

func pydanticRecordings(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(thirdParty, "test_*", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 13)
	return files
}

// rawVCRPy is the part of a vcrpy file the tests compare against.
type rawVCRPy struct {
	Interactions []struct {
		Request struct {
			Headers map[string][]string `yaml:"headers"`
		} `yaml:"request"`
		Response struct {
			Headers map[string][]string `yaml:"headers"`
			Body    struct {
				String string `yaml:"string"`
			} `yaml:"body"`
			ParsedBody any `yaml:"parsed_body"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

func TestImportPydanticRecordings(t *testing.T) {
	for _, f := range pydanticRecordings(t) {
		rel, _ := filepath.Rel(thirdParty, f)
		t.Run(rel, func(t *testing.T) {
			// The copy in the repository is the published file, byte for byte.
			if orig, err := os.ReadFile(filepath.Join("/work/shared/testdata/recorded", rel)); err == nil {
				mine, _ := os.ReadFile(f)
				assert.Equal(t, string(orig), string(mine), "the third-party copy was edited")
			}
			c, err := cassette.ImportVCRPyFile(f)
			require.NoError(t, err)
			assert.Equal(t, cassette.MatchOrder, c.MatchMode())
			assert.Empty(t, cassette.Lint(c, cassette.LintOptions{}), "imported cassettes lint clean")
			assert.Empty(t, cassette.Lint(c, cassette.LintOptions{Match: cassette.MatchBody}), "and would in body mode too")

			data, err := c.Marshal()
			require.NoError(t, err)
			golden := filepath.Join(thirdParty, "imported", rel)
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run: dageval cassette import --from vcrpy %s -o %s", f, golden)
			assert.Equal(t, string(want), string(data), "import output changed; regenerate %s if intended", golden)

			// go-vcr loads the imported file as it is.
			gc, err := vcr.Load(strings.TrimSuffix(golden, ".yaml"))
			require.NoError(t, err)
			require.Len(t, gc.Interactions, len(c.Interactions))

			var raw rawVCRPy
			rawData, _ := os.ReadFile(f)
			require.NoError(t, yaml.Unmarshal(rawData, &raw))
			for i, it := range c.Interactions {
				assert.Equal(t, 200, it.Response.Code)
				assert.Equal(t, "200 OK", it.Response.Status)
				assert.NotContains(t, it.Request.Headers, "Content-Length")
				assert.Equal(t, int64(len(it.Request.Body)), it.Request.ContentLength)
				if s := raw.Interactions[i].Response.Body.String; s != "" {
					assert.Equal(t, s, it.Response.Body, "body.string is kept verbatim")
					if strings.HasPrefix(it.Response.Headers.Get("Content-Type"), "text/event-stream") {
						assert.Contains(t, it.Response.Body, "data: ")
					}
				} else {
					assert.True(t, json.Valid([]byte(it.Response.Body)), "parsed_body becomes JSON")
					// Anthropic sends compact JSON, so the re-serialised body has its original length.
					if cl := raw.Interactions[i].Response.Headers["content-length"]; len(cl) == 1 && strings.Contains(rel, "anthropic") {
						assert.Equal(t, cl[0], itoa(len(it.Response.Body)), "re-serialised length")
					}
				}
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestImportKeepsValuesFaithfully(t *testing.T) {
	load := func(rel string) *cassette.Cassette {
		c, err := cassette.ImportVCRPyFile(filepath.Join(thirdParty, rel))
		require.NoError(t, err)
		return c
	}
	c := load("test_anthropic/test_anthropic_tool_output.yaml")
	require.Len(t, c.Interactions, 2)
	assert.Contains(t, c.Interactions[0].Response.Body, `"content":[{"id":"toolu_01X9wcHKKAZD9tBC711xipPa","input":{},"name":"get_user_country","type":"tool_use"}]`)
	assert.Contains(t, c.Interactions[1].Response.Body, `"input":{"city":"Mexico City","country":"Mexico"}`)
	assert.Contains(t, c.Interactions[1].Request.Body, `{"content":"Mexico","is_error":false,"tool_use_id":"toolu_01X9wcHKKAZD9tBC711xipPa","type":"tool_result"}`)
	assert.Equal(t, "https://api.anthropic.com/v1/messages?beta=true", c.Interactions[0].Request.URL)
	assert.Equal(t, "api.anthropic.com", c.Interactions[0].Request.Host)

	c = load("test_openai/test_compatible_api_with_tool_calls_without_id.yaml")
	body := c.Interactions[0].Response.Body
	assert.Contains(t, body, `"tool_calls":[{"function":{"arguments":"{}","name":"get_current_time"},"id":"","type":"function"}]`, "strings that hold JSON stay strings; empty ids stay")
	assert.Contains(t, body, `"created":1748902365`)

	c = load("test_openai_responses/test_tool_output.yaml")
	assert.Contains(t, c.Interactions[0].Response.Body, `"temperature":1.0`, "numbers keep their text")
	assert.Contains(t, c.Interactions[0].Response.Body, `"description":null`)
	assert.Equal(t, []string{cassette.Redacted}, c.Interactions[1].Request.Headers.Values("Cookie"))
	assert.Equal(t, []string{cassette.Redacted}, c.Interactions[0].Response.Headers.Values("Openai-Organization"))

	c = load("test_openrouter/test_openrouter_tool_calling.yaml")
	assert.Contains(t, c.Interactions[0].Response.Body, `"arguments":"{\"numerator\": 123, \"denominator\": 456, \"on_inf\": \"infinity\"}"`)
	assert.Contains(t, c.Interactions[0].Request.Body, `"enum":["error","infinity"]`)

	c = load("test_anthropic/test_anthropic_model_instructions.yaml")
	assert.Contains(t, c.Interactions[0].Request.Body, `"system":"You are a helpful assistant.\n\n"`, "block scalars keep their newlines")
}

func TestImportGzip(t *testing.T) {
	src := filepath.Join(thirdParty, "test_openai/test_multiple_agent_tool_calls.yaml")
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	require.NoError(t, zw.Close())
	gz := filepath.Join(t.TempDir(), "test_multiple_agent_tool_calls.yaml.gz")
	require.NoError(t, os.WriteFile(gz, buf.Bytes(), 0o644))

	plain, err := cassette.ImportVCRPyFile(src)
	require.NoError(t, err)
	zipped, err := cassette.ImportVCRPyFile(gz)
	require.NoError(t, err)
	assert.Equal(t, plain.Interactions, zipped.Interactions)
	assert.Equal(t, "vcrpy: test_multiple_agent_tool_calls.yaml.gz", zipped.Meta.Source)

	probs, err := cassette.LintFile(gz, cassette.LintOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, probs, "lint reads .yaml.gz too, and finds the unredacted cookies")
}

func TestImportDecodesCompressedBinaryBodies(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`{"ok":true}`))
	_ = zw.Close()
	doc := `interactions:
- request:
    body: '{"q":1}'
    headers:
      Content-Type: [application/json]
      Authorization: [Bearer sk-live-abcdefghijklmnopqrstuvwx]
    method: post
    uri: https://api.example.com/v1/chat/completions?key=abc123secret
  response:
    body:
      string: !!binary |
        ` + base64.StdEncoding.EncodeToString(buf.Bytes()) + `
    headers:
      Content-Encoding: [gzip]
      Content-Type: [application/json]
      Content-Length: ['31']
    status: {code: 200, message: OK}
version: 1
`
	c, err := cassette.ImportVCRPy("inline.yaml", []byte(doc))
	require.NoError(t, err)
	it := c.Interactions[0]
	assert.Equal(t, `{"ok":true}`, it.Response.Body)
	assert.Empty(t, it.Response.Headers.Get("Content-Encoding"))
	assert.Empty(t, it.Response.Headers.Get("Content-Length"))
	assert.Equal(t, int64(11), it.Response.ContentLength)
	assert.Equal(t, "POST", it.Request.Method)
	assert.Equal(t, `{"q":1}`, it.Request.Body)
	assert.Equal(t, cassette.Redacted, it.Request.Headers.Get("Authorization"))
	assert.Equal(t, "https://api.example.com/v1/chat/completions?key=REDACTED", it.Request.URL)
	assert.Empty(t, cassette.Lint(c, cassette.LintOptions{}))
}

func TestImportErrorsNameFileAndLine(t *testing.T) {
	base := func(req, resp string) string {
		return "interactions:\n- request:\n" + req + "  response:\n" + resp + "version: 1\n"
	}
	okReq := "    method: POST\n    uri: https://api.example.com/v1/x\n"
	okResp := "    status: {code: 200, message: OK}\n    body: {string: 'x'}\n"
	tests := []struct {
		name, doc, want string
	}{
		{"not yaml", "interactions: [\n", "in.yaml:"},
		{"not a mapping", "- 1\n", "in.yaml:1: a vcrpy cassette is a mapping"},
		{"go-vcr file", "version: 2\ninteractions: []\n", "in.yaml:1: version: version 2 is a go-vcr cassette"},
		{"no interactions", "version: 1\n", "interactions: missing"},
		{"missing uri", base("    method: POST\n", okResp), "in.yaml:3: interactions[0].request.uri: missing"},
		{"relative uri", base("    method: POST\n    uri: /v1/x\n", okResp), `in.yaml:4: interactions[0].request.uri: "/v1/x" is not an absolute URL`},
		{"bad status", base(okReq, "    status: {code: 999}\n"), `interactions[0].response.status.code: "999" is not an HTTP status`},
		{"no status", base(okReq, "    body: {string: x}\n"), "interactions[0].response.status: missing"},
		{"both bodies", base(okReq+"    body: '{}'\n    parsed_body: {}\n", okResp), "interactions[0].request.parsed_body: both body and parsed_body are present"},
		{"infinite number", base(okReq+"    parsed_body: {t: .inf}\n", okResp), `in.yaml:5: interactions[0].request.parsed_body.t: ".inf" cannot be written as a JSON number`},
		{"headers not a mapping", base(okReq+"    headers: [a, b]\n", okResp), "interactions[0].request.headers: want a mapping"},
		{"unsupported encoding", base(okReq, "    status: {code: 200}\n    headers: {content-encoding: [br]}\n    body: {string: !!binary aGVsbG8=}\n"), `content-encoding "br" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cassette.ImportVCRPy("in.yaml", []byte(tt.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
