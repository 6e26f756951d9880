package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

var flatSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":"x","b":true,"c":null,"d":-0.5e+3}`,
	`{"file_path":"/notes/1.md","content":"# Step 1\n\nline\t\"q\" \\ \/"}`,
	`{"a":"\u00e9\ud83d\ude00"}`, `{"a":"é"}`, "{\"a\":\"\xff\"}", `{"a":"\x"}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":1,}`,
	`{,}`, `{"a" 1}`, `{"a":1}x`, `{"a":1} `, `{"a":{"b":1}}`, `{"a":[1]}`, `[1]`, `"a"`,
	"{\"a\":\"\n\"}", `{"a":"\u12"}`, `{"a":"x`, `{"a":1`, `{"a"`, `{`, ``, `{"a":1}{}`,
	`{"a":9223372036854775807}`, `{"a":9223372036854775808}`, `{"a":-9223372036854775808}`,
}

// FuzzFlatObject holds FlatObject to json.Valid: whatever it accepts is
// valid, and whatever valid object it sees it accepts.
func FuzzFlatObject(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var keys, vals [][]byte
		ok := FlatObject(b, func(k, v []byte) bool {
			keys, vals = append(keys, k), append(vals, v)
			return true
		})
		valid := json.Valid(b)
		if ok && !valid {
			t.Fatalf("FlatObject accepts %q, json.Valid rejects it", b)
		}
		if !ok && valid && object(b) {
			t.Fatalf("FlatObject rejects the valid object %q", b)
		}
		if !ok {
			return
		}
		for i := range keys {
			var k string
			if err := json.Unmarshal(keys[i], &k); err != nil {
				t.Fatalf("key %q of %q does not decode: %v", keys[i], b, err)
			}
			if !json.Valid(vals[i]) {
				t.Fatalf("value %q of %q is not valid on its own", vals[i], b)
			}
		}
	})
}

// object reports whether a valid document is an object.
func object(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// FuzzUnquote holds Unquote to encoding/json: where it answers, it answers
// what json.Unmarshal decodes, and it answers for every escape but \u.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"a\nb\t\"\\\/\b\f\r"`, `"é\n"`, `"\u0041"`, "\"\xff\"", `"\x"`, `"a`, `x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		end, valid := validString(lit, 0)
		if len(lit) == 0 || lit[0] != '"' || !valid || end != len(lit) {
			return // Unquote's input is a valid literal
		}
		got, ok := Unquote(lit)
		var want string
		if err := json.Unmarshal(lit, &want); err != nil {
			t.Fatalf("validString accepts %q, json.Unmarshal rejects it: %v", lit, err)
		}
		if ok && got != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json decodes %q", lit, got, want)
		}
		if !ok && !bytes.Contains(lit, []byte(`\u`)) && json.Valid(lit) && bytes.Equal([]byte(want), lit[1:len(lit)-1]) {
			t.Fatalf("Unquote(%q) declined a literal without escapes that decodes to itself", lit)
		}
	})
}

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{{"0", 0, true}, {"-12", -12, true}, {"1.0", 0, false}, {"1e2", 0, false}, {"9223372036854775808", 0, false}} {
		var want int
		err := json.Unmarshal([]byte(tc.in), &want)
		got, ok := Int([]byte(tc.in))
		if ok != tc.ok || got != tc.want || ok != (err == nil) || ok && got != want {
			t.Errorf("Int(%s) = %d, %v; want %d, %v (encoding/json: %d, %v)", tc.in, got, ok, tc.want, tc.ok, want, err)
		}
	}
}
