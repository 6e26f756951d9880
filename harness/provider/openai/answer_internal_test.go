package openai

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/harness/provider/internal/recorded"
)

// Decoding only the members fromResponse reads gives what decoding the
// whole answer gives, for every recorded Responses answer and for answers
// shaped to trip a member splitter.
func TestTrimmedAnswerDecodesAsTheWholeAnswer(t *testing.T) {
	var bodies [][]byte
	for _, name := range recorded.Files() {
		c := recorded.MustLoad(t, name)
		for _, it := range c.Interactions {
			if it.URL.Path == "/v1/responses" && !it.Streamed() && it.Status == 200 {
				bodies = append(bodies, it.Body)
			}
		}
	}
	require.NotEmpty(t, bodies, "no recorded Responses answers")
	bodies = append(bodies,
		[]byte(` {"id":"r","tools":[{"type":"function","name":"f","parameters":{"properties":{"a}":{"type":"string","description":"\"{[\\"}}}}],`+
			`"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","id":"m","role":"assistant","status":"completed",`+
			`"content":[{"type":"output_text","text":"}] \"quoted\" {","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":4},"model":"gpt-x"} `),
		[]byte(`{"model":"first","output":[],"model":"second","status":"completed","usage":null,"error":null}`),
		[]byte(`{"mod\u0065l":"escaped","status":"completed","output":[]}`),
		[]byte(`{"status":5,"model":true,"output":{"not":"a list"},"usage":"none"}`),
	)
	m := model(t, "openai", true)
	for _, body := range bodies {
		var whole responses.Response
		require.NoError(t, json.Unmarshal(body, &whole))
		trimmed, err := decodeResponse(bytes.Trim(body, " "))
		require.NoError(t, err)
		want, wantErr := m.fromResponse(&whole)
		got, gotErr := m.fromResponse(trimmed)
		assert.Equal(t, wantErr, gotErr, "%s", body)
		assert.Equal(t, want, got, "%s", body)
	}
}

func TestTrimObject(t *testing.T) {
	keep := [][]byte{[]byte("a"), []byte("b")}
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"x":{"a":[2,{"b":3}]},"b":"}"}`, `{"a":1,"b":"}"}`},
		{` { "b" : [ 1 , 2 ] , "a" : "x\"y" } `, `{"a":"x\"y","b":[ 1 , 2 ]}`},
		{`{"a":1,"a":2}`, `{"a":1}`},
		{`{}`, `{}`},
		{`{"x":true}`, `{}`},
	} {
		got, ok := trimObject([]byte(tc.in), keep)
		assert.True(t, ok, tc.in)
		assert.Equal(t, tc.want, string(got), tc.in)
	}
	for _, in := range []string{`[]`, `"a"`, `null`, `{"\u0061":1}`} {
		_, ok := trimObject([]byte(in), keep)
		assert.False(t, ok, in)
	}
}
