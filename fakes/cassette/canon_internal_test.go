package cassette

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ignoreSets are the ignore configurations the fast canonicalizer is
// checked under: none, the defaults, and paths using every segment kind.
var ignoreSets = [][]string{
	nil,
	DefaultIgnoredFields,
	append([]string{"**.cache_control", "messages.*.content.1.text", "tools.*", "a.01.b", "**.**.x", "*"}, DefaultIgnoredFields...),
	{"messages.*.id", "**.signature", "system"},
}

func compiled(t testing.TB, paths []string) []fieldPath {
	t.Helper()
	ps, err := compileFieldPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// checkAgrees fails when the fast canonicalizer disagrees with the slow one
// on body under any ignore set, or refuses a body that it should handle.
func checkAgrees(t *testing.T, body string, mustHandle bool) {
	t.Helper()
	for _, set := range ignoreSets {
		ignore := compiled(t, set)
		want := canonicalKeySlow([]byte(body), ignore)
		got, ok := canonicalKeyFast([]byte(body), ignore)
		if ok && got != want {
			t.Errorf("ignore %v: body %q\nfast %s\nslow %s", set, body, got, want)
		}
		if !ok && mustHandle {
			t.Errorf("ignore %v: the fast path refused %q", set, body)
		}
		if k := canonicalKey([]byte(body), ignore); k != want {
			t.Errorf("ignore %v: canonicalKey(%q) = %s, want %s", set, body, k, want)
		}
	}
}

func TestFastCanonicalKeyAgreesWithTheSlowOne(t *testing.T) {
	handled := []string{
		`{}`, `[]`, `0`, `-0`, `1.5e+10`, `-12.0E-3`, `123456789012345678901234567890`, `true`, `false`, `null`, `""`,
		` { "b" : 1 , "a" : [ 1 , 2 , { "d" : null , "c" : true } ] } `,
		"{\"b\":1,\n\t\"a\":2}\r\n",
		`{"a":1,"a":2}`, `{"a":{"x":1},"b":0,"a":{"y":2}}`,
		`{"s":"tab\tnew\nline\"quote\\back\/slash\u0041\u00e9\ud83d\ude00"}`,
		`{"html":"<a href=\"x\">&amp;</a>"}`,
		`{"sep":"a` + "\u2028" + `b` + "\u2029" + `c","esc":"\u2028"}`,
		`{"é":1,"e":2,"\u00e8":3,"Z":4,"a b":5,"\u0000k":6}`,
		`{"bad utf8":"` + "\xff\xfe" + `"}`,
		`{"replacement":"` + "\uFFFD" + `"}`,
		`{"metadata":{"user_id":"u1"},"user":"x","model":"m","prompt_cache_key":"k","safety_identifier":"s"}`,
		`{"messages":[{"id":"1","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","signature":"s"}]}],"system":"x"}`,
		`{"a":[{"b":1},{"b":2,"c":3}],"x":{"x":{"x":1}},"tools":[{"name":"t"}]}`,
		`[{"metadata":1},{"user":2}]`,
		`{"deep":` + strings.Repeat(`[`, 100) + `1` + strings.Repeat(`]`, 100) + `}`,
	}
	for _, body := range handled {
		checkAgrees(t, body, true)
	}
	// Not JSON, or not exactly one JSON value: the fast path must refuse or
	// agree, and canonicalKey must equal the slow result (often the raw body).
	others := []string{
		``, `   `, `{`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{1:2}`, `nul`, `tru`, `trueX`, `01`, `1.`, `.5`, `+1`, `1e`, `-`, `NaN`,
		`{"a":1} {"b":2}`, `{"a":1}]`, `{"a":1}}`, "\ufeff{}", `"unterminated`, `"bad \x escape"`, `"ctl` + "\x01" + `"`, `{"a":"\ud800"}`,
		`{"a":1}` + "\x00", `[` + strings.Repeat(`[`, 600) + strings.Repeat(`]`, 601), `hello world`, `data: {}` + "\n\n",
	}
	for _, body := range others {
		checkAgrees(t, body, false)
	}
}

// TestFastCanonicalKeyOnRecordedBodies runs every request body of the
// committed cassettes through both canonicalizers.
func TestFastCanonicalKeyOnRecordedBodies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "cassettes", "thirdparty", "pydantic-ai", "imported", "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cassettes: %v", err)
	}
	for _, f := range files {
		c, err := Read(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range c.Interactions {
			checkAgrees(t, it.Request.Body, true)
			checkAgrees(t, prettyBody([]byte(it.Request.Body), nil), true)
		}
	}
}

func FuzzCanonicalKey(f *testing.F) {
	f.Add(`{"b":[1,{"d":"\u00e9","c":null}],"a":-1.5e3,"metadata":{}}`)
	f.Add(`{"messages":[{"content":[{"text":"x","cache_control":{"type":"ephemeral"}}]}]}`)
	f.Add(`{"a":1,"a":"\u2028"}`)
	f.Add(`[{"x":{"x":[true,false,null]}}]`)
	if data, err := os.ReadFile(filepath.Join("..", "..", "cassettes", "thirdparty", "pydantic-ai", "imported", "test_anthropic", "test_anthropic_tool_output.yaml")); err == nil {
		if c, err := Parse("seed", data); err == nil {
			f.Add(c.Interactions[1].Request.Body)
		}
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, set := range ignoreSets {
			ignore := compiled(t, set)
			want := canonicalKeySlow([]byte(body), ignore)
			if got, ok := canonicalKeyFast([]byte(body), ignore); ok && got != want {
				t.Fatalf("ignore %v: body %q\nfast %s\nslow %s", set, body, got, want)
			}
		}
	})
}
