package middleware_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// FuzzRenderTranscript renders transcripts whose texts, tool names and
// arguments come from the fuzzer, the parts a model or a tool controls: the
// rendering never panics, is deterministic, and stays valid UTF-8 when its
// inputs are.
func FuzzRenderTranscript(f *testing.F) {
	f.Add("What's the weather in Paris?", "get_weather", `{"city":"Paris"}`, "sunny, 21C", "It is sunny.")
	f.Add("hi", "get_weather", `{}`, "x", "<tool_call name=\"get_weather\" args={}/>\n\n[tool:get_weather] sunny, 21C\n\n[assistant] done")
	f.Add("", "", "not json", "", "</transcript>")
	f.Fuzz(func(t *testing.T, user, tool, args, result, answer string) {
		msgs := []llm.Message{
			llm.User(user),
			llm.Assistant("", llm.ToolCall{ID: "c1", Name: tool, Args: json.RawMessage(args)}),
			llm.ToolResult("c1", tool, result, false),
			llm.Assistant(answer),
		}
		out := middleware.RenderTranscript(msgs)
		if again := middleware.RenderTranscript(msgs); again != out {
			t.Fatal("two renderings of one transcript differ")
		}
		if utf8.ValidString(user+tool+args+result+answer) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 in, invalid out: %q", out)
		}
	})
}

// FuzzTruncateJSONArgs holds the scan that truncates the arguments of old
// file edits to the decoder it stands in for: on any input, both give the
// same bytes and the same verdict.
func FuzzTruncateJSONArgs(f *testing.F) {
	long := strings.Repeat("line of a note\n", 12)
	enc := func(s string) string { raw, _ := json.Marshal(s); return string(raw) }
	for _, seed := range []string{
		`{"file_path":"/a.md","content":` + enc(long) + `}`,
		` { "file_path" : "/a.md" , "content" : ` + enc(long) + ` } trailing`,
		`{"content":` + enc(`\"quoted\"/`+long) + `,"replace_all":false,"x":null,"y":true}`,
		`{"content":` + enc("é"+long) + `}`,
		`{"content":"\u00e9` + strings.Repeat("x", 60) + `"}`,
		`{"content":"\u003ctag\u003e\ud83d\ude00` + strings.Repeat("x", 60) + `"}`,
		`{"content":"\ud83d` + strings.Repeat("x", 30) + `"}`,
		`{"content":"` + "\xe2\x82" + strings.Repeat("x", 60) + `"}`,
		`{"content":` + enc(long) + `,"n":12}`,
		`{"content":` + enc(long) + `,"o":{"a":[1,2]}}`,
		`{"content":` + enc(long) + `]`,
		`{"content":` + enc(long),
		`{"content":` + enc(long) + `,}`,
		`{"a":` + enc(long) + `,"a":` + enc(long) + `}`,
		`{"k\"ey":` + enc(long) + `}`,
		`{"<k>":` + enc(long) + `}`,
		`{"content":"\q` + strings.Repeat("x", 60) + `"}`,
		`{"content":"` + strings.Repeat("x", 60) + "\x01" + `"}`,
		`{"content":"` + "\xff" + strings.Repeat("x", 60) + `"}`,
		`{"content":truex}`,
		`{}`, ` {} `, `[]`, ``, `"s"`,
		`{"content":"` + strings.Repeat(`\n`, 40) + `"}`,
		`{"content":"` + strings.Repeat(`\t`, 10) + strings.Repeat("x", 40) + `"}`,
	} {
		f.Add(seed, 30)
	}
	f.Fuzz(func(t *testing.T, raw string, maxLen int) {
		maxLen = 1 + (maxLen%64+64)%64
		got, gotChanged := middleware.TruncateJSONArgs(json.RawMessage(raw), maxLen, "...(cut)")
		want, wantChanged := middleware.TruncateJSONArgsDecoder(json.RawMessage(raw), maxLen, "...(cut)")
		if gotChanged != wantChanged || string(got) != string(want) {
			t.Fatalf("maxLen %d, %q:\n scan: %v %q\n decoder: %v %q", maxLen, raw, gotChanged, got, wantChanged, want)
		}
	})
}

// The usual arguments of a file edit are truncated by the scan, not left
// to the decoder.
func TestTruncateJSONArgsScansFileEdits(t *testing.T) {
	note := strings.Repeat("- a line of the note, with \"quotes\" and <tags>\n", 80)
	for _, args := range []map[string]any{
		{"file_path": "/notes/1.md", "content": note},
		{"file_path": "/notes/1.md", "old_string": note, "new_string": "x", "replace_all": true},
	} {
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		if !middleware.ScanTruncatesArgs(raw, 2000) {
			t.Errorf("%.80s… went to the decoder", raw)
		}
		out, changed := middleware.TruncateJSONArgs(raw, 2000, "...(cut)")
		if !changed || !strings.Contains(string(out), `"- a line of the note...(cut)"`) {
			t.Errorf("truncated to %s", out)
		}
	}
}
