package provider_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

func slotJSON(k int) string {
	raw, _ := json.Marshal(provider.Slot(k))
	return string(raw)
}

// A template filled with strings is what encoding/json (whose string
// encoding the SDKs copy) encodes the same value to.
func TestTemplateFill(t *testing.T) {
	for _, escapeHTML := range []bool{false, true} {
		tmpl, ok := provider.NewTemplate([]byte(`{"b":`+slotJSON(1)+`,"a":[`+slotJSON(0)+`],"r":`+slotJSON(2)+`}`), 3, escapeHTML)
		require.True(t, ok)
		for _, s := range providertest.AwkwardStrings(3, 500) {
			got, ok := tmpl.Fill([]string{s, "x", `{"k":1}`}, 1<<2)
			require.True(t, ok)
			want := struct {
				B string          `json:"b"`
				A []string        `json:"a"`
				R json.RawMessage `json:"r"`
			}{"x", []string{s}, json.RawMessage(`{"k":1}`)}
			var buf []byte
			if escapeHTML {
				buf, _ = json.Marshal(want)
			} else {
				buf = marshalNoHTML(t, want)
			}
			require.Equal(t, string(buf), string(got), "%q", s)
		}
		_, ok = tmpl.Fill([]string{"", "x", "{}"}, 1<<2)
		assert.False(t, ok, "an empty string may be omitted by the SDK")
	}
}

func TestNewTemplateRefuses(t *testing.T) {
	for name, enc := range map[string]string{
		"a slot missing":  `{"a":` + slotJSON(0) + `}`,
		"a slot twice":    `{"a":` + slotJSON(0) + `,"b":` + slotJSON(0) + `,"c":` + slotJSON(1) + `}`,
		"not compact":     `{"a": ` + slotJSON(0) + `,"b":` + slotJSON(1) + `}`,
		"HTML to escape":  `{"a":"<",` + `"s":` + slotJSON(0) + `,"b":` + slotJSON(1) + `}`,
		"not even a JSON": `{"a":` + slotJSON(0) + `,"b":` + slotJSON(1),
	} {
		_, ok := provider.NewTemplate([]byte(enc), 2, true)
		assert.False(t, ok, name)
	}
}

func marshalNoHTML(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
