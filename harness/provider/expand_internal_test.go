package provider

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// envRefPattern is what a ${NAME} reference is, as a regular expression:
// the definition expand's scanner keeps to.
var envRefPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func expandByPattern(s string, getenv func(string) string) (string, []string) {
	var missing []string
	out := envRefPattern.ReplaceAllStringFunc(s, func(ref string) string {
		name := envRefPattern.FindStringSubmatch(ref)[1]
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	return out, missing
}

// TestExpandFindsWhatThePatternFinds: expand replaces exactly the
// references the pattern matches, with the same values, and reports the
// same unset ones in the same order, for written and for random strings.
func TestExpandFindsWhatThePatternFinds(t *testing.T) {
	env := map[string]string{"HOST": "https://h.example", "A": "a", "_x9": "x", "B1": "b"}
	getenv := func(k string) string { return env[k] }
	inputs := []string{
		"", "plain", "${HOST}/v1", "${HOST}", "${UNSET}/v1", "http://x/${A}/${B1}/${C}", "$${A}}", "${${A}}",
		"${9A}", "${A-B}", "${}", "${", "$", "}", "${A", "${A}${A}${UNSET}${UNSET}", "pre${_x9}post", "${A }", "${ A}",
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "${}A_9x-/B1"
	for range 20000 {
		b := make([]byte, r.IntN(14))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, s := range inputs {
		got, gotMissing := expand(s, getenv)
		want, wantMissing := expandByPattern(s, getenv)
		if !assert.Equal(t, want, got, "%q", s) || !assert.Equal(t, wantMissing, gotMissing, "%q", s) {
			return
		}
		name, _, ok := envRefAt(s, 0)
		lead := envRefPattern.FindStringSubmatchIndex(s)
		assert.Equal(t, lead != nil && lead[0] == 0, ok, "%q", s)
		if ok {
			assert.Equal(t, s[lead[2]:lead[3]], name, "%q", s)
		}
	}
}
