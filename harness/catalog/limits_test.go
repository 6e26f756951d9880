package catalog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/internal/memtest"
)

// A catalog file is bounded like the other YAML a user brings
// (internal/yamlx): deep nesting is refused at file:line:col in a child with
// 256 MiB of address space. The memory bound, not a clock, is what the test holds it to. Before, it went
// straight to go-yaml, whose parser takes gigabytes for 40 000 brackets
// and hundreds of MB for 10 000 levels before failing with no position.
func TestParseRefusesHostileCatalog(t *testing.T) {
	if !memtest.Bound(t, 256<<20) {
		return
	}
	head := "version: v1\ncurrency: USD\n"
	tests := []struct{ name, data, want string }{
		{"40000 brackets", head + "self_hosted: " + strings.Repeat("[", 40000) + "\n",
			"models.yaml:3:113: the nesting of mappings and lists exceeds the limit of 100 levels (set DAGEVAL_YAML_MAX_DEPTH to raise it)"},
		{"10000 levels", head + "models:\n  " + strings.Repeat("- ", 10000) + "x\n",
			"models.yaml:4:201: the nesting of mappings and lists exceeds the limit of 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := catalog.Parse("models.yaml", []byte(tt.data))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
