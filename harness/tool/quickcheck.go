package tool

import (
	"encoding/json"
	"slices"
)

// quickCheck accepts the arguments of the common flat schemas (an object
// of strings, integers, numbers and booleans, some required) without the
// general validator, which decodes into interface values and walks the
// schema; that was most of a small tool call's cost. It only ever says
// "valid" where the general validator would: anything it is unsure of
// goes to the general validator, which also words the errors.
type quickCheck struct {
	props    map[string]string // property → JSON type
	required []string
	closed   bool // additionalProperties is false
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
	q := &quickCheck{props: map[string]string{}}
	if ap, ok := doc["additionalProperties"]; ok {
		if string(ap) != "false" {
			return nil
		}
		q.closed = true
	}
	if r, ok := doc["required"]; ok && json.Unmarshal(r, &q.required) != nil {
		return nil
	}
	var props map[string]map[string]json.RawMessage
	if p, ok := doc["properties"]; ok && json.Unmarshal(p, &props) != nil {
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
		q.props[name] = t
	}
	for _, r := range q.required {
		if _, ok := q.props[r]; !ok {
			return nil
		}
	}
	return q
}

// valid reports whether args surely match the schema; false means "ask
// the general validator".
func (q *quickCheck) valid(args json.RawMessage) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return false
	}
	for k, v := range obj {
		t, known := q.props[k]
		if !known {
			if q.closed {
				return false
			}
			continue
		}
		if !quickType(t, v) {
			return false
		}
	}
	for _, r := range q.required {
		if _, ok := obj[r]; !ok {
			return false
		}
	}
	return true
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
