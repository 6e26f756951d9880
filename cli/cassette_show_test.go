package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func imported(name string) string {
	return filepath.Join(thirdParty, "imported", filepath.FromSlash(name))
}

// TestCassetteShowGoldens pins show's output for recordings of each API:
// tool calls (parallel, structured output, an id the server left out),
// streams with and without thinking, and answers no adapter can read.
func TestCassetteShowGoldens(t *testing.T) {
	for _, tt := range []struct {
		name string
		code int
	}{
		{"test_anthropic/test_anthropic_tool_output.yaml", 0},
		{"test_anthropic/test_multiple_parallel_tool_calls.yaml", 0},
		{"test_anthropic/test_anthropic_model_thinking_part_stream.yaml", 0},
		{"test_openai/test_openai_tool_output.yaml", 0},
		{"test_openai/test_compatible_api_with_tool_calls_without_id.yaml", 0},
		{"test_openai/test_run_stream_sync_streams_real_model.yaml", 0},
		{"test_openai/test_multiple_agent_tool_calls.yaml", 0}, // Gemini's native API, then Chat Completions
		{"test_openai_responses/test_tool_output.yaml", 0},
		{"test_openrouter/test_openrouter_tool_calling.yaml", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, format := range []string{"text", "json"} {
				code, stdout, stderr := runCLI(t, "cassette", "show", "--format", format, imported(tt.name))
				require.Equal(t, tt.code, code, "stderr:\n%s", stderr)
				snaps.MatchSnapshot(t, stdout)
				again, repeat, _ := runCLI(t, "cassette", "show", "--format", format, imported(tt.name))
				assert.Equal(t, code, again)
				assert.Equal(t, stdout, repeat, "output is deterministic")
			}
		})
	}
}

type shown struct {
	Match        string `json:"match"`
	Interactions []struct {
		Index    int    `json:"index"`
		URL      string `json:"url"`
		Status   int    `json:"status"`
		Streamed bool   `json:"streamed"`
		API      string `json:"api"`
		Error    string `json:"error"`
		Response *struct {
			Model      string `json:"model"`
			StopReason string `json:"stop_reason"`
			Text       string `json:"text"`
			ToolCalls  []struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"tool_calls"`
			Usage map[string]int `json:"usage"`
		} `json:"response"`
	} `json:"interactions"`
}

func showJSON(t *testing.T, path string) shown {
	t.Helper()
	code, stdout, stderr := runCLI(t, "cassette", "show", "--format", "json", path)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	var s shown
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	return s
}

func usage(in, out int) map[string]int {
	return map[string]int{"input_tokens": in, "output_tokens": out, "cache_read_tokens": 0, "cache_write_tokens": 0}
}

// TestCassetteShowReadsTheRecordings checks the facts the JSON output
// carries for the recordings the agent-loop tests replay.
func TestCassetteShowReadsTheRecordings(t *testing.T) {
	a := showJSON(t, imported("test_anthropic/test_anthropic_tool_output.yaml"))
	assert.Equal(t, "order", a.Match)
	require.Len(t, a.Interactions, 2)
	first, second := a.Interactions[0], a.Interactions[1]
	assert.Equal(t, "anthropic-messages", first.API)
	assert.Equal(t, "get_user_country", first.Response.ToolCalls[0].Name)
	assert.Equal(t, "toolu_01X9wcHKKAZD9tBC711xipPa", first.Response.ToolCalls[0].ID)
	assert.Equal(t, usage(445, 23), first.Response.Usage)
	assert.Equal(t, "final_result", second.Response.ToolCalls[0].Name)
	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(second.Response.ToolCalls[0].Args))
	assert.Equal(t, usage(497, 56), second.Response.Usage)

	o := showJSON(t, imported("test_openai/test_openai_tool_output.yaml"))
	require.Len(t, o.Interactions, 2)
	assert.Equal(t, "openai-chat-completions", o.Interactions[0].API)
	assert.Equal(t, "call_iXFttys57ap0o16JSlC8yhYo", o.Interactions[0].Response.ToolCalls[0].ID)
	assert.Equal(t, usage(68, 12), o.Interactions[0].Response.Usage)
	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(o.Interactions[1].Response.ToolCalls[0].Args))
	assert.Equal(t, usage(89, 36), o.Interactions[1].Response.Usage)

	g := showJSON(t, imported("test_openai/test_compatible_api_with_tool_calls_without_id.yaml"))
	assert.Regexp(t, `^call_[0-9a-f]{24}$`, g.Interactions[0].Response.ToolCalls[0].ID, "Gemini sent no id; show prints the derived one")
	assert.Equal(t, "get_current_time", g.Interactions[0].Response.ToolCalls[0].Name)
	assert.Equal(t, "The current time is Noon.", g.Interactions[1].Response.Text)

	r := showJSON(t, imported("test_openrouter/test_openrouter_tool_calling.yaml"))
	call := r.Interactions[0].Response.ToolCalls[0]
	assert.Equal(t, "3sniiMddS", call.ID)
	assert.Equal(t, "divide", call.Name)
	assert.JSONEq(t, `{"numerator":123,"denominator":456,"on_inf":"infinity"}`, string(call.Args))
	assert.Equal(t, usage(134, 43), r.Interactions[0].Response.Usage)

	s := showJSON(t, imported("test_openai/test_run_stream_sync_streams_real_model.yaml"))
	assert.True(t, s.Interactions[0].Streamed)
	assert.Equal(t, "The capital of the UK is London.", s.Interactions[1].Response.Text)

	resp := showJSON(t, imported("test_openai_responses/test_tool_output.yaml"))
	assert.Equal(t, "openai-responses", resp.Interactions[0].API)
	assert.Equal(t, usage(62, 12), resp.Interactions[0].Response.Usage)
}

// TestCassetteShowEveryRecording: every imported recording shows; only the
// demo endpoint's echo exits 1.
func TestCassetteShowEveryRecording(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(thirdParty, "imported", "*", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 13)
	undecodable := map[string]string{
		"test_text_response.yaml": "1 of 1 interactions",
	}
	for _, f := range files {
		code, stdout, stderr := runCLI(t, "cassette", "show", f)
		if want, ok := undecodable[filepath.Base(f)]; ok {
			assert.Equal(t, 1, code, f)
			assert.Contains(t, stderr, want, f)
		} else {
			assert.Equal(t, 0, code, "%s: %s", f, stderr)
			assert.NotContains(t, stdout, "    error", "%s decodes", f)
		}
	}
}

func TestCassetteShowErrors(t *testing.T) {
	dir := t.TempDir()
	recorded := filepath.Join(dir, "failed.yaml")
	require.NoError(t, os.WriteFile(recorded, []byte(`---
version: 2
interactions:
  - id: 0
    request:
      method: POST
      url: https://api.openai.com/v1/chat/completions?api-key=not-a-real-key
      body: '{"messages":[{"role":"user","content":"hi"}]}'
    response:
      headers:
        Content-Type: [application/json]
      body: '{"error":{"message":"The server is overloaded","type":"server_error"}}'
      code: 503
`), 0o644))
	vcrpy := filepath.Join(thirdParty, "test_openai", "test_text_response.yaml")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"help", []string{"cassette", "show", "--help"}, 0, []string{"Usage: dageval cassette show [--format text|json] FILE", "/chat/completions", "-format"}, nil},
		{"listed", []string{"cassette"}, 2, nil, []string{"show"}},
		{"no file", []string{"cassette", "show"}, 2, nil, []string{"want exactly one cassette file, got 0"}},
		{"two files", []string{"cassette", "show", recorded, recorded}, 2, nil, []string{"got 2"}},
		{"bad format", []string{"cassette", "show", "--format", "yaml", recorded}, 2, nil, []string{`--format "yaml": want text or json`}},
		{"missing file", []string{"cassette", "show", filepath.Join(dir, "nope.yaml")}, 2, nil, []string{"no such file"}},
		{"a vcrpy file", []string{"cassette", "show", vcrpy}, 2, nil, []string{"import it with `dageval cassette import --from vcrpy`"}},
		{"a recorded failure is shown, not an error", []string{"cassette", "show", recorded}, 0, []string{
			"[0] POST https://api.openai.com/v1/chat/completions?api-key=REDACTED",
			"status       503",
			"error        openai-compatible: overloaded (HTTP 503, server_error): The server is overloaded",
		}, nil},
		{"flags after the file", []string{"cassette", "show", recorded, "--format", "json"}, 0, []string{`"status": 503`, `"error": "openai-compatible: overloaded`}, nil},
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
			assert.False(t, strings.Contains(stdout+stderr, "not-a-real-key"), "credentials in URLs are redacted")
		})
	}
}

// TestCassetteShowWireQuirks pins show's output for the reproduced wire
// quirks: a stream that never carries finish_reason (decoded, with a
// warning), one without usage (usage unknown), error events inside 200
// streams (recorded provider errors, exit 0) and traffic that is no model
// call (listed as such, exit 0).
func TestCassetteShowWireQuirks(t *testing.T) {
	for _, name := range []string{
		"openrouter-no-finish-reason.yaml",
		"chat-stream-without-usage.yaml",
		"stream-error-events.yaml",
		"not-model-calls.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			for _, format := range []string{"text", "json"} {
				code, stdout, stderr := runCLI(t, "cassette", "show", "--format", format, filepath.Join("..", "cassettes", "quirks", name))
				require.Equal(t, 0, code, "stderr:\n%s", stderr)
				snaps.MatchSnapshot(t, stdout)
			}
		})
	}
}

// TestCassetteShowGeminiGolden pins show's output for Gemini's native API
// as other projects recorded it: a thinking tool loop streamed as JSON
// arrays (llm-gemini) and an event stream (crewAI).
func TestCassetteShowGeminiGolden(t *testing.T) {
	for _, name := range []string{
		"llm-gemini/imported/test_gemini/test_tools.yaml",
		"crewai/imported/llms/google/test_google_async_streaming_returns_usage_metrics.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "cassettes", "thirdparty", filepath.FromSlash(name))
			for _, format := range []string{"text", "json"} {
				code, stdout, stderr := runCLI(t, "cassette", "show", "--format", format, path)
				require.Equal(t, 0, code, "stderr:\n%s", stderr)
				snaps.MatchSnapshot(t, stdout)
			}
		})
	}
}
