package cassette

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// canonicalKeyFast computes what canonicalKeySlow does (compact JSON, keys
// sorted, ignored fields removed, numbers as written, strings encoded as
// encoding/json encodes them) in one pass over the bytes, without building a
// tree of maps: matching a request whose bytes differ from the recording
// spent most of its time there. ok is false for anything it is not sure to
// handle exactly as the slow path; the caller then uses that.
func canonicalKeyFast(body []byte, ignore []fieldPath) (string, bool) {
	c := canonPool.Get().(*canonicalizer)
	defer canonPool.Put(c)
	c.in, c.pos, c.failed = body, 0, false
	c.out = c.out[:0]
	c.skipSpace()
	if c.pos >= len(c.in) {
		return "", false
	}
	var active []fieldPath
	if len(ignore) > 0 {
		active = expand(ignore, nil)
	}
	c.out = c.value(c.out, active, 0)
	c.skipSpace()
	if c.failed || c.pos != len(c.in) {
		return "", false
	}
	return string(c.out), true
}

var canonPool = sync.Pool{New: func() any { return &canonicalizer{} }}

// maxCanonDepth bounds nesting; deeper documents go to the slow path,
// which has its own limit.
const maxCanonDepth = 512

type canonicalizer struct {
	in     []byte
	pos    int
	failed bool
	out    []byte
}

type member struct {
	key        string
	raw        []byte // the key token, when it is already canonical
	start, end int    // the canonical value in the scratch buffer
}

func (c *canonicalizer) fail() { c.failed = true }

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value appends the canonical form of the value at c.pos to out. active are
// the ignore paths, expanded, that apply to this value's members.
func (c *canonicalizer) value(out []byte, active []fieldPath, depth int) []byte {
	if c.failed {
		return out
	}
	if depth > maxCanonDepth {
		c.fail()
		return out
	}
	c.skipSpace()
	if c.pos >= len(c.in) {
		c.fail()
		return out
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object(out, active, depth)
	case ch == '[':
		return c.array(out, active, depth)
	case ch == '"':
		raw, ok := c.stringToken()
		if !ok {
			c.fail()
			return out
		}
		return appendCanonString(out, raw, &c.failed)
	case ch == 't':
		return c.literal(out, "true")
	case ch == 'f':
		return c.literal(out, "false")
	case ch == 'n':
		return c.literal(out, "null")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		start := c.pos
		if !c.number() {
			c.fail()
			return out
		}
		return append(out, c.in[start:c.pos]...)
	}
	c.fail()
	return out
}

func (c *canonicalizer) literal(out []byte, lit string) []byte {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
		c.fail()
		return out
	}
	c.pos += len(lit)
	return append(out, lit...)
}

// number scans a JSON number.
func (c *canonicalizer) number() bool {
	in, i := c.in, c.pos
	if i < len(in) && in[i] == '-' {
		i++
	}
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && in[i] >= '1' && in[i] <= '9':
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(in) && in[i] == '.' {
		i++
		if i >= len(in) || in[i] < '0' || in[i] > '9' {
			return false
		}
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || in[i] < '0' || in[i] > '9' {
			return false
		}
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	}
	c.pos = i
	return true
}

// stringToken returns the raw string token at c.pos, quotes included.
func (c *canonicalizer) stringToken() ([]byte, bool) {
	start := c.pos
	i := start + 1
	for i < len(c.in) {
		switch c.in[i] {
		case '"':
			c.pos = i + 1
			return c.in[start:c.pos], true
		case '\\':
			i += 2
		default:
			i++
		}
	}
	return nil, false
}

// plainString reports whether a raw string token is already in the form
// encoding/json writes: no escapes, no control characters, valid UTF-8, and
// none of U+2028 and U+2029, which encoding/json escapes.
func plainString(raw []byte) bool {
	body := raw[1 : len(raw)-1]
	for i := 0; i < len(body); {
		b := body[i]
		if b < utf8.RuneSelf {
			if b < 0x20 || b == '\\' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// appendCanonString appends a string token as encoding/json encodes the
// string it denotes (with HTML escaping off).
func appendCanonString(out, raw []byte, failed *bool) []byte {
	if plainString(raw) {
		return append(out, raw...)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		*failed = true
		return out
	}
	return appendEncodedString(out, s)
}

func appendEncodedString(out []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(out, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// decodeKey returns the string an escaped key token denotes.
func decodeKey(raw []byte, failed *bool) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		*failed = true
	}
	return s
}

func (c *canonicalizer) object(out []byte, active []fieldPath, depth int) []byte {
	c.pos++ // {
	var members []member
	// Member values are built in a scratch buffer, then copied out in key
	// order.
	scratch := scratchPool.Get().(*[]byte)
	buf := (*scratch)[:0]
	defer func() {
		*scratch = buf[:0]
		scratchPool.Put(scratch)
	}()
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return append(out, "{}"...)
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			c.fail()
			return out
		}
		raw, ok := c.stringToken()
		if !ok {
			c.fail()
			return out
		}
		plain := plainString(raw)
		var key string
		if plain {
			key = string(raw[1 : len(raw)-1])
		} else {
			key = decodeKey(raw, &c.failed)
			raw = nil
		}
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			c.fail()
			return out
		}
		c.pos++
		drop, child := selectMember(active, key)
		start := len(buf)
		buf = c.value(buf, child, depth+1)
		if c.failed {
			return out
		}
		if !drop {
			// A repeated key keeps its last value, as decoding into a map does.
			if i := slices.IndexFunc(members, func(m member) bool { return m.key == key }); i >= 0 {
				members = slices.Delete(members, i, i+1)
			}
			members = append(members, member{key: key, raw: raw, start: start, end: len(buf)})
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			c.fail()
			return out
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		c.fail()
		return out
	}
	slices.SortFunc(members, func(a, b member) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		if m.raw != nil {
			out = append(out, m.raw...)
		} else {
			out = appendEncodedString(out, m.key)
		}
		out = append(out, ':')
		out = append(out, buf[m.start:m.end]...)
	}
	return append(out, '}')
}

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (c *canonicalizer) array(out []byte, active []fieldPath, depth int) []byte {
	c.pos++ // [
	out = append(out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return append(out, ']')
	}
	for i := 0; ; i++ {
		var child []fieldPath
		if len(active) > 0 {
			child = selectElement(active, i)
		}
		out = c.value(out, child, depth+1)
		if c.failed {
			return out
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			c.fail()
			return out
		}
		if c.in[c.pos] == ',' {
			c.pos++
			out = append(out, ',')
			continue
		}
		if c.in[c.pos] == ']' {
			c.pos++
			return append(out, ']')
		}
		c.fail()
		return out
	}
}

// expand resolves leading "**" segments: a path "**.x" applies as "x" here
// and stays active, as "**.x", for every descendant.
func expand(paths []fieldPath, out []fieldPath) []fieldPath {
	for _, p := range paths {
		if len(p) == 0 {
			continue
		}
		if p[0] == "**" {
			out = append(out, p)
			out = expand([]fieldPath{p[1:]}, out)
			continue
		}
		out = append(out, p)
	}
	return out
}

// selectMember says whether the member key is removed and which paths apply
// inside its value. active is expanded; a "**" path in it carries itself
// into children.
func selectMember(active []fieldPath, key string) (drop bool, child []fieldPath) {
	for _, p := range active {
		if p[0] == "**" {
			child = append(child, p)
			continue
		}
		if p[0] != "*" && p[0] != key {
			continue
		}
		if len(p) == 1 {
			drop = true
			continue
		}
		child = append(child, p[1:])
	}
	if len(child) > 0 {
		child = expand(child, nil)
	}
	return drop, child
}

// selectElement is selectMember for array element i: elements themselves are
// never removed.
func selectElement(active []fieldPath, i int) []fieldPath {
	var child []fieldPath
	for _, p := range active {
		if p[0] == "**" {
			child = append(child, p)
			continue
		}
		if len(p) == 1 {
			continue
		}
		if p[0] != "*" {
			// As fieldPath.strip reads an index segment.
			if n, err := strconv.Atoi(p[0]); err != nil || n != i {
				continue
			}
		}
		child = append(child, p[1:])
	}
	if len(child) > 0 {
		child = expand(child, nil)
	}
	return child
}
