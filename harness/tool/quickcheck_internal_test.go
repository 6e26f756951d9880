package tool

import (
	"encoding/json"
	"os"
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
		{"array", `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"}}}}`, true,
			[]string{`{"xs":[]}`, `{"xs":["a", "b"]}`, `{"xs":[ ]}`}},
		{"any array", `{"type":"object","properties":{"xs":{"type":"array"}}}`, true, []string{`{"xs":[1,"a",null,{}]}`}},
		{"enum", `{"type":"object","properties":{"m":{"type":"string","enum":["a","b","\u00e9"]}}}`, true, []string{`{"m":"a"}`, `{"m":"b"}`, `{"m":"é"}`}},
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}`, true,
			[]string{`{"o":{"n":1}}`}},
		{"number enum", `{"type":"object","properties":{"m":{"type":"integer","enum":[1,2]}}}`, false, nil},
		{"null enum", `{"type":"object","properties":{"m":{"type":"string","enum":null}}}`, false, nil},
		{"empty enum", `{"type":"object","properties":{"m":{"type":"string","enum":[]}}}`, false, nil},
		{"min items", `{"type":"object","properties":{"xs":{"type":"array","minItems":1}}}`, false, nil},
		{"items list", `{"type":"object","properties":{"xs":{"type":"array","items":[{"type":"string"}]}}}`, false, nil},
		{"open items", `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"object","additionalProperties":true}}}}`, false, nil},
		{"untyped", `{"properties":{"s":{"type":"string"}}}`, false, nil},
		{"pattern properties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, false, nil},
	}
	args := []string{
		`{}`, `null`, `[]`, `"x"`, `3`, `{"file_path":"/a.md"}`, `{"file_path":3}`, `{"file_path":null}`,
		`{"file_path":"/a","offset":1.5}`, `{"file_path":"/a","offset":1.0}`, `{"file_path":"/a","offset":1e2}`,
		`{"file_path":"/a","offset":"1"}`, `{"file_path":"/a","offset":100000000000000000000000}`,
		`{"file_path":"/a","file_path":4}`, `{"file_path":4,"file_path":"/a"}`, `{"n":3}`, `{"n":"3"}`, `{"n":3,"extra":1}`,
		`{"n":-0}`, `{"n":3,"ok":true}`, `{"n":3,"ok":"true"}`, `{"n":3,"ok":null}`, `{"xs":["a"]}`, `{"xs":[1]}`,
		`{"m":"a"}`, `{"m":"c"}`, `{"m":"\u0061"}`, `{"m":"A"}`, `{"m":1}`, `{"m":null}`, `{"m":["a"]}`, `{"m":"é"}`, `{"m":"\u00e9"}`,
		`{"xs":null}`, `{"xs":"a"}`, `{"xs":{}}`, `{"xs":["a",1]}`, `{"xs":[[]]}`,
		`{"o":{}}`, `{"o":{"n":1}}`, `{"o":{"n":1,"x":2}}`, `{"o":{"n":"1"}}`, `{"o":null}`, `{"o":[]}`, `{"o":{"n":1,"n":2}}`, `{"s":null}`, `{"s":"x"}`, `{"x1":"a"}`, `{"x1":1}`, ` { "n" : 7 } `,
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

// verdictSchema is the rubric grader's verdict schema
// (harness/middleware graderResponseSchema, which its tests hold to this
// copy): a list of criteria objects, the structured answer every graded
// eval cell checks.
func verdictSchema(t testing.TB) *Schema {
	t.Helper()
	raw, err := os.ReadFile("testdata/rubric_verdict_schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	if s.quick == nil {
		t.Fatal("the verdict schema has no quick check")
	}
	return s
}

// verdicts are grader verdicts, valid and not, and awkward JSON.
var verdicts = []string{
	`{"result":"satisfied","explanation":"ok","criteria":[{"name":"a","passed":true}]}`,
	`{"result":"needs_revision","explanation":"half","criteria":[{"name":"a","passed":true},{"name":"b","passed":false,"gap":"no citation"}]}`,
	`{"result":"failed","explanation":"","criteria":[]}`,
	` { "result" : "satisfied" , "explanation" : "spaced" , "criteria" : [ { "name" : "a" , "passed" : true } ] } `,
	`{"criteria":[{"passed":false,"name":"a","gap":"g","extra":[1,{"x":null}]}],"explanation":"reordered","result":"failed","note":"extra"}`,
	`{"result":"satisfied","explanation":"caf\u00e9 \ud83d\ude00","criteria":[{"name":"\"quoted\"\n","passed":true}]}`,
	`{"result":"satisfied","explanation":"ok","criteria":[{"name":"a","passed":true,"gap":""}]}`,
	"{\"result\":\"satisfied\",\"explanation\":\"bad \xff\",\"criteria\":[{\"name\":\"\xfe\",\"passed\":true}]}",
	`{"result":"sat\u0069sfied","explanation":"escaped enum","criteria":[]}`,
	`{"result":"Satisfied","explanation":"case","criteria":[]}`,
	`{"result":"unknown","explanation":"x","criteria":[]}`,
	`{"result":"satisfied","explanation":"x"}`,
	`{"result":"satisfied","criteria":[]}`,
	`{"explanation":"x","criteria":[]}`,
	`{"result":null,"explanation":"x","criteria":[]}`,
	`{"result":"satisfied","explanation":"x","criteria":null}`,
	`{"result":"satisfied","explanation":"x","criteria":{}}`,
	`{"result":"satisfied","explanation":"x","criteria":[null]}`,
	`{"result":"satisfied","explanation":"x","criteria":["a"]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a"}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"passed":true}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":"true"}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":1,"passed":true}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":true,"gap":5}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":true},{"name":"b"}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":true,"passed":1}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"n\u0061me":"a","passed":true}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[[{"name":"a","passed":true}]]}`,
	`{"result":"satisfied","result":"bogus","explanation":"x","criteria":[]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":true}],}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":true},]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":tru}]}`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":true}]`,
	`{"result":"satisfied","explanation":"x","criteria":[{"name":"a","passed":true}]} x`,
	`[{"result":"satisfied"}]`, `null`, `""`, `{}`,
}

// The quick check of the verdict schema never accepts what the general
// validator rejects, and accepts the verdicts graders write.
func TestQuickVerdictCheckAgreesWithTheValidator(t *testing.T) {
	s := verdictSchema(t)
	for i, a := range verdicts {
		var v any
		full := json.Unmarshal([]byte(a), &v) == nil && s.resolved.Validate(v) == nil
		quick := s.quick.valid(json.RawMessage(a))
		if quick && !full {
			t.Errorf("quick check accepts %s, the validator rejects it", a)
		}
		if wantQuick := i <= 7; quick != wantQuick {
			t.Errorf("quick check of %s = %v, want %v (validator: %v)", a, quick, wantQuick, full)
		}
	}
}

// FuzzQuickVerdictCheck holds the verdict schema's quick check to the
// general validator on any document.
func FuzzQuickVerdictCheck(f *testing.F) {
	for _, a := range verdicts {
		f.Add([]byte(a))
	}
	s := verdictSchema(f)
	f.Fuzz(func(t *testing.T, a []byte) {
		if !s.quick.valid(a) {
			return
		}
		var v any
		if err := json.Unmarshal(a, &v); err != nil {
			t.Fatalf("quick check accepts %q, which is not JSON: %v", a, err)
		}
		if err := s.resolved.Validate(v); err != nil {
			t.Fatalf("quick check accepts %q, the validator rejects it: %v", a, err)
		}
	})
}

// BenchmarkValidateVerdict measures checking a grader's verdict, as every
// graded eval cell does.
func BenchmarkValidateVerdict(b *testing.B) {
	raw, err := os.ReadFile("testdata/rubric_verdict_schema.json")
	if err != nil {
		b.Fatal(err)
	}
	s, err := ParseSchema(raw)
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"result":"satisfied","explanation":"The answer states the capital and cites the tool result.","criteria":[{"name":"correct","passed":true},{"name":"cites the source","passed":true}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}
