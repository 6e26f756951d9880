package llmserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatBodies is a conversation of n turns of tool calls as a client sends
// it, one body per call, each resending the history.
func chatBodies(n int) [][]byte {
	msgs := []string{`{"role":"system","content":"Be brief."}`, `{"role":"user","content":"Go."}`}
	var out [][]byte
	for i := range n {
		out = append(out, []byte(`{"model":"m","messages":[`+strings.Join(msgs, ",")+`]}`))
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":"Step %d.","tool_calls":[{"id":"c%d","type":"function","function":{"name":"f","arguments":"{\"i\":%d}"}}]}`, i, i, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"c%d","content":"done %d"}`, i, i))
	}
	return out
}

// appendMessage returns a chat body with msg after its last message.
func appendMessage(body []byte, msg string) []byte {
	return []byte(strings.TrimSuffix(string(body), "]}") + "," + msg + "]}")
}

// A request resumed from an earlier one's conversion decodes as it does
// alone; one that only shares part of the history, or leaves a call
// unanswered, too.
func TestChatResumeDecodesAsAlone(t *testing.T) {
	bodies := chatBodies(6)
	// A branch: the history edited at its fourth message.
	bodies = append(bodies, []byte(strings.Replace(string(bodies[4]), `"Step 1."`, `"Step one."`, 1)))
	// A call left unanswered, after a resumable history.
	bodies = append(bodies, appendMessage(bodies[5], `{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]}`), bodies[5])
	// A call answered in the next request.
	open := appendMessage(bodies[5], `{"role":"assistant","tool_calls":[{"id":"y","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	bodies = append(bodies, open, appendMessage(open, `{"role":"tool","tool_call_id":"y","content":"ok"}`))
	for i, body := range bodies {
		var call ServedCall
		resumed, _, resumedErr := chatAPI{}.decode(body, &call)
		saved := chatResumes.kept
		chatResumes.kept = nil
		alone, _, aloneErr := chatAPI{}.decode(body, &call)
		chatResumes.kept = saved
		require.Equal(t, aloneErr, resumedErr, "body %d", i)
		assert.Equal(t, alone, resumed, "body %d", i)
	}
	assert.NotEmpty(t, chatResumes.kept)
}

// antBodies is chatBodies for the Messages API, with a cache marker on the
// latest message of each request, as prompt caching puts it.
func antBodies(n int) [][]byte {
	mark := `,"cache_control":{"type":"ephemeral"}`
	msgs := []string{`{"role":"user","content":[{"type":"text","text":"Go."%s}]}`}
	var out [][]byte
	for i := range n {
		var parts []string
		for k, m := range msgs {
			if k == len(msgs)-1 {
				parts = append(parts, fmt.Sprintf(m, mark))
			} else {
				parts = append(parts, fmt.Sprintf(m, ""))
			}
		}
		out = append(out, []byte(`{"model":"m","max_tokens":10,"messages":[`+strings.Join(parts, ",")+`]}`))
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"Step %d."},{"type":"tool_use","id":"c%d","name":"f","input":{"i":%d}%%s}]}`, i, i, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c%d","content":"done %d"%%s}]}`, i, i))
	}
	return out
}

func TestAnthropicResumeDecodesAsAlone(t *testing.T) {
	bodies := antBodies(6)
	bodies = append(bodies, []byte(strings.Replace(string(bodies[4]), `"Step 1."`, `"Step one."`, 1)), bodies[5])
	for i, body := range bodies {
		var call ServedCall
		resumed, _, resumedErr := anthropicAPI{}.decode(body, &call)
		saved := antResumes.kept
		antResumes.kept = nil
		alone, _, aloneErr := anthropicAPI{}.decode(body, &call)
		antResumes.kept = saved
		require.Equal(t, aloneErr, resumedErr, "body %d", i)
		require.Nil(t, aloneErr, "body %d", i)
		assert.Equal(t, alone, resumed, "body %d", i)
	}
	if k, _, ok := antResumes.find([]json.RawMessage{}); ok || k != 0 {
		t.Fatal("an empty conversation resumes nothing")
	}
}

// respBodies is chatBodies for the Responses API; instructions vary.
func respBodies(n int) [][]byte {
	items := []string{`{"role":"system","content":"Lead."}`, `{"role":"user","content":"Go."}`}
	var out [][]byte
	for i := range n {
		out = append(out, []byte(fmt.Sprintf(`{"model":"m","instructions":"Be brief %d.","input":[`, i%2)+strings.Join(items, ",")+`]}`))
		items = append(items,
			fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Step %d."}]}`, i),
			fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"f","arguments":"{\"i\":%d}"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":"done %d"}`, i, i))
	}
	return out
}

func TestResponsesResumeDecodesAsAlone(t *testing.T) {
	bodies := respBodies(6)
	bodies = append(bodies, []byte(strings.Replace(string(bodies[4]), `"Step 1."`, `"Step one."`, 1)), bodies[5])
	for i, body := range bodies {
		var call ServedCall
		resumed, _, resumedErr := responsesAPI{}.decode(body, &call)
		saved := respResumes.kept
		respResumes.kept = nil
		alone, _, aloneErr := responsesAPI{}.decode(body, &call)
		respResumes.kept = saved
		require.Equal(t, aloneErr, resumedErr, "body %d", i)
		require.Nil(t, aloneErr, "body %d", i)
		assert.Equal(t, alone, resumed, "body %d", i)
	}
	assert.NotEmpty(t, respResumes.kept)
}
