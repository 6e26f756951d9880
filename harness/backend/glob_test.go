package backend_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
)

func matches(t *testing.T, pattern string, opts backend.PatternOptions, paths []string) []string {
	t.Helper()
	p, err := backend.CompilePattern(pattern, opts)
	require.NoError(t, err, pattern)
	var out []string
	for _, f := range paths {
		if p.Match(f) {
			out = append(out, f)
		}
	}
	return out
}

// The reference matrix, straight against the matcher.
func TestPatternMatrix(t *testing.T) {
	for _, c := range backendtest.GlobMatrix {
		var tree []string
		prefix := ""
		if c.Dir != "" {
			prefix = c.Dir + "/"
		}
		for _, f := range backendtest.GlobTree {
			if strings.HasPrefix(f, prefix) {
				tree = append(tree, strings.TrimPrefix(f, prefix))
			}
		}
		var want []string
		for _, w := range c.Want {
			want = append(want, strings.TrimPrefix(w, prefix))
		}
		got := matches(t, c.Pattern, backend.PatternOptions{}, tree)
		slices.Sort(got)
		slices.Sort(want)
		assert.Equal(t, want, got, "pattern %q under %q", c.Pattern, c.Dir)
	}
}

// doublestar/v4 does not give the matrix: it has no base-name rule and no
// dot-file rule, which is why the backends use their own matcher.
func TestDoublestarDiverges(t *testing.T) {
	ok, err := doublestar.Match("*", ".hidden.py")
	require.NoError(t, err)
	assert.True(t, ok, "doublestar lets * match a leading dot")
	ok, _ = doublestar.Match("*.py", "sub/b.py")
	assert.False(t, ok, "doublestar has no base-name rule")
	ok, _ = doublestar.Match("**/*.yml", ".github/workflows/ci.yml")
	assert.True(t, ok, "doublestar's ** enters dot directories")
	ok, _ = doublestar.Match("/secrets/**", "/secrets")
	assert.True(t, ok, "doublestar's trailing ** matches the directory itself")
}

func TestPatternDetails(t *testing.T) {
	tests := []struct {
		pattern string
		dot     bool
		path    string
		want    bool
	}{
		{`\*.txt`, false, "*.txt", true},
		{`\*.txt`, false, "a.txt", false},
		{"[a-c]x", false, "bx", true},
		{"[]]x", false, "]x", true},
		{"[!]]x", false, "ax", true},
		{"[abc", false, "[abc", true},
		{"{a,{b,c}}.go", false, "c.go", true},
		{"{a}.go", false, "{a}.go", true},
		{"a{,b}.go", false, "a.go", true},
		{"**", false, "x/y/z", true},
		{"/**", false, "x/y/z", true},
		{"/**", false, ".git/config", false},
		{"/**", true, ".git/config", true},
		{"a/**/b", false, "a/b", true},
		{"a/**/b", false, "a/x/y/b", true},
		{"a/**/b", false, "a/.x/b", false},
		{"a/**/b", true, "a/.x/b", true},
		{"*", true, ".env", true},
		{"?env", false, ".env", false},
		{"?env", true, ".env", true},
		{"[.]env", false, ".env", false},
		{"*.ÿ", false, "é.ÿ", true},
		{"?.go", false, "é.go", true},
		{"a*b*c", false, "axxbyyc", true},
		{"a*b*c", false, "axxbyy", false},
		{"sub/", false, "sub", false},
		{"/", true, "", true},
		{"/secrets/**", true, "/secrets", false},
		{"/secrets/**", true, "/secrets/.env", true},
	}
	for _, tt := range tests {
		p, err := backend.CompilePattern(tt.pattern, backend.PatternOptions{Dot: tt.dot})
		require.NoError(t, err, tt.pattern)
		assert.Equal(t, tt.want, p.Match(tt.path), "%q dot=%v against %q", tt.pattern, tt.dot, tt.path)
	}
	_, err := backend.CompilePattern("", backend.PatternOptions{})
	assert.ErrorIs(t, err, backend.ErrInvalidArgument)
	_, err = backend.CompilePattern(strings.Repeat("{a,b}", 10), backend.PatternOptions{})
	assert.ErrorIs(t, err, backend.ErrInvalidArgument)
}

func TestValidatePath(t *testing.T) {
	good := map[string]string{
		"foo/bar":       "/foo/bar",
		"/./foo//bar/":  "/foo/bar",
		"":              "/",
		".":             "/",
		"./":            "/",
		"/.":            "/",
		`a\b`:           "/a/b",
		"/foo..bar.txt": "/foo..bar.txt",
		"/a%20b":        "/a%20b",
		"/100%":         "/100%",
	}
	for in, want := range good {
		got, err := backend.ValidatePath(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range backendtest.HostilePaths {
		_, err := backend.ValidatePath(bad)
		assert.ErrorIs(t, err, backend.ErrInvalidPath, "%q", bad)
	}
	_, err := backend.ValidatePath("/etc/x", "/data/")
	assert.ErrorContains(t, err, "Path must start with one of '/data/'")
	p, err := backend.ValidatePath("/data/x", "/data/")
	require.NoError(t, err)
	assert.Equal(t, "/data/x", p)

	assert.Equal(t, "/secrets", backend.GlobAnchor("/secrets/**"))
	assert.Equal(t, "/", backend.GlobAnchor("/**/x"))
	assert.Equal(t, "/a/b.txt", backend.GlobAnchor("/a/b.txt"))
	assert.True(t, backend.PathsOverlap("/a", "/a/b"))
	assert.True(t, backend.PathsOverlap("/", "/x"))
	assert.False(t, backend.PathsOverlap("/secret", "/secrets"))
}
