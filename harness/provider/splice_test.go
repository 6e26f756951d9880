package provider_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dageval/dageval/harness/provider"
)

func TestSplice(t *testing.T) {
	shell := []byte(`{"a":[` + string(provider.Hole(1)) + `],"b":"x","c":[` + string(provider.Hole(0)) + `]}`)
	got, ok := provider.Splice(shell, [][][]byte{{[]byte(`1`), []byte(`{"k":2}`)}, {[]byte(`"s"`)}}, false)
	assert.True(t, ok)
	assert.Equal(t, `{"a":["s"],"b":"x","c":[1,{"k":2}]}`, string(got))

	// A placeholder twice, missing, or a shell the SDK would compact: no splice.
	twice := []byte(`[` + string(provider.Hole(0)) + `,[` + string(provider.Hole(0)) + `]]`)
	_, ok = provider.Splice(append([]byte(`[[`+string(provider.Hole(0))+`],`), twice[1:]...), [][][]byte{{[]byte(`1`)}}, false)
	assert.False(t, ok)
	_, ok = provider.Splice([]byte(`{"a":[]}`), [][][]byte{{[]byte(`1`)}}, false)
	assert.False(t, ok)
	_, ok = provider.Splice([]byte(`{"a": [`+string(provider.Hole(0))+`]}`), [][][]byte{{[]byte(`1`)}}, false)
	assert.False(t, ok)
	_, ok = provider.Splice([]byte(`{"a":"<b>","c":[`+string(provider.Hole(0))+`]}`), [][][]byte{{[]byte(`1`)}}, true)
	assert.False(t, ok, "an HTML-escaping SDK would rewrite <b>")
}

func TestCompacted(t *testing.T) {
	assert.True(t, provider.Compacted([]byte(`{"a":"<b> \u2028"}`), false))
	assert.False(t, provider.Compacted([]byte(`{"a": 1}`), false))
	assert.False(t, provider.Compacted([]byte(`{"a":"<b>"}`), true))
	assert.False(t, provider.Compacted([]byte("{\"a\":\"\u2028\"}"), true))
	assert.True(t, provider.Compacted([]byte(`{"a":"\u003cb\u003e"}`), true))
}
