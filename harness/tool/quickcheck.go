package tool

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/dageval/dageval/internal/jsonscan"
)

// quickCheck accepts the arguments of the common flat schemas (an object
// of strings, integers, numbers and booleans, some required) without the
// general validator, which decodes into interface values and walks the
// schema; that was most of a small tool call's cost. It only ever says
// "valid" where the general validator would: anything it is unsure of
// goes to the general validator, which also words the errors.
type quickCheck struct {
	names    []string // properties
	types    []string // their JSON types
	required uint64   // bit i: names[i] is required
	closed   bool     // additionalProperties is false
}

// Keywords a flat schema may use, beyond type and properties: the rest
// constrain values in ways quickCheck does not check.
var (
	quickSchemaKeys   = []string{"type", "properties", "required", "additionalProperties", "description", "title"}
	quickPropertyKeys = []string{"type", "description", "title", "default"}
	quickTypes        = []string{"string", "integer", "number", "boolean"}
)

// newQuickCheck returns the check for a flat schema document, or nil.
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
	var props map[string]map[string]json.RawMessage
	if p, ok := doc["properties"]; ok && json.Unmarshal(p, &props) != nil {
		return nil
	}
	if len(props) > 64 {
		return nil
	}
	for name, prop := range props {
		for k := range prop {
			if !slices.Contains(quickPropertyKeys, k) {
				return nil
			}
		}
		var t string
		if json.Unmarshal(prop["type"], &t) != nil || !slices.Contains(quickTypes, t) {
			return nil
		}
		q.names = append(q.names, name)
		q.types = append(q.types, t)
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

// valid reports whether args surely match the schema; false means "ask
// the general validator". It reads args in place, in one pass that also
// checks that they are JSON, without decoding.
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
		return quickType(q.types[k], value)
	})
	return ok && seen&q.required == q.required
}

// quickType reports whether a valid JSON value surely has the type; long
// or unusual numbers are left to the general validator, which reads them
// as float64.
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
