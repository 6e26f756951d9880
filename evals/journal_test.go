package evals

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
