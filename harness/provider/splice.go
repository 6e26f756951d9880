package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Even with every message and tool pre-encoded (see Encoded), an SDK that
// encodes a request walks it by reflection and copies each pre-encoded
// element through its JSON compactor twice, on every call: a fifth of a
// replayed run's CPU time. A request is instead encoded as a shell whose
// long lists each hold one placeholder element, and the lists' elements,
// already encoded, are spliced in place of the placeholders; the SDK is
// handed the result as the request's JSON (param.SetJSON), so it still
// builds the request from the same parameters, and the adapters send that
// JSON as the body itself (option.WithRequestBody) when no client option
// but the extra body fields they can set again would change it.

// Hole returns the JSON of the placeholder element that stands for list k
// in a shell. Its key starts with a NUL character, which an SDK encodes
// escaped, and a placeholder is only taken where it is a list's one
// element, "[" and "]" included, which a string cannot hold unescaped.
func Hole(k int) json.RawMessage {
	return json.RawMessage(`{"\u0000dageval splice":` + strconv.Itoa(k) + `}`)
}

// Splice returns shell with the placeholder list of Hole(k) replaced by
// the list of lists[k]'s elements, which must be encoded as the SDK
// encodes them in a list. It reports false, and the shell is not to be
// used, when some placeholder does not appear exactly once or the SDK's
// compaction would change the shell's own JSON.
func Splice(shell []byte, lists [][][]byte, escapeHTML bool) ([]byte, bool) {
	if !Compacted(shell, escapeHTML) {
		return nil, false
	}
	type cut struct{ at, end, k int }
	cuts := make([]cut, 0, len(lists))
	size := len(shell)
	for k, elems := range lists {
		mark := append(append([]byte{'['}, Hole(k)...), ']')
		at := bytes.Index(shell, mark)
		if at < 0 || bytes.Contains(shell[at+len(mark):], mark) {
			return nil, false
		}
		cuts = append(cuts, cut{at, at + len(mark), k})
		for _, e := range elems {
			size += len(e) + 1
		}
	}
	// The lists are spliced in the order they appear in the shell.
	for i := 1; i < len(cuts); i++ {
		for j := i; j > 0 && cuts[j].at < cuts[j-1].at; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	out := make([]byte, 0, size)
	last := 0
	for _, c := range cuts {
		if c.at < last {
			return nil, false // placeholders cannot overlap
		}
		out = append(out, shell[last:c.at]...)
		out = append(out, '[')
		for i, e := range lists[c.k] {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, e...)
		}
		out = append(out, ']')
		last = c.end
	}
	return append(out, shell[last:]...), true
}

// Element is an SDK param that encodes itself and may have been given
// its JSON (param.Override).
type Element interface {
	Overrides() (any, bool)
	MarshalJSON() ([]byte, error)
}

// ListJSON returns the JSON of each element of ps as the SDK encodes it in
// a list: the JSON it was given by param.Override (which preEncode made
// sure the SDK sends unchanged), or else its own encoding, which must be
// unchanged by the SDK's compaction (see Compacted). It reports false when
// ps is empty or an element does not encode so.
func ListJSON[P Element](ps []P, escapeHTML bool) ([][]byte, bool) {
	if len(ps) == 0 {
		return nil, false
	}
	out := make([][]byte, len(ps))
	for i, p := range ps {
		if v, ok := p.Overrides(); ok {
			raw, isRaw := v.(json.RawMessage)
			if !isRaw {
				return nil, false
			}
			out[i] = raw
			continue
		}
		raw, err := p.MarshalJSON()
		if err != nil || !Compacted(raw, escapeHTML) {
			return nil, false
		}
		out[i] = raw
	}
	return out, true
}

// Compacted reports whether the SDKs' compaction of JSON they are given
// (param.SetJSON) leaves raw as it is: no space between tokens and, for an
// SDK that escapes HTML, none of the characters it escapes.
func Compacted(raw []byte, escapeHTML bool) bool {
	if escapeHTML && (bytes.ContainsAny(raw, "<>&") || bytes.ContainsRune(raw, '\u2028') || bytes.ContainsRune(raw, '\u2029')) {
		return false
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	return json.Compact(&buf, raw) == nil && bytes.Equal(buf.Bytes(), raw)
}

// PlainKeys reports whether every key of extra is a plain field name
// (letters, digits, _ and -), not a path: setting such a key on an empty
// object, as a client's options do to a body handed over whole, cannot
// fail where setting it on the encoded request would not.
func PlainKeys(extra map[string]any) bool {
	for k := range extra {
		if k == "" {
			return false
		}
		for _, c := range k {
			if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}
