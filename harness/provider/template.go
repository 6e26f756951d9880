package provider

import (
	"bytes"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Each new message of a run is encoded once (see Encoded), but through
// the SDK's reflection-driven encoder, which for a replayed or local run
// was a sixth of its CPU time: it walks the same few shapes of param (a
// text block, a tool call, a tool result) over and over, and what varies
// is only their strings. A Template is the SDK's encoding of a param of
// one shape built with slot markers for its strings, made once per shape;
// a message of that shape is then encoded by writing its strings into the
// slots the way the SDK's encoder writes strings, so the result is byte
// for byte the SDK's encoding of the same param.

// Slot returns the marker that stands for string k of a template's param.
// It starts with a NUL character, which the SDKs encode escaped, so no
// string of a request encodes to a slot's JSON.
func Slot(k int) string { return "\x00dageval slot " + strconv.Itoa(k) }

// A Template is an SDK's encoding of a param whose strings are slots, cut
// at the slots. It is immutable.
type Template struct {
	lits       [][]byte // the JSON between slots, one more than slots
	slots      []int    // which slot each gap holds
	escapeHTML bool
	size       int
}

// NewTemplate cuts enc, an SDK's encoding of a param built with Slot(0)
// to Slot(n-1) for its strings, at each slot's quoted JSON, each of which
// must appear exactly once; the rest must be unchanged by the SDK's
// compaction (see Compacted). It reports false otherwise.
func NewTemplate(enc []byte, n int, escapeHTML bool) (*Template, bool) {
	if !Compacted(enc, escapeHTML) {
		return nil, false
	}
	type cut struct{ at, end, k int }
	cuts := make([]cut, 0, n)
	for k := range n {
		mark := appendString(nil, Slot(k), escapeHTML)
		at := bytes.Index(enc, mark)
		if at < 0 || bytes.Contains(enc[at+len(mark):], mark) {
			return nil, false
		}
		cuts = append(cuts, cut{at, at + len(mark), k})
	}
	for i := 1; i < len(cuts); i++ {
		for j := i; j > 0 && cuts[j].at < cuts[j-1].at; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	t := &Template{escapeHTML: escapeHTML, size: len(enc)}
	last := 0
	for _, c := range cuts {
		t.lits = append(t.lits, enc[last:c.at])
		t.slots = append(t.slots, c.k)
		last = c.end
	}
	t.lits = append(t.lits, enc[last:])
	return t, true
}

// Fill returns the template's JSON with slot k holding vals[k], encoded as
// the SDK encodes a string, or, when bit k of raw is set, written as it is
// (JSON that must be unchanged by the SDK's compaction, see Compacted). It
// reports false when a string is empty, which the SDKs may omit.
func (t *Template) Fill(vals []string, raw uint64) ([]byte, bool) {
	size := t.size
	for _, v := range vals {
		if v == "" {
			return nil, false
		}
		size += len(v) + len(v)/8 + 2
	}
	out := make([]byte, 0, size)
	for i, k := range t.slots {
		out = append(out, t.lits[i]...)
		if raw&(1<<k) != 0 {
			out = append(out, vals[k]...)
		} else {
			out = appendString(out, vals[k], t.escapeHTML)
		}
	}
	return append(out, t.lits[len(t.lits)-1]...), true
}

// Templates keeps the templates of an adapter's shapes of param, made at
// their first use.
type Templates[K comparable] struct {
	m sync.Map // K → *Template, nil when the shape cannot have one
}

// Get returns the template of shape k, made from encode (the SDK's
// encoding of the shape's param built with n slots) the first time; nil
// when the shape's encoding cannot be a template.
func (ts *Templates[K]) Get(k K, n int, escapeHTML bool, encode func() ([]byte, error)) *Template {
	if t, ok := ts.m.Load(k); ok {
		return t.(*Template)
	}
	var t *Template
	if enc, err := encode(); err == nil {
		if made, ok := NewTemplate(enc, n, escapeHTML); ok {
			t = made
		}
	}
	ts.m.Store(k, t)
	return t
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json, and the
// SDKs' copies of it, encode strings: invalid UTF-8 as U+FFFD, U+2028 and
// U+2029 escaped, control characters as \b, \f, \n, \r, \t or \u00XX, and
// with escapeHTML <, > and & as \u00XX.
func appendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
