package tool

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/dageval/dageval/internal/jsonscan"
)

// quickCheck accepts the arguments of the common schemas (an object of
// strings, some from an enum, integers, numbers, booleans, lists of these
// and objects like it, some required) without the general validator, which
// decodes into interface values and walks the schema; that was most of a
// small tool call's cost, and of checking a grader's verdict (a list of
// criteria objects). It only ever says "valid" where the general validator
// would: anything it is unsure of goes to the general validator, which
// also words the errors.
type quickCheck struct {
	names    []string    // properties
	props    []quickProp // what their values must be
	required uint64      // bit i: names[i] is required
	closed   bool        // additionalProperties is false
}

// quickProp is what quickCheck knows a property's value must be.
type quickProp struct {
	typ   string      // its JSON type: one of quickTypes, "array" or "object"
	enum  []string    // for a string, the values it may take; nil for any
	items *quickProp  // for an array, what its elements must be; nil for anything
	obj   *quickCheck // for an object, its members
}

// Keywords a schema may use, beyond type and properties: the rest
// constrain values in ways quickCheck does not check.
var (
	quickSchemaKeys   = []string{"type", "properties", "required", "additionalProperties", "description", "title"}
	quickPropertyKeys = []string{"type", "description", "title", "default"}
	quickStringKeys   = []string{"type", "description", "title", "default", "enum"}
	quickArrayKeys    = []string{"type", "description", "title", "items"}
	quickTypes        = []string{"string", "integer", "number", "boolean"}
)

// newQuickCheck returns the check for an object schema document, or nil.
func newQuickCheck(raw json.RawMessage) *quickCheck {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		return nil
	}
	for k := range doc {
		if !slices.Contains(quickSchemaKeys, k) {
			return nil
		}
	}
	var typ string
	if json.Unmarshal(doc["type"], &typ) != nil || typ != "object" {
		return nil
	}
	q := &quickCheck{}
	if ap, ok := doc["additionalProperties"]; ok {
		if string(ap) != "false" {
			return nil
		}
		q.closed = true
	}
	var required []string
	if r, ok := doc["required"]; ok && json.Unmarshal(r, &required) != nil {
		return nil
	}
	var props map[string]json.RawMessage
	if p, ok := doc["properties"]; ok && json.Unmarshal(p, &props) != nil {
		return nil
	}
	if len(props) > 64 {
		return nil
	}
	for name, raw := range props {
		p, ok := newQuickProp(raw)
		if !ok {
			return nil
		}
		q.names = append(q.names, name)
		q.props = append(q.props, p)
	}
	for _, r := range required {
		i := slices.Index(q.names, r)
		if i < 0 {
			return nil
		}
		q.required |= 1 << i
	}
	return q
}

// newQuickProp returns what the property schema raw asks of a value, or
// false when quickCheck cannot check it.
func newQuickProp(raw json.RawMessage) (quickProp, bool) {
	var prop map[string]json.RawMessage
	if json.Unmarshal(raw, &prop) != nil || prop == nil {
		return quickProp{}, false
	}
	var t string
	if json.Unmarshal(prop["type"], &t) != nil {
		return quickProp{}, false
	}
	p := quickProp{typ: t}
	keys := quickPropertyKeys
	switch {
	case t == "object":
		p.obj = newQuickCheck(raw)
		return p, p.obj != nil
	case t == "array":
		keys = quickArrayKeys
		if items, ok := prop["items"]; ok {
			ip, ok := newQuickProp(items)
			if !ok {
				return quickProp{}, false
			}
			p.items = &ip
		}
	case t == "string":
		keys = quickStringKeys
		if e, ok := prop["enum"]; ok {
			// Only a non-empty list of strings: the validator reads any
			// other enum (null, numbers) its own way.
			if json.Unmarshal(e, &p.enum) != nil || len(p.enum) == 0 {
				return quickProp{}, false
			}
		}
	case !slices.Contains(quickTypes, t):
		return quickProp{}, false
	}
	for k := range prop {
		if !slices.Contains(keys, k) {
			return quickProp{}, false
		}
	}
	return p, true
}

// valid reports whether args surely match the schema; false means "ask
// the general validator". It reads args in place, in one pass that also
// checks that they are JSON, without decoding (nested objects and lists
// cost a second pass each, still far from decoding them).
func (q *quickCheck) valid(args json.RawMessage) bool {
	var seen uint64
	ok := jsonscan.FlatObject(args, func(key, value []byte) bool {
		key = key[1 : len(key)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // a key the validator would unescape
		}
		k := slices.IndexFunc(q.names, func(n string) bool { return n == string(key) })
		if k < 0 {
			return !q.closed
		}
		if seen&(1<<k) != 0 {
			return false // repeated: the validator sees the last one only
		}
		seen |= 1 << k
		return q.props[k].valid(value)
	})
	return ok && seen&q.required == q.required
}

// valid reports whether a valid JSON value surely is what p asks.
func (p *quickProp) valid(v []byte) bool {
	switch p.typ {
	case "object":
		return p.obj.valid(v)
	case "array":
		return v[0] == '[' && (p.items == nil || eachElement(v, p.items.valid))
	case "string":
		if v[0] != '"' {
			return false
		}
		if p.enum == nil {
			return true
		}
		s, ok := jsonscan.Unquote(v) // false for \u escapes: the validator decides
		return ok && slices.Contains(p.enum, s)
	}
	return quickType(p.typ, v)
}

// eachElement reports whether fn holds for each element of the valid
// JSON list v.
func eachElement(v []byte, fn func([]byte) bool) bool {
	i := jsonscan.SkipSpace(v, 1)
	for i < len(v) && v[i] != ']' {
		end := jsonscan.ValueEnd(v, i)
		if !fn(v[i:end]) {
			return false
		}
		i = jsonscan.SkipSpace(v, end)
		if i < len(v) && v[i] == ',' {
			i = jsonscan.SkipSpace(v, i+1)
		}
	}
	return true
}

// quickType reports whether a valid JSON value surely has the scalar type;
// long or unusual numbers are left to the general validator, which reads
// them as float64.
func quickType(t string, v json.RawMessage) bool {
	switch t {
	case "string":
		return v[0] == '"'
	case "boolean":
		return v[0] == 't' || v[0] == 'f'
	case "integer", "number":
		if len(v) > 15 {
			return false
		}
		for i, c := range v {
			if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
				return false
			}
		}
		return true
	}
	return false
}
