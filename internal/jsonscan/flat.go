package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// FlatObject reads b as one JSON object, calling fn with each member's raw
// key (the literal, quotes included) and raw value, in document order. It
// validates as it goes, as strictly as json.Valid, and reports false
// without finishing when b is not a valid object or when fn returns false.
// So true means b is valid JSON and fn saw every member. It is made for
// flat objects, whose scalar values it checks in the same pass; a nested
// value costs a second pass (json.Valid over it).
func FlatObject(b []byte, fn func(key, value []byte) bool) bool {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return SkipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		keyEnd, ok := validString(b, i)
		if !ok {
			return false
		}
		key := b[i:keyEnd]
		i = SkipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := SkipSpace(b, i+1)
		end, ok := valueEnd(b, start)
		if !ok || !fn(key, b[start:end]) {
			return false
		}
		i = SkipSpace(b, end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return SkipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// validString returns the index just past the valid string literal that
// starts at b[i] (a quote), or false. Like json.Valid it rejects control
// characters and unknown escapes and accepts any other byte.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return 0, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// valueEnd returns the index just past the valid value starting at b[i],
// or false.
func valueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '{', '[':
		end := ValueEnd(b, i)
		if !json.Valid(b[i:end]) {
			return 0, false
		}
		return end, true
	case '"':
		return validString(b, i)
	case 't':
		return literalEnd(b, i, "true")
	case 'f':
		return literalEnd(b, i, "false")
	case 'n':
		return literalEnd(b, i, "null")
	}
	return numberEnd(b, i)
}

func literalEnd(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// numberEnd follows JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Unquote decodes a valid string literal (quotes included) as
// encoding/json would. It reports false where it would rather leave the
// work to encoding/json: \u escapes and bytes that are not UTF-8, which
// encoding/json rewrites.
func Unquote(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	s := lit[1 : len(lit)-1]
	if !utf8.Valid(s) {
		return "", false
	}
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s), true
	}
	out := make([]byte, 0, len(s))
	for {
		// Copy up to the next escape in one go.
		j := bytes.IndexByte(s, '\\')
		if j < 0 {
			out = append(out, s...)
			break
		}
		out = append(out, s[:j]...)
		if j+1 >= len(s) {
			return "", false
		}
		switch c := s[j+1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // \u, or not valid at all
			return "", false
		}
		s = s[j+2:]
	}
	// out is ours alone and never written again: the string can be it.
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

// Int parses a valid number as encoding/json decodes one into an int:
// false when it has a fraction or exponent or does not fit.
func Int(num []byte) (int, bool) {
	n, err := strconv.ParseInt(string(num), 10, strconv.IntSize)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// ValidValueEnd returns the index just past the valid JSON value that
// starts at b[i], or false when there is none there, as strictly as
// json.Valid (a nested object or list costs a json.Valid pass over it).
func ValidValueEnd(b []byte, i int) (int, bool) { return valueEnd(b, i) }
