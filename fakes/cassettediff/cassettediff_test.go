package cassettediff_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/cassettediff"
)

const quickstart = "../../evals/examples/quickstart/cassettes/"

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(quickstart + name)
	require.NoError(t, err)
	return data
}

func compare(t *testing.T, old, new []byte) (*cassettediff.Report, string) {
	t.Helper()
	r, err := cassettediff.Compare(t.Context(), cassettediff.Side{Name: "old.yaml", Data: old}, cassettediff.Side{Name: "new.yaml", Data: new})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, r.WriteText(&b))
	return r, b.String()
}

// oldLayout writes a cassette as dageval did before JSON bodies were
// indented: compact bodies on one line, four-space YAML.
func oldLayout(t *testing.T, data []byte) []byte {
	t.Helper()
	c, err := cassette.Parse("c.yaml", data)
	require.NoError(t, err)
	c.Meta = nil
	out, err := yaml.Marshal(c)
	require.NoError(t, err)
	return append([]byte("---\n"), out...)
}

// Two cassettes that differ in bytes only — layout, ids, headers — are the
// same in model terms.
func TestSameInModelTerms(t *testing.T) {
	data := read(t, "paris-weather--anthropic-claude-sonnet-4-6--terse--e1.yaml")
	other := strings.ReplaceAll(string(oldLayout(t, data)), "req_", "req_X")
	require.NotEqual(t, string(data), other)
	r, text := compare(t, data, []byte(other))
	assert.False(t, r.Changed(), text)
	assert.Equal(t, "old.yaml → new.yaml: no change in model terms (4 interactions)\n", text)
}

// A system prompt edit shows once, with the interactions repeating it
// pointing back to the first; answers that changed show what the model
// says now.
func TestPromptEdit(t *testing.T) {
	data := string(read(t, "paris-weather--anthropic-claude-sonnet-4-6--terse--e1.yaml"))
	edited := strings.ReplaceAll(data, "You are a travel and research assistant.", "You are a travel assistant.")
	edited = strings.Replace(edited, `"text": "Paris: sunny, 21C;`, `"text": "Paris: very sunny, 21C;`, 1)
	require.NotEqual(t, data, edited)
	r, text := compare(t, []byte(data), []byte(edited))
	require.True(t, r.Changed())
	assert.Contains(t, text, "old.yaml → new.yaml: 4 interactions → 4: ")
	assert.Contains(t, text, "\n[1] POST /v1/messages lane assistant: changed\n  system prompt:\n    @@ ")
	assert.Contains(t, text, "    -You are a travel and research assistant. Use your tools for facts: never\n    +You are a travel assistant. Use your tools for facts: never\n")
	assert.Contains(t, text, "  system prompt: as in [1]\n")
	assert.Contains(t, text, "  answer:\n")
	assert.Contains(t, text, "    -Paris: sunny, 21C; noted in /notes/paris.md.\n    +Paris: very sunny, 21C; noted in /notes/paris.md.\n")
	assert.NotContains(t, text, "  tools", "the tools did not change")
}

// Tools added, removed and changed are named in the summary; a call the
// agent makes only now is an added interaction.
func TestToolsAndTurns(t *testing.T) {
	data := string(read(t, "paris-weather--anthropic-claude-sonnet-4-6--terse--e1.yaml"))
	c, err := cassette.Parse("c.yaml", []byte(data))
	require.NoError(t, err)
	// Rename a tool in every request, and drop the last interaction.
	for _, it := range c.Interactions {
		it.Request.Body = strings.ReplaceAll(it.Request.Body, `"name":"glob"`, `"name":"find_files"`)
	}
	c.Interactions = c.Interactions[:len(c.Interactions)-1]
	fewer, err := c.Marshal()
	require.NoError(t, err)
	r, text := compare(t, []byte(data), fewer)
	require.True(t, r.Changed())
	assert.Contains(t, text, "  tools (+find_files -glob):\n")
	assert.Contains(t, text, "  tools (+find_files -glob): as in [1]\n")
	assert.Contains(t, text, "[was 4] POST /v1/messages lane assistant/rubric_grader: removed\n")

	r, text = compare(t, nil, []byte(data))
	assert.Len(t, r.Interactions, 4)
	assert.Contains(t, text, "old.yaml → new.yaml: added, 4 interactions\n")
	assert.Contains(t, text, "  system prompt:\n    +You are a travel and research assistant.")

	var js bytes.Buffer
	require.NoError(t, json.NewEncoder(&js).Encode(r))
	assert.Contains(t, js.String(), `"change":"added"`)
}

// Subagent lanes carry tool call ids that change with every recording;
// interactions pair by what the agent did instead.
func TestSubagentLanesPair(t *testing.T) {
	data := string(read(t, "delegate-research--anthropic-claude-sonnet-4-6--terse--e1.yaml"))
	other := strings.ReplaceAll(data, "call_tOCovsM62zRPNm6LsBXOyEAg", "call_somethingElse")
	r, text := compare(t, []byte(data), []byte(other))
	assert.False(t, r.Changed(), text)

	edited := strings.ReplaceAll(other, "You research questions in the product documentation", "You carefully research questions in the product documentation")
	r, text = compare(t, []byte(data), []byte(edited))
	require.True(t, r.Changed(), "the subagent's prompt is in the cassette")
	assert.Contains(t, text, "lane assistant/task:researcher#1: changed")
}

// A body that is not a model request is shown as it is.
func TestUnknownEndpoint(t *testing.T) {
	doc := func(body string) []byte {
		return []byte("---\nversion: 2\ninteractions:\n  - id: 0\n    request:\n      body: '" + body + "'\n      url: https://example.test/v1/embeddings\n      method: POST\n    response:\n      body: '{}'\n      code: 200\n")
	}
	r, text := compare(t, doc(`{"input":"a"}`), doc(`{"input":"b"}`))
	require.True(t, r.Changed())
	assert.Contains(t, text, "not read as a model request")
	assert.Contains(t, text, `-  "input": "a"`)
	assert.Contains(t, text, `+  "input": "b"`)

	_, err := cassettediff.Compare(t.Context(), cassettediff.Side{Name: "bad.yaml", Data: []byte("version: 9\n")}, cassettediff.Side{Name: "x"})
	assert.ErrorContains(t, err, "bad.yaml:1: version")
}
