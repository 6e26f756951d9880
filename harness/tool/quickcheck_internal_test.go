package tool

import (
	"encoding/json"
	"testing"
)

// TestQuickCheckNeverAcceptsWhatTheValidatorRejects runs the quick check
// and the general validator over schemas and argument documents, valid and
// not: quick acceptance must imply acceptance, and the everyday arguments
// of flat schemas must take the quick path.
func TestQuickCheckNeverAcceptsWhatTheValidatorRejects(t *testing.T) {
	schemas := []struct {
		name  string
		raw   string
		flat  bool
		quick []string // arguments the quick path must accept
	}{
		{"read_file", `{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path."},"offset":{"type":"integer","default":0},"limit":{"type":"integer","default":100}},"required":["file_path"]}`, true,
			[]string{`{"file_path":"/a.md"}`, `{"file_path":"/a.md","offset":10,"limit":-1}`, `{"file_path":"/a","extra":[1,{"x":null}]}`}},
		{"closed", `{"type":"object","properties":{"n":{"type":"number"},"ok":{"type":"boolean"}},"required":["n"],"additionalProperties":false}`, true,
			[]string{`{"n":3}`, `{"n":-12,"ok":false}`}},
		{"no properties", `{"type":"object","properties":{},"additionalProperties":false}`, true, []string{`{}`}},
		{"minimum", `{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}`, false, nil},
		{"nullable", `{"type":"object","properties":{"s":{"type":["string","null"]}}}`, false, nil},
		{"array", `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"}}}}`, false, nil},
		{"enum", `{"type":"object","properties":{"m":{"type":"string","enum":["a","b"]}}}`, false, nil},
		{"untyped", `{"properties":{"s":{"type":"string"}}}`, false, nil},
		{"pattern properties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, false, nil},
	}
	args := []string{
		`{}`, `null`, `[]`, `"x"`, `3`, `{"file_path":"/a.md"}`, `{"file_path":3}`, `{"file_path":null}`,
		`{"file_path":"/a","offset":1.5}`, `{"file_path":"/a","offset":1.0}`, `{"file_path":"/a","offset":1e2}`,
		`{"file_path":"/a","offset":"1"}`, `{"file_path":"/a","offset":100000000000000000000000}`,
		`{"file_path":"/a","file_path":4}`, `{"file_path":4,"file_path":"/a"}`, `{"n":3}`, `{"n":"3"}`, `{"n":3,"extra":1}`,
		`{"n":-0}`, `{"n":3,"ok":true}`, `{"n":3,"ok":"true"}`, `{"n":3,"ok":null}`, `{"xs":["a"]}`, `{"xs":[1]}`,
		`{"m":"a"}`, `{"m":"c"}`, `{"s":null}`, `{"s":"x"}`, `{"x1":"a"}`, `{"x1":1}`, ` { "n" : 7 } `,
	}
	for _, sc := range schemas {
		s, err := parseSchema(json.RawMessage(sc.raw))
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		if (s.quick != nil) != sc.flat {
			t.Fatalf("%s: quick check built = %v, want %v", sc.name, s.quick != nil, sc.flat)
		}
		if s.quick == nil {
			continue
		}
		for _, a := range append(args, sc.quick...) {
			var v any
			full := json.Unmarshal([]byte(a), &v) == nil && s.resolved.Validate(v) == nil
			if s.quick.valid(json.RawMessage(a)) && !full {
				t.Errorf("%s: quick check accepts %s, the validator rejects it", sc.name, a)
			}
		}
		for _, a := range sc.quick {
			if !s.quick.valid(json.RawMessage(a)) {
				t.Errorf("%s: %s should take the quick path", sc.name, a)
			}
		}
	}
}
