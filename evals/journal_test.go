package evals

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/internal/scrub"
)

// A journal line is its result line with the cell file's sum as the last
// member, and cutting the member off gives the result line back byte for
// byte, whatever the result's strings hold.
func TestJournalLineRoundTrip(t *testing.T) {
	sum := sumOf([]byte("{\n  \"x\": 1\n}\n"))
	for _, result := range []string{
		`{"case":"c1","id":"c1--m","status":"pass"}` + "\n",
		`{"case":"c1","error":"quoted ,\"cell_file\":{\"bytes\":1}} inside"}` + "\n",
		`{"nested":{"cell_file":{"bytes":3}}}` + "\n",
		"{}\n",
	} {
		line := appendJournalLine(nil, []byte(result), sum)
		require.True(t, json.Valid(line), "%s", line)
		var got struct {
			CellFile *cellFileSum `json:"cell_file"`
		}
		require.NoError(t, json.Unmarshal(line, &got))
		assert.Equal(t, &sum, got.CellFile, "%s", line)
		assert.Equal(t, result, string(resultLine(line)))
		assert.Equal(t, result, string(resultLine([]byte(result))), "a line without a sum is its own result line")
	}
	assert.Equal(t, int64(13), sum.Bytes)
	assert.Len(t, sum.SHA256, 64)
}

// A cell file whose agent description is shared is the file encoding/json
// writes for the whole detail, byte for byte; a copy that was changed is
// no longer the shared one.
func TestSharedAgentMember(t *testing.T) {
	g := &AgentGiven{SystemPrompt: "You answer.\n<b>\"quoted\"</b>", Tools: []AgentTool{{Name: "ls", Description: "Lists & more"}}, Middleware: []string{"FilesystemMiddleware"}}
	sg := (&runner{scrub: scrub.New()}).share(g)
	require.NotNil(t, sg)
	cp := *g
	d := &CellDetail{SchemaVersion: SchemaVersion, Result: CellResult{CellKey: CellKey{Case: "c"}, ID: "c--m", Status: StatusPass}, Input: "hi", Messages: []llm.Message{llm.User("hi")}, Agent: &cp}
	want, err := encodeJSON(d, true)
	require.NoError(t, err)
	require.True(t, sg.holds(d.Agent))
	without := *d
	without.Agent = nil
	e := getCellEncoder()
	defer e.release()
	got, _, err := e.encode(&without, sg.member)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	cp.Tools = []AgentTool{{Name: "ls", Description: "changed"}}
	assert.False(t, sg.holds(d.Agent))
	assert.False(t, (*sharedGiven)(nil).holds(d.Agent))
}
