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
// server scans it once per call, and the rest of the body (tools, system
// prompt), which repeats too, is decoded once per distinct remainder
// through skeletons: v gets a shallow copy of the kept value, whose
// pointers and slices it shares and must not modify. ok is false when the
// body does not have that plain shape (or is invalid in any way): the
// caller then decodes it whole, which gives the error it always gave.
// skeleton is the body with the array emptied, for the caller to key what
// it derives from the rest of the request alone. known, when not nil,
// says how many of the elements the array starts with are known to be
// valid JSON (they equal, byte for byte, elements of an earlier valid
// request), which are then not looked up again. The body's entry in
// seenBodies, when it has one, says how an earlier body it starts like
// was split, which spares scanning again the elements they share, and
// which earlier body it ends like: when that one was taken apart and
// what surrounds the array is the same bytes in both, its skeleton and
// value are this body's too, which spares scanning, copying and looking
// up again the tools and settings that every call of a run repeats.
func decodeBody[T any](skeletons *memo[T], body []byte, v *T, key string, known func([]json.RawMessage) int) (elems []json.RawMessage, array, skeleton []byte, ok bool) {
	seen := seenBodies.find(body)
	var hint *bodySplit
	alike := 0
	if seen != nil && seen.hint != nil && seen.hint.key == key {
		hint, alike = seen.hint, seen.alike
	}
	var endsLike *bodyDecoded
	endAlike := 0
	if seen != nil && seen.endsLike != nil && seen.endsLike.key == key {
		endsLike, endAlike = seen.endsLike, seen.endAlike
	}
	start, end, elems, endShared, ok := historyMember(body, key, known, hint, alike, endsLike, endAlike)
	if !ok {
		return nil, nil, nil, false
	}
	if seen != nil {
		split := &bodySplit{key: key, start: start, bounds: make([][2]int, len(elems))}
		for i, el := range elems {
			s := cap(body) - cap(el) // el's offset in body
			split.bounds[i] = [2]int{s, s + len(el)}
		}
		seen.split.Store(split)
	}
	if endShared && bytes.Equal(body[:start], endsLike.prefix) {
		// The same bytes around the array as endsLike's: the same
		// skeleton, decoded to the same value.
		if kept, isT := endsLike.value.(T); isT {
			*v = kept
			if seen != nil {
				seen.decoded.Store(&bodyDecoded{key: key, end: end, size: len(body), prefix: body[:start], skeleton: endsLike.skeleton, value: kept})
			}
			return elems, body[start:end], endsLike.skeleton, true
		}
	}
	skeleton = make([]byte, 0, len(body)-(end-start)+2)
	skeleton = append(skeleton, body[:start]...)
	skeleton = append(skeleton, "[]"...)
	skeleton = append(skeleton, body[end:]...)
	if strictDecodeMemo(skeletons, skeleton, v, "request body") != nil {
		return nil, nil, nil, false
	}
	if seen != nil {
		seen.decoded.Store(&bodyDecoded{key: key, end: end, size: len(body), prefix: body[:start], skeleton: skeleton, value: *v})
	}
	return elems, body[start:end], skeleton, true
}

// historyMember finds the value of the top-level member key of the object
// in b, which must be an array, and splits it into its elements in the
// same scan: its bounds and elements, and false unless b is an object
// whose keys need no unescaping and that has key once and no other key
// that encoding/json would match to the same field (it matches
// case-insensitively), and the array is valid.
//
// hint, when not nil, is how historyMember split an earlier valid body
// that b starts with alike for alike bytes: the elements of its array that
// lie, with the separator after them, within those bytes are b's too, and
// valid.
//
// endsLike, when not nil, is how decodeBody took apart a valid body that
// b ends with alike for endAlike bytes: when those hold all that follows
// b's array and as much follows endsLike's, what follows is the same and
// valid, and is not scanned again (endShared).
func historyMember(b []byte, key string, known func([]json.RawMessage) int, hint *bodySplit, alike int, endsLike *bodyDecoded, endAlike int) (start, end int, elems []json.RawMessage, endShared, ok bool) {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, nil, false, false
	}
	found := false
	for i++; ; {
		i = jsonscan.SkipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return start, end, elems, false, found
		}
		if i >= len(b) || b[i] != '"' {
			return 0, 0, nil, false, false
		}
		ke := jsonscan.StringEnd(b, i)
		k := b[i+1 : ke-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			return 0, 0, nil, false, false
		}
		i = jsonscan.SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, nil, false, false
		}
		vs := jsonscan.SkipSpace(b, i+1)
		var ve int
		if bytes.EqualFold(k, []byte(key)) {
			if found || string(k) != key {
				return 0, 0, nil, false, false
			}
			var valid bool
			if hint != nil && hint.start != vs {
				hint = nil
			}
			if ve, elems, valid = splitArray(b, vs, known, hint, alike); !valid {
				return 0, 0, nil, false, false
			}
			found, start, end = true, vs, ve
			if endsLike != nil && len(b)-ve <= endAlike && len(b)-ve == endsLike.size-endsLike.end {
				// From here on b is endsLike from the end of its array,
				// which the scan of endsLike went through to a valid end.
				return start, end, elems, true, true
			}
		} else if ve = jsonscan.ValueEnd(b, vs); ve <= vs {
			return 0, 0, nil, false, false
		}
		i = jsonscan.SkipSpace(b, ve)
		switch {
		case i < len(b) && b[i] == ',':
			i++
		case i < len(b) && b[i] == '}':
		default:
			return 0, 0, nil, false, false
		}
	}
}

// splitArray returns where the JSON array starting at b[i] ends and its
// elements, each checked to be valid JSON (but the first known(elems),
// when known is not nil), and false when there is no valid array there.
// An element that equals a valid one is valid and bounded where the scan
// bounds it, so the scan's own checks of the separators are enough for
// those.
//
// hint, when not nil, is how an earlier valid body b starts like for alike
// bytes split its array, which starts at b[i] too (see historyMember).
func splitArray(b []byte, i int, known func([]json.RawMessage) int, hint *bodySplit, alike int) (end int, elems []json.RawMessage, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return 0, nil, false
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, []json.RawMessage{}, true
	}
	shared := 0 // the elements taken from hint
	if hint != nil {
		// An element is taken when the next one starts within the bytes
		// alike: then it, and the separator after it, are the same.
		for shared+1 < len(hint.bounds) && hint.bounds[shared+1][0] < alike {
			shared++
		}
		if shared > 0 {
			elems = make([]json.RawMessage, shared, len(hint.bounds)+1)
			for k := range shared {
				elems[k] = json.RawMessage(b[hint.bounds[k][0]:hint.bounds[k][1]])
			}
			i = hint.bounds[shared][0]
		}
	}
	for {
		vs := i
		ve := jsonscan.ValueEnd(b, vs)
		if ve <= vs || ve >= len(b) {
			return 0, nil, false
		}
		elems = append(elems, json.RawMessage(b[vs:ve]))
		i = jsonscan.SkipSpace(b, ve)
		switch {
		case i < len(b) && b[i] == ',':
			i = jsonscan.SkipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			k := 0
			if known != nil {
				k = known(elems)
			}
			k = max(k, shared)
			for _, el := range elems[k:] {
				valid, _ := validJSON.decode(el, func() (bool, *apiError) { return json.Valid(el), nil })
				if !valid {
					return 0, nil, false
				}
			}
			return i + 1, elems, true
		default:
			return 0, nil, false
		}
	}
}
