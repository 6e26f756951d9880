package middleware_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/internal/memtest"
)

// A SKILL.md's frontmatter is bounded like the other YAML a user brings
// (internal/yamlx): refused at file:line:col in a child
// with 256 MiB of address space. The memory bound, not a clock, is what the test holds it to. Before, the frontmatter went
// straight to go-yaml: the alias chain expands ninefold a level (gigabytes
// at eight), and 10 000 levels of nesting cost hundreds of MB before
// failing with no position.
func TestParseSkillRefusesHostileFrontmatter(t *testing.T) {
	if !memtest.Bound(t, 256<<20) {
		return
	}
	var laughs strings.Builder
	fmt.Fprintf(&laughs, "l0: &l0 [%s]\n", strings.TrimSuffix(strings.Repeat(strings.Repeat("ha", 200)+",", 10), ","))
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&laughs, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ","))
	}
	head := "---\nname: a\ndescription: d\n"
	tests := []struct {
		name, frontmatter, want string
	}{
		{"alias chain", laughs.String(),
			"/s/a/SKILL.md:7:42: skipped: invalid YAML frontmatter: the aliases expand to more than 4 MiB, which exceeds the limit for what aliases may add (set DAGEVAL_YAML_MAX_ALIAS_BYTES to raise it)"},
		{"10000 levels", "x:\n  " + strings.Repeat("- ", 10000) + "y\n",
			"/s/a/SKILL.md:5:201: skipped: invalid YAML frontmatter: the nesting of mappings and lists exceeds the limit of 100 levels (set DAGEVAL_YAML_MAX_DEPTH to raise it)"},
		{"40000 brackets", "x: " + strings.Repeat("[", 40000) + "\n",
			"/s/a/SKILL.md:4:103: skipped: invalid YAML frontmatter: the nesting of mappings and lists exceeds the limit of 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := middleware.ParseSkill("/s/a/SKILL.md", []byte(head+tt.frontmatter+"---\n\nbody\n"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
