package middleware_test

import (
	"encoding/json"
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
