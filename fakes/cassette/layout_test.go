package cassette_test

import (
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes/cassette"
)

func interaction(reqBody, respBody string) *vcr.Interaction {
	return &vcr.Interaction{
		Request:  vcr.Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages", Body: reqBody},
		Response: vcr.Response{Code: 200, Body: respBody},
	}
}

// Written cassettes store compact JSON bodies indented, a field a line, and
// read back the exact bytes; streams, text and JSON in a layout of its own
// are kept as they were. A body a server sent indented exactly so reads
// back compact: the same JSON, which is what replay and matching use.
func TestLayoutRoundTrip(t *testing.T) {
	bodies := []string{
		`{"model":"claude-sonnet-4-6","system":[{"type":"text","text":"Be brief.\nUse tools."}],"messages":[{"role":"user","content":"Hi \u003cthere\u003e"}],"n":1.50,"e":[]}`,
		"{\n  \"id\": \"resp_1\",\n  \"object\": \"response\"\n}", // indented by the server
		"{\"a\": 1}", // JSON with spaces of its own
		"event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {}\n\n", // a stream
		"plain text  \nwith trailing spaces",
		`"a JSON string"`,
		"",
		"[1,2,3]",
	}
	c := &cassette.Cassette{Version: 2}
	for _, b := range bodies {
		c.Interactions = append(c.Interactions, interaction(b, b))
	}
	data, err := c.Marshal()
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "dageval:\n  json_bodies: indented\n")
	assert.Contains(t, text, "      body: |-\n        {\n          \"model\": \"claude-sonnet-4-6\",\n          \"system\": [\n")
	assert.Contains(t, text, "event: message_start\n        data: {\"type\":\"message_start\"}\n", "streams stay as they were sent")

	back, err := cassette.Parse("c.yaml", data)
	require.NoError(t, err)
	require.Len(t, back.Interactions, len(bodies))
	bodies[1] = `{"id":"resp_1","object":"response"}`
	for i, b := range bodies {
		assert.Equal(t, b, back.Interactions[i].Request.Body, "request %d", i)
		assert.Equal(t, b, back.Interactions[i].Response.Body, "response %d", i)
	}
	again, err := back.Marshal()
	require.NoError(t, err)
	assert.Equal(t, text, string(again), "writing what was read gives the same bytes")
}

// A cassette without the note (one written before the layout, or by
// another tool) is read as it is, indented bodies included.
func TestOldLayoutReadsAsItIs(t *testing.T) {
	old := "---\nversion: 2\ninteractions:\n    - id: 0\n      request:\n        body: '{\"n\":1}'\n        url: https://api.anthropic.com/v1/messages\n        method: POST\n      response:\n        body: |-\n            {\n              \"ok\": true\n            }\n        code: 200\n"
	c, err := cassette.Parse("old.yaml", []byte(old))
	require.NoError(t, err)
	assert.Equal(t, `{"n":1}`, c.Interactions[0].Request.Body)
	assert.Equal(t, "{\n  \"ok\": true\n}", c.Interactions[0].Response.Body)

	_, err = cassette.Parse("bad.yaml", []byte("---\nversion: 2\ndageval:\n  json_bodies: pretty\ninteractions: []\n"))
	assert.EqualError(t, err, `bad.yaml:4: dageval.json_bodies: got "pretty", want indented (or nothing)`)
}

// The point of the layout: changing one sentence of a system prompt in
// every request of a cassette changes one line per request, not the file.
func TestOnePromptEditChangesOneLinePerRequest(t *testing.T) {
	body := func(prompt string) string {
		return `{"model":"claude-sonnet-4-6","max_tokens":1024,"system":[{"type":"text","text":"` + prompt + `"}],"tools":[{"name":"get_weather","description":"Weather for a city.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],"messages":[{"role":"user","content":"Weather in Paris?"}]}`
	}
	write := func(prompt string) string {
		c := &cassette.Cassette{Version: 2}
		for range 3 {
			c.Interactions = append(c.Interactions, interaction(body(prompt), `{"content":[{"type":"text","text":"Sunny."}]}`))
		}
		data, err := c.Marshal()
		require.NoError(t, err)
		return string(data)
	}
	before, after := write("You are terse."), write("You are terse and kind.")
	diff := udiff.Unified("before", "after", before, after)
	changed := 0
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			changed++
			assert.Contains(t, l, "You are terse and kind.")
		}
	}
	assert.Equal(t, 3, changed, diff)
	assert.Greater(t, strings.Count(before, "\n"), 100, "the rest of each body is on lines of its own")
}
