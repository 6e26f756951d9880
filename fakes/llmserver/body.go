package llmserver

import (
	"bytes"
	"encoding/json"

	"github.com/dageval/dageval/internal/jsonscan"
)

// validJSON keeps which request pieces (history items) are valid JSON.
var validJSON memo[bool]

// decodeBody is strictDecode(body, v, "request body") for a request whose
// member key holds the conversation as an array: the other members are
// decoded strictly from the body with that array left out, and the
// array's elements, each checked as valid JSON once (validJSON), are
// returned for the caller to put where the full decoding would have. The
// history is most of the body and repeats from call to call, so the
// server no longer scans all of it twice per call. ok is false when the
// body does not have that plain shape (or is invalid in any way): the
// caller then decodes it whole, which gives the error it always gave.
func decodeBody(body []byte, v any, key string) (elems []json.RawMessage, array []byte, ok bool) {
	start, end, ok := memberValue(body, key)
	if !ok || body[start] != '[' {
		return nil, nil, false
	}
	elems, ok = splitArray(body[start:end])
	if !ok {
		return nil, nil, false
	}
	skeleton := make([]byte, 0, len(body)-(end-start)+2)
	skeleton = append(skeleton, body[:start]...)
	skeleton = append(skeleton, "[]"...)
	skeleton = append(skeleton, body[end:]...)
	if strictDecode(skeleton, v, "request body") != nil {
		return nil, nil, false
	}
	return elems, body[start:end], true
}

// memberValue finds the value of the top-level member key of the object
// in b: its bounds, and false unless b is an object whose keys need no
// unescaping and that has key once and no other key that encoding/json
// would match to the same field (it matches case-insensitively).
func memberValue(b []byte, key string) (start, end int, ok bool) {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	found := false
	for i++; ; {
		i = jsonscan.SkipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return start, end, found
		}
		if i >= len(b) || b[i] != '"' {
			return 0, 0, false
		}
		ke := jsonscan.StringEnd(b, i)
		k := b[i+1 : ke-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			return 0, 0, false
		}
		i = jsonscan.SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		vs := jsonscan.SkipSpace(b, i+1)
		ve := jsonscan.ValueEnd(b, vs)
		if ve <= vs {
			return 0, 0, false
		}
		if bytes.EqualFold(k, []byte(key)) {
			if found || string(k) != key {
				return 0, 0, false
			}
			found, start, end = true, vs, ve
		}
		i = jsonscan.SkipSpace(b, ve)
		switch {
		case i < len(b) && b[i] == ',':
			i++
		case i < len(b) && b[i] == '}':
		default:
			return 0, 0, false
		}
	}
}

// splitArray returns the elements of the JSON array a, each checked to be
// valid JSON, and false when a is not a valid array.
func splitArray(a []byte) ([]json.RawMessage, bool) {
	if len(a) < 2 || a[0] != '[' || a[len(a)-1] != ']' {
		return nil, false
	}
	var out []json.RawMessage
	i := jsonscan.SkipSpace(a, 1)
	if a[i] == ']' {
		return []json.RawMessage{}, i == len(a)-1
	}
	for {
		vs := i
		ve := jsonscan.ValueEnd(a, vs)
		if ve <= vs || ve > len(a)-1 {
			return nil, false
		}
		el := a[vs:ve]
		valid, _ := validJSON.decode(el, func() (bool, *apiError) { return json.Valid(el), nil })
		if !valid {
			return nil, false
		}
		out = append(out, json.RawMessage(el))
		i = jsonscan.SkipSpace(a, ve)
		switch {
		case a[i] == ',':
			i = jsonscan.SkipSpace(a, i+1)
		case a[i] == ']' && i == len(a)-1:
			return out, true
		default:
			return nil, false
		}
	}
}
