package backend

import (
	"path"
	"strings"
	"testing"
)

// FuzzPlainPathAgreesWithTheChecks holds ValidatePath's fast path to the
// checks it skips: a path it takes passes them and comes out of them
// unchanged.
func FuzzPlainPathAgreesWithTheChecks(f *testing.F) {
	for _, s := range []string{"/", "/notes/1.md", "/a/b", "/a/", "//a", "/a//b", "/./a", "/a/.", "/a/..", "/..", "/.a", "/a..b",
		"a", "", "~/a", "/a%2e", `/a\b`, "/é", "/a b", "C:/x", "/a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !plainPath(p) {
			return
		}
		slashed, err := checkPath(p)
		if err != nil {
			t.Fatalf("plainPath(%q), but checkPath refuses it: %v", p, err)
		}
		if !strings.HasPrefix(slashed, "/") || path.Clean(slashed) != p {
			t.Fatalf("plainPath(%q), but the checks turn it into %q", p, path.Clean(slashed))
		}
	})
}

func TestPlainPath(t *testing.T) {
	for p, want := range map[string]bool{"/": true, "/notes/1.md": true, "/a/.b/c..d": true, "/a/": false, "//a": false, "/a/./b": false, "/a/..": false, "a/b": false, "/a b": false, "": false} {
		if got := plainPath(p); got != want {
			t.Errorf("plainPath(%q) = %v, want %v", p, got, want)
		}
	}
}
