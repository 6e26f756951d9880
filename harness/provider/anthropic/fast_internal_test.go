package anthropic

import (
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

// slowBlocks converts and encodes a message's blocks through the SDK's
// encoder alone.
func slowBlocks(t *testing.T, m llm.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	var err error
	switch m.Role {
	case llm.RoleUser:
		blocks, err = contentBlocks(m.Content, 0)
	case llm.RoleAssistant:
		blocks, err = assistantBlocks(m, 0)
	case llm.RoleTool:
		blocks = []sdk.ContentBlockParamUnion{toolResult(m)}
	}
	require.NoError(t, err)
	return blocks
}

// encodings are the JSON of each param: as the SDK encodes it, or, for one
// given its JSON, that JSON as spliced into requests.
func encodings[P provider.Element](t *testing.T, ps []P) []string {
	var out []string
	for _, p := range ps {
		out = append(out, encoding(t, p))
	}
	return out
}

func encoding(t *testing.T, p provider.Element) string {
	if v, ok := p.Overrides(); ok {
		raw, isRaw := v.(json.RawMessage)
		require.True(t, isRaw)
		return string(raw)
	}
	raw, err := p.MarshalJSON()
	require.NoError(t, err)
	return string(raw)
}

// TestFastBlocksAreTheSDKEncoding: a message's blocks and turn encoded
// from templates are byte for byte what the SDK encodes them to.
func TestFastBlocksAreTheSDKEncoding(t *testing.T) {
	fast := 0
	for _, m := range providertest.AwkwardMessages(1, 400) {
		got, _, ok := fastBlocks(&m)
		if !ok {
			continue
		}
		fast++
		slow := slowBlocks(t, m)
		require.Equal(t, encodings(t, slow), encodings(t, got), "%#v", m)
		if len(got) == 0 {
			continue
		}
		role := turnRole(m.Role)
		turn := appendTurn(nil, role, got)[0]
		enc, _, ok := splicedTurn(&turn)
		require.True(t, ok)
		want, err := appendTurn(nil, role, slow)[0].MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, string(want), encoding(t, enc))
	}
	assert.Greater(t, fast, 150, "too few messages took the fast path")
}
