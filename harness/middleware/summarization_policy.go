package middleware

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/llm"
)

// cutoff returns how many leading messages of msgs a keep policy gives up.
// With adjust, a cutoff that would separate tool results from the assistant
// message that asked for them moves back to that message (or, when there is
// none, forward past the results). suffix, when set, counts msgs[i:] faster
// than the counter can.
func (m *SummarizationMiddleware) cutoff(msgs []llm.Message, keep Threshold, p policy, adjust bool, suffix func(i int) int) int {
	var c int
	switch {
	case keep.Messages > 0:
		c = len(msgs) - keep.Messages
	case keep.Tokens > 0:
		c = m.tokenCutoff(msgs, keep.Tokens, suffix)
	case keep.Fraction > 0 && p.known:
		c = m.tokenCutoff(msgs, p.fractionTokens(keep.Fraction), suffix)
	case keep.Fraction > 0:
		c = len(msgs) - keepWithoutWindow
	}
	if c <= 0 {
		return 0
	}
	if adjust {
		c = adjustCutoff(msgs, c)
	}
	return c
}

// tokenCutoff keeps the longest suffix within budget, and at least the last message.
func (m *SummarizationMiddleware) tokenCutoff(msgs []llm.Message, budget int, suffix func(i int) int) int {
	if len(msgs) == 0 {
		return 0
	}
	return min(m.suffixWithin(msgs, budget, suffix), len(msgs)-1)
}

func adjustCutoff(msgs []llm.Message, c int) int {
	if c >= len(msgs) || msgs[c].Role != llm.RoleTool {
		return c
	}
	id := msgs[c].ToolCallID
	for j := c - 1; j >= 0; j-- {
		if msgs[j].Role == llm.RoleAssistant && slices.ContainsFunc(msgs[j].ToolCalls, func(tc llm.ToolCall) bool { return tc.ID == id }) {
			return j
		}
	}
	for c < len(msgs) && msgs[c].Role == llm.RoleTool {
		c++
	}
	return c
}

// truncatedTools are the tools whose old arguments are shortened.
var truncatedTools = map[string]bool{"write_file": true, "edit_file": true}

// truncateArgs shortens long string arguments of write_file and edit_file
// calls in messages older than the truncation keep policy, when its trigger
// is met. v.msgs is not modified; the result is a copy when anything
// changed (with the run's memo, the memo's list, which the previous call's
// list becomes by rewriting the messages whose truncation changed). saved
// is how many tokens the truncation saves, or -1 when only counting the
// result says.
func (m *SummarizationMiddleware) truncateArgs(v *view, total int, p policy) (msgs []llm.Message, saved int, changed bool) {
	msgs = v.msgs
	cut := 0
	if len(p.truncTrigger) > 0 && p.anyMet(p.truncTrigger, total, len(msgs), 1) {
		var suffix func(i int) int
		if m.tools != nil && v.memo != nil {
			suffix = func(i int) int { return m.viewTokens(v, i, len(v.msgs)) }
		}
		cut = m.cutoff(msgs, p.truncKeep, p, false, suffix)
	}
	ta := m.opts.TruncateArgs
	if v.memo != nil {
		// Called even when nothing is to be truncated, so that the memo's
		// list gives back what an earlier call truncated.
		return v.memo.truncated(v, cut, ta, m.tools != nil)
	}
	var out []llm.Message
	for i := 0; i < cut; i++ {
		c, ok := truncateMessage(&msgs[i], ta)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[i] = c
	}
	if out == nil {
		return msgs, 0, false
	}
	return out, -1, true
}

// truncateMessage returns msg with its long write_file and edit_file
// arguments truncated, or false when it has none.
func truncateMessage(msg *llm.Message, ta TruncateArgsOptions) (llm.Message, bool) {
	if msg.Role != llm.RoleAssistant {
		return llm.Message{}, false
	}
	var calls []llm.ToolCall
	for k, tc := range msg.ToolCalls {
		// A string value longer than MaxLength characters takes more
		// than MaxLength bytes of JSON.
		if !truncatedTools[tc.Name] || len(tc.Args) <= ta.MaxLength {
			continue
		}
		args, changed := truncateJSONArgs(tc.Args, ta.MaxLength, ta.Text)
		if !changed {
			continue
		}
		if calls == nil {
			calls = slices.Clone(msg.ToolCalls)
		}
		calls[k].Args = args
	}
	if calls == nil {
		return llm.Message{}, false
	}
	c := *msg
	c.ToolCalls = calls
	return c, true
}

// truncateJSONArgs shortens the top-level string values of a JSON object
// that are longer than maxLen characters to their first characters plus
// text, keeping the keys in their order.
func truncateJSONArgs(raw json.RawMessage, maxLen int, text string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return raw, false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	changed := false
	for first := true; dec.More(); first = false {
		tok, err := dec.Token()
		if err != nil {
			return raw, false
		}
		key, ok := tok.(string)
		if !ok {
			return raw, false
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return raw, false
		}
		var s string
		if len(val) > maxLen && val[0] == '"' && json.Unmarshal(val, &s) == nil && utf8.RuneCountInString(s) > maxLen {
			val = marshalString(cutChars(s, truncatedPrefixChars) + text)
			changed = true
		}
		if !first {
			b.WriteByte(',')
		}
		b.Write(marshalString(key))
		b.WriteByte(':')
		b.Write(val)
	}
	if !changed {
		return raw, false
	}
	b.WriteByte('}')
	return json.RawMessage(b.Bytes()), true
}

// marshalString encodes s as a JSON string without escaping HTML characters.
func marshalString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// toolArg returns a top-level string argument of a tool call.
func toolArg(tc llm.ToolCall, name string) string {
	var args map[string]json.RawMessage
	if json.Unmarshal(tc.Args, &args) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(args[name], &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}
