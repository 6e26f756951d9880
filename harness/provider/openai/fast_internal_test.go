package openai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

// encoding is the JSON of p: as the SDK encodes it, or, for a param given
// its JSON, that JSON as spliced into requests.
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

// TestFastMessagesAreTheSDKEncoding: messages and input items encoded
// from templates are byte for byte what the SDK encodes them to.
func TestFastMessagesAreTheSDKEncoding(t *testing.T) {
	chat, items := 0, 0
	for i, m := range providertest.AwkwardMessages(2, 600) {
		if got, _, ok := fastChatMessage(&m); ok {
			chat++
			want, err := chatMessage(m, i)
			require.NoError(t, err)
			require.NotNil(t, want, "%#v", m)
			require.Equal(t, encoding(t, *want), encoding(t, got), "%#v", m)
		}
		if got, _, ok := fastInputItems(&m); ok {
			items++
			want, err := inputItems(m, i)
			require.NoError(t, err)
			require.Len(t, got, len(want), "%#v", m)
			for k := range want {
				require.Equal(t, encoding(t, want[k]), encoding(t, got[k]), "%#v", m)
			}
		}
	}
	assert.Greater(t, chat, 250, "too few chat messages took the fast path")
	assert.Greater(t, items, 250, "too few messages took the fast path to input items")
}
