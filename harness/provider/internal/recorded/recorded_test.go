package recorded_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/provider/internal/recorded"
)

func TestEveryRecordingLoads(t *testing.T) {
	want := map[string]int{
		"test_anthropic/test_anthropic_model_instructions.yaml":                                 1,
		"test_anthropic/test_anthropic_model_thinking_part_stream.yaml":                         1,
		"test_anthropic/test_anthropic_prompted_output.yaml":                                    2,
		"test_anthropic/test_anthropic_tool_output.yaml":                                        2,
		"test_anthropic/test_multiple_parallel_tool_calls.yaml":                                 2,
		"test_openai/test_compatible_api_with_tool_calls_without_id.yaml":                       2,
		"test_openai/test_multiple_agent_tool_calls.yaml":                                       4,
		"test_openai/test_openai_tool_output.yaml":                                              2,
		"test_openai/test_run_stream_sync_streams_real_model.yaml":                              2,
		"test_openai/test_text_response.yaml":                                                   1,
		"test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml": 2,
		"test_openai_responses/test_tool_output.yaml":                                           2,
		"test_openrouter/test_openrouter_tool_calling.yaml":                                     1,
	}
	files := recorded.Files()
	assert.Len(t, files, len(want))
	for _, name := range files {
		c, err := recorded.Load(name)
		require.NoError(t, err, name)
		assert.Len(t, c.Interactions, want[name], name)
		for i, in := range c.Interactions {
			assert.Equal(t, "POST", in.Method, "%s #%d", name, i)
			assert.Equal(t, 200, in.Status, "%s #%d", name, i)
			assert.True(t, json.Valid(in.RequestBody), "%s #%d request", name, i)
			if !in.Streamed() && name != "test_openai/test_text_response.yaml" {
				assert.Equal(t, "application/json", in.Header.Get("Content-Type")[:16], "%s #%d", name, i)
				assert.True(t, json.Valid(in.Body), "%s #%d response", name, i)
			}
		}
	}
}
