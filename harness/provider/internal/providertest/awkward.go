package providertest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/dageval/dageval/harness/llm"
)

// awkwardPieces are what JSON encoders treat specially: quotes and
// backslashes, every kind of control character, HTML characters, the
// line and paragraph separators, multi-byte and invalid UTF-8, and the
// NUL that adapters' placeholders start with.
var awkwardPieces = []string{
	"a", "word ", "<", ">", "&", "\u2028", "\u2029", `"`, `\`, "/", "\x00", "\x01", "\x1f", "\b", "\f", "\n", "\r", "\t",
	"\x7f", "é", "日本", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80", " ", "\u0000dageval slot 0", `{"k":[1]}`, "\ufffd",
}

// AwkwardStrings returns n strings (seeded, so the same each run) made of
// pieces JSON encoders treat specially, none of them empty.
func AwkwardStrings(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(awkwardPieces[rng.IntN(len(awkwardPieces))])
		}
		out[i] = b.String()
	}
	return out
}

// AwkwardMessages returns n messages (seeded) of every role and of the
// shapes adapters encode, and some they do not (images, foreign and
// empty signatures, arguments that are not compact JSON), with strings
// JSON encoders treat specially and some empty ones.
func AwkwardMessages(seed uint64, n int) []llm.Message {
	strs := AwkwardStrings(seed, 4000)
	rng := rand.New(rand.NewPCG(seed, 1))
	next := 0
	str := func() string {
		next++
		switch rng.IntN(10) {
		case 0:
			return ""
		case 1:
			return "plain"
		}
		return strs[next%len(strs)]
	}
	cc := func() *llm.CacheControl {
		switch rng.IntN(3) {
		case 0:
			return llm.Ephemeral()
		case 1:
			return &llm.CacheControl{Type: "ephemeral", TTL: "1h"}
		}
		return nil
	}
	args := func() json.RawMessage {
		return json.RawMessage([]string{`{"q":"plain"}`, `{"q": 1}`, `{"q":"<a> & b"}`, "", "{bad", `{"p":"` + fmt.Sprint(rng.IntN(100)) + `"}`, `[]`, `"s"`}[rng.IntN(8)])
	}
	sig := func() string {
		return []string{"c2lnbmF0dXJl", "gemini:abc", "gemini-call:c1:sig", `openai-reasoning:{"id":"rs_1"}`, "", "x:y"}[rng.IntN(6)]
	}
	var out []llm.Message
	for range n {
		var m llm.Message
		switch rng.IntN(4) {
		case 3:
			m.Role = llm.RoleSystem
			m.Content = append(m.Content, llm.Block{Type: llm.BlockText, Text: str()})
		case 0:
			m.Role = llm.RoleUser
			for range 1 + rng.IntN(3) {
				m.Content = append(m.Content, llm.Block{Type: llm.BlockText, Text: str(), CacheControl: cc()})
			}
			switch rng.IntN(10) {
			case 0:
				m.Content = append(m.Content, llm.Block{Type: llm.BlockImage, URL: "https://x/y.png"})
			case 1:
				m.Content = append(m.Content, llm.Block{Type: llm.BlockThinking, Thinking: str()})
			}
		case 1:
			m.Role = llm.RoleAssistant
			for range rng.IntN(3) {
				switch rng.IntN(3) {
				case 0:
					m.Content = append(m.Content, llm.Block{Type: llm.BlockThinking, Thinking: str(), Signature: sig()})
				case 1:
					m.Content = append(m.Content, llm.Block{Type: llm.BlockRedactedThinking, Redacted: sig()})
				default:
					m.Content = append(m.Content, llm.Block{Type: llm.BlockText, Text: str(), CacheControl: cc()})
				}
			}
			for range rng.IntN(3) {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: str(), Name: str(), Args: args()})
			}
			if rng.IntN(5) == 0 {
				m.InvalidToolCalls = append(m.InvalidToolCalls, llm.InvalidToolCall{ID: str(), Name: str(), Args: "{bad"})
			}
		default:
			m.Role = llm.RoleTool
			m.ToolCallID = str()
			m.IsError = rng.IntN(4) == 0
			for range rng.IntN(3) {
				m.Content = append(m.Content, llm.Block{Type: llm.BlockText, Text: str(), CacheControl: cc()})
			}
		}
		out = append(out, m)
	}
	return out
}

// SettingsVariants returns copies of req with each setting a shell of
// spliced requests is keyed by changed in turn, and changed back.
func SettingsVariants(req *llm.Request) []*llm.Request {
	f := func(v float64) *float64 { return &v }
	seed := int64(7)
	changes := []func(*llm.Request){
		func(r *llm.Request) {},
		func(r *llm.Request) { r.MaxTokens = 77 },
		func(r *llm.Request) { r.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceAny} },
		func(r *llm.Request) { r.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "a"} },
		func(r *llm.Request) { r.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "b"} },
		func(r *llm.Request) { r.Temperature = f(0.5) },
		func(r *llm.Request) { r.Temperature = f(0.25) },
		func(r *llm.Request) { r.TopP = f(0.9) },
		func(r *llm.Request) { r.Seed = &seed },
		func(r *llm.Request) {},
		func(r *llm.Request) { r.StopSequences = []string{} },
		func(r *llm.Request) { r.StopSequences = []string{"a", "b"} },
		func(r *llm.Request) { r.StopSequences = []string{"ab"} },
		func(r *llm.Request) { r.Thinking = &llm.Thinking{BudgetTokens: 2048} },
		func(r *llm.Request) { r.Thinking = &llm.Thinking{BudgetTokens: 20000} },
		func(r *llm.Request) { r.System = nil },
		func(r *llm.Request) { r.Tools = nil },
		func(r *llm.Request) {
			r.ResponseFormat = &llm.ResponseFormat{Name: "out", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
		},
		func(r *llm.Request) {},
	}
	var out []*llm.Request
	for _, c := range changes {
		r := *req
		c(&r)
		out = append(out, &r)
	}
	return out
}
