package backend

import (
	"path"
	"strings"
	"testing"
	"time"
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

// TestFormatTimeKeepsNoStaleStamp checks that the kept stamp is only
// reused for the same instant, in whatever location it comes.
func TestFormatTimeKeepsNoStaleStamp(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	east := time.FixedZone("east", 3600)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{t0, "2026-01-02T03:04:05.000006Z"},
		{t0.In(east), "2026-01-02T03:04:05.000006Z"},
		{t0.Add(time.Microsecond), "2026-01-02T03:04:05.000007Z"},
		{t0, "2026-01-02T03:04:05.000006Z"},
		{time.Time{}, "0001-01-01T00:00:00.000000Z"},
	} {
		if got := FormatTime(tc.t); got != tc.want {
			t.Errorf("FormatTime(%v) = %s, want %s", tc.t, got, tc.want)
		}
	}
}

// FuzzStrictlyBelow holds strictlyBelow to the expression it replaces.
func FuzzStrictlyBelow(f *testing.F) {
	for _, s := range [][2]string{{"/a/b", "/a"}, {"/a", "/a"}, {"/ab", "/a"}, {"/a", "/"}, {"/", "/"}, {"a", "/"}, {"/a/", "/a"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, p, dir string) {
		if got, want := strictlyBelow(p, dir), strings.HasPrefix(p, dirPrefix(dir)) && p != dir; got != want {
			t.Fatalf("strictlyBelow(%q, %q) = %v, want %v", p, dir, got, want)
		}
	})
}
