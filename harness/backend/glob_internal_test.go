package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPatternDerive(t *testing.T) {
	tests := []struct {
		pattern, prefix string
		want            []string
	}{
		{"/memories/*.py", "memories", []string{"/*.py"}},
		{"memories/**/*.md", "memories", []string{"/**/*.md"}},
		{"*/notes.txt", "memories", []string{"/notes.txt"}},
		{"**/*.md", "memories", []string{"/**/*.md"}},
		{"**/*.md", ".hidden", nil},
		{"/docs/*.md", "memories", nil},
		{"/memories", "memories", nil},
		{"*.py", "anything", []string{"*.py"}},
		{"{a,b}/x/*.go", "b/x", []string{"/*.go"}},
		{"a/**", "a/b", []string{"/**"}},
		{"sub/", "sub", nil},
	}
	for _, tt := range tests {
		p, err := CompilePattern(tt.pattern, PatternOptions{})
		require.NoError(t, err)
		assert.Equal(t, tt.want, p.derive(tt.prefix), "%q below %q", tt.pattern, tt.prefix)
	}
}
