package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// DefaultIgnoredFields are request-body fields that may differ between two
// runs of the same conversation and therefore never take part in matching:
// per-user and per-run tags that say nothing about what the model is asked.
var DefaultIgnoredFields = []string{"metadata", "user", "prompt_cache_key", "safety_identifier"}

// Canon is how replay compares request bodies: as compact JSON with sorted
// keys and the ignored fields removed, so that key order, whitespace and
// per-run tags do not make an unchanged request miss.
type Canon struct {
	paths []fieldPath
	// sig identifies the ignore paths, for caching keys per Canon.
	sig string
}

// NewCanon ignores DefaultIgnoredFields and the extra paths. A path is
// dot-separated field names where "*" stands for any field or array index
// and a leading "**" for any depth: "temperature",
// "messages.*.content.*.cache_control", "**.cache_control".
func NewCanon(extra ...string) (*Canon, error) {
	paths, err := compileFieldPaths(append(slices.Clone(DefaultIgnoredFields), extra...))
	if err != nil {
		return nil, err
	}
	return &Canon{paths: paths, sig: strings.Join(extra, "\x00")}, nil
}

// Key is the string requests are matched on: compact JSON with sorted keys
// and ignored fields removed, or the raw body when it is not JSON.
func (c *Canon) Key(body []byte) string { return canonicalKey(body, c.paths) }

// Indent renders a body for a diff: indented canonical JSON, so that a
// changed field shows up as a changed line, or the raw text.
func (c *Canon) Indent(body []byte) string { return prettyBody(body, c.paths) }

// MatchQuery is the query string requests are matched on: sorted, without
// credentials (which are redacted in the cassette) and without Gemini's
// alt=sse (the streamed shape, which replay reads either way; see
// RoutePath).
func MatchQuery(u *url.URL) string {
	if u.RawQuery == "" {
		return ""
	}
	q := u.Query()
	for k := range q {
		if isSensitiveParam(k) {
			delete(q, k)
		}
	}
	routeQuery(u, q)
	return q.Encode()
}

// fieldPath is a compiled ignore path: dot-separated segments where "*"
// stands for any object key or array index and "**" for any number of levels.
type fieldPath []string

func compileFieldPaths(paths []string) ([]fieldPath, error) {
	out := make([]fieldPath, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			return nil, fmt.Errorf("empty ignore path")
		}
		segs := strings.Split(p, ".")
		for _, s := range segs {
			if s == "" {
				return nil, fmt.Errorf("ignore path %q has an empty segment", p)
			}
		}
		if segs[len(segs)-1] == "**" {
			return nil, fmt.Errorf("ignore path %q must end in a field name or *", p)
		}
		out = append(out, segs)
	}
	return out, nil
}

// strip deletes from v every object field that p selects.
func (p fieldPath) strip(v any) {
	if len(p) == 0 {
		return
	}
	seg := p[0]
	if seg == "**" {
		p[1:].strip(v)
		switch x := v.(type) {
		case map[string]any:
			for _, c := range x {
				p.strip(c)
			}
		case []any:
			for _, c := range x {
				p.strip(c)
			}
		}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if len(p) == 1 {
			if seg == "*" {
				clear(x)
			} else {
				delete(x, seg)
			}
			return
		}
		if seg == "*" {
			for _, c := range x {
				p[1:].strip(c)
			}
		} else if c, ok := x[seg]; ok {
			p[1:].strip(c)
		}
	case []any:
		if len(p) == 1 {
			return // array elements are never removed: order carries meaning
		}
		if seg == "*" {
			for _, c := range x {
				p[1:].strip(c)
			}
		} else if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(x) {
			p[1:].strip(x[i])
		}
	}
}

// canonicalBody parses a JSON body and removes ignored fields. ok is false
// when the body is not JSON; such bodies match byte for byte.
func canonicalBody(body []byte, ignore []fieldPath) (v any, ok bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers compare by their text: 1 and 1.0 are different requests
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if dec.More() {
		return nil, false
	}
	for _, p := range ignore {
		p.strip(v)
	}
	return v, true
}

// canonicalKey is the string requests are matched on: compact JSON with
// sorted keys and ignored fields removed, or the raw body when it is not JSON.
func canonicalKey(body []byte, ignore []fieldPath) string {
	if k, ok := canonicalKeyFast(body, ignore); ok {
		return k
	}
	return canonicalKeySlow(body, ignore)
}

// canonicalKeySlow is canonicalKey by decoding into generic values and
// encoding them again; canonicalKeyFast must agree with it byte for byte.
func canonicalKeySlow(body []byte, ignore []fieldPath) string {
	v, ok := canonicalBody(body, ignore)
	if !ok {
		return string(body)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(body)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// prettyBody renders a body for a diff: indented canonical JSON so that a
// changed field shows up as a changed line, or the raw text.
func prettyBody(body []byte, ignore []fieldPath) string {
	v, ok := canonicalBody(body, ignore)
	if !ok {
		s := string(body)
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(body) + "\n"
	}
	return b.String()
}
