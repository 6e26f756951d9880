package backend

import (
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxPathLength bounds accepted paths (bytes); longer ones are InvalidPath.
const MaxPathLength = 4096

// ValidatePath normalises a virtual path and refuses anything that could
// step outside the tree it names. The result is clean, absolute and uses
// "/" ("foo//bar/" → "/foo/bar", "" → "/").
//
// Refused with an InvalidPath error: a ".." component (also after turning
// "\" into "/" and after percent-decoding, up to three levels), a leading
// "~", Windows drive or UNC prefixes, NUL and other control characters,
// invalid UTF-8 (which covers overlong encodings such as "\xc0\xae"), and
// paths longer than MaxPathLength. With allowedPrefixes the normalised path
// must also start with one of them.
func ValidatePath(p string, allowedPrefixes ...string) (string, error) {
	clean := p
	if !plainPath(p) {
		slashed, err := checkPath(p)
		if err != nil {
			return "", err
		}
		clean = slashed
		if !strings.HasPrefix(clean, "/") {
			clean = "/" + clean
		}
		// Clean leaves a clean path as it is, without allocating: most are.
		clean = path.Clean(clean)
	}
	if len(allowedPrefixes) > 0 {
		ok := false
		for _, pre := range allowedPrefixes {
			if strings.HasPrefix(clean, pre) {
				ok = true
				break
			}
		}
		if !ok {
			return "", errInvalid(p, "Path must start with one of "+strings.Join(quoteAll(allowedPrefixes), ", ")+": "+quotePath(p))
		}
	}
	return clean, nil
}

// plainPath reports whether p is a path every check of ValidatePath passes
// and path.Clean leaves as it is: absolute, in letters, digits, "-", "_"
// and ".", without empty, "." or ".." components or a trailing "/". Most
// paths a model sends are, and a tool call validates its path twice.
func plainPath(p string) bool {
	if p == "/" {
		return true
	}
	if len(p) < 2 || len(p) > MaxPathLength || p[0] != '/' {
		return false
	}
	seg := 0 // start of the current component
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			c := p[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return false
			}
			continue
		}
		switch p[seg+1 : i] {
		case "", ".", "..":
			return false
		}
		seg = i
	}
	return true
}

// checkPath applies the hostile-input checks of ValidatePath and returns the
// path with "\" turned into "/", neither cleaned nor made absolute.
func checkPath(p string) (string, error) {
	if len(p) > MaxPathLength {
		return "", errInvalid(truncPath(p), "Path is longer than "+strconv.Itoa(MaxPathLength)+" bytes")
	}
	if !utf8.ValidString(p) {
		return "", errInvalid(p, "Path is not valid UTF-8: "+quotePath(p))
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", errInvalid(p, "Path contains a control character: "+quotePath(p))
		}
	}
	if strings.HasPrefix(p, "~") {
		return "", errInvalid(p, "Path traversal not allowed: "+quotePath(p))
	}
	if isWindowsAbs(p) {
		return "", errInvalid(p, "Windows absolute paths are not supported: "+quotePath(p)+". Use virtual paths starting with /, e.g. /workspace/file.txt")
	}
	s := strings.ReplaceAll(p, `\`, "/")
	if hasDotDot(s) {
		return "", errInvalid(p, "Path traversal not allowed: "+quotePath(p))
	}
	if strings.Contains(s, "%") {
		dec := s
		for range 3 {
			next, err := url.PathUnescape(dec)
			if err != nil || next == dec {
				break
			}
			dec = next
			if !utf8.ValidString(dec) || strings.ContainsAny(dec, "\x00") || hasDotDot(strings.ReplaceAll(dec, `\`, "/")) {
				return "", errInvalid(p, "Path traversal not allowed (percent-encoded): "+quotePath(p))
			}
		}
	}
	return s, nil
}

func isWindowsAbs(p string) bool {
	if len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z') {
		return true
	}
	return strings.HasPrefix(p, `\\`)
}

func hasDotDot(slashed string) bool {
	for seg := range strings.SplitSeq(slashed, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

func quotePath(p string) string {
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return strconv.Quote(p)
		}
	}
	return p
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + s + "'"
	}
	return out
}

func truncPath(p string) string {
	if len(p) > 64 {
		return p[:64] + "…"
	}
	return p
}

// JoinPath joins a directory and a relative name into a clean absolute path.
func JoinPath(dir, name string) string {
	return path.Clean("/" + strings.TrimSuffix(dir, "/") + "/" + strings.TrimPrefix(name, "/"))
}

// IsUnder reports whether p is dir or lies below it, component-wise
// ("/secrets" is not under "/secret").
func IsUnder(p, dir string) bool {
	if dir == "/" || p == dir {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// PathsOverlap reports whether a and b are equal or one is a component-wise
// ancestor of the other. "/" overlaps everything.
func PathsOverlap(a, b string) bool {
	a, b = path.Clean("/"+a), path.Clean("/"+b)
	return IsUnder(a, b) || IsUnder(b, a)
}

// GlobAnchor returns the longest leading directory of an absolute pattern
// that has no wildcard ("/secrets/**" → "/secrets", "/**/x" → "/",
// "/a/b.txt" → "/a/b.txt").
func GlobAnchor(pattern string) string {
	segs := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	var keep []string
	for _, s := range segs {
		if HasWildcard(s) {
			break
		}
		keep = append(keep, s)
	}
	return path.Clean("/" + strings.Join(keep, "/"))
}

// HasWildcard reports whether s contains a glob metacharacter (* ? [ {).
func HasWildcard(s string) bool { return strings.ContainsAny(s, "*?[{") }
