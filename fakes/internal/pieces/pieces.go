// Package pieces cuts answers into the pieces the fakes stream one by one.
package pieces

import "strings"

// Words cuts s after each space, so that the pieces join back to s and a
// streaming client sees the text grow word by word. An empty s has no pieces.
func Words(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
