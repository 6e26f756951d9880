package yamlx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/internal/memtest"
)

// aliasChain is the billion-laughs file: each level lists the previous
// one ten times, so eight levels of a 60-byte list expand to 6 GB.
func aliasChain(levels int) string {
	var b strings.Builder
	b.WriteString("result:\n  l0: &l0 [" + strings.Repeat(strings.Repeat("a", 55)+",", 9) + "a]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), i-1)
	}
	return b.String()
}

// Hostile files, each refused at a position before it costs memory. The
// test runs in a child process with 256 MiB of address space to grow into:
// before the limits, the first case died at 2.7 GB.
func TestLimitsRefuseHostileFiles(t *testing.T) {
	if !memtest.Bound(t, 256<<20) {
		return
	}
	tests := []struct {
		name, src, want string
	}{
		{"alias chain", aliasChain(8), "s.yaml:6:32: the aliases expand to more than 4 MiB, which exceeds the limit for what aliases may add (set DAGEVAL_YAML_MAX_ALIAS_BYTES to raise it)"},
		{"40000 brackets", "tags: " + strings.Repeat("[", 40000) + "\n", "s.yaml:1:106: the nesting of mappings and lists exceeds the limit of 100 levels (set DAGEVAL_YAML_MAX_DEPTH to raise it)"},
		{"10000 dashes", "result:\n  " + strings.Repeat("- ", 10000) + "x\n", "s.yaml:2:201: the nesting of mappings and lists exceeds the limit of 100 levels"},
		{"200 indented keys", deepKeys(200), "s.yaml:101:201: the nesting of mappings and lists exceeds the limit of 100 levels"},
		{"10000 flow mappings", "a: " + strings.Repeat("{a: ", 10000) + "\n", "s.yaml:1:400: the nesting of mappings and lists exceeds the limit of 100 levels"},
		{"9 MiB", "a: " + strings.Repeat("x", 9<<20) + "\n", "s.yaml:1:8388609: the file is 9 MiB, which exceeds the limit of 8 MiB for a YAML file (set DAGEVAL_YAML_MAX_BYTES to raise it)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse("s.yaml", []byte(tt.src))
			if err == nil {
				var v any
				err = d.Decode(&v)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func deepKeys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("  ", i) + "k:\n")
	}
	return b.String()
}

// What a real file does stays within the limits: nesting near the limit,
// anchors shared by many entries.
func TestLimitsAllowRealFiles(t *testing.T) {
	var b strings.Builder
	b.WriteString("shared: &agent {system_prompt: " + strings.Repeat("be brief ", 100) + ", tools: [a, b, c]}\ncases:\n")
	for i := range 500 {
		fmt.Fprintf(&b, "  - {id: c%d, agent: *agent}\n", i)
	}
	b.WriteString("deep: " + strings.Repeat("[", 99) + strings.Repeat("]", 99) + "\n")
	b.WriteString("block:\n" + strings.ReplaceAll(deepKeys(90), "k:", "  k:") + strings.Repeat("  ", 91) + "x: 1\n")
	d, err := Parse("s.yaml", []byte(b.String()))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, d.Decode(&v))
	assert.Len(t, v["cases"], 500)
}

func TestLimitsFromTheEnvironment(t *testing.T) {
	t.Setenv(EnvMaxDepth, "3")
	_, err := Parse("s.yaml", []byte("a: [[[x]]]\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "s.yaml:1:6: the nesting of mappings and lists exceeds the limit of 3 levels")
	_, err = Parse("s.yaml", []byte("a: [[x]]\n"))
	require.NoError(t, err)

	t.Setenv(EnvMaxDepth, "")
	t.Setenv(EnvMaxAliasBytes, "1K")
	_, err = Parse("s.yaml", []byte(aliasChain(2)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "s.yaml:3:16: the aliases expand to more than 1 KiB")
	t.Setenv(EnvMaxAliasBytes, "1M")
	_, err = Parse("s.yaml", []byte(aliasChain(2)))
	require.NoError(t, err)

	t.Setenv(EnvMaxBytes, "a lot")
	_, err = Parse("s.yaml", []byte("a: 1\n"))
	require.Error(t, err)
	assert.Equal(t, `s.yaml: DAGEVAL_YAML_MAX_BYTES="a lot": want a positive whole number, optionally with KiB, MiB or GiB`, err.Error())
}

func TestByteOrderMarkIsAccepted(t *testing.T) {
	d, err := Parse("s.yaml", []byte("\ufeff# a comment\ntitle: x\n"))
	require.NoError(t, err)
	var v doc
	require.NoError(t, d.Decode(&v))
	assert.Equal(t, "x", v.Title)
}
