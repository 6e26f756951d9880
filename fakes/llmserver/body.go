package llmserver

import (
	"bytes"
	"encoding/json"
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
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	found := false
	for i++; ; {
		i = skipWS(b, i)
		if i < len(b) && b[i] == '}' {
			return start, end, found
		}
		if i >= len(b) || b[i] != '"' {
			return 0, 0, false
		}
		ke := stringEnd(b, i)
		k := b[i+1 : ke-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			return 0, 0, false
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		vs := skipWS(b, i+1)
		ve := valueEnd(b, vs)
		if ve <= vs {
			return 0, 0, false
		}
		if bytes.EqualFold(k, []byte(key)) {
			if found || string(k) != key {
				return 0, 0, false
			}
			found, start, end = true, vs, ve
		}
		i = skipWS(b, ve)
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
	i := skipWS(a, 1)
	if a[i] == ']' {
		return []json.RawMessage{}, i == len(a)-1
	}
	for {
		vs := i
		ve := valueEnd(a, vs)
		if ve <= vs || ve > len(a)-1 {
			return nil, false
		}
		el := a[vs:ve]
		valid, _ := validJSON.decode(el, func() (bool, *apiError) { return json.Valid(el), nil })
		if !valid {
			return nil, false
		}
		out = append(out, json.RawMessage(el))
		i = skipWS(a, ve)
		switch {
		case a[i] == ',':
			i = skipWS(a, i+1)
		case a[i] == ']' && i == len(a)-1:
			return out, true
		default:
			return nil, false
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string literal at i.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the value at i, assuming it is
// valid; callers check what they take with json.Valid or a decoder.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
