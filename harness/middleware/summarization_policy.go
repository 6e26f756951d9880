package middleware

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf16"
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
// text, keeping the keys in their order. Every old file edit of a run goes
// through it once, so the usual arguments (plain keys, string and literal
// values) are scanned directly; anything else goes to the decoder
// (truncateJSONArgsDecoder), whose answers the scan gives.
func truncateJSONArgs(raw json.RawMessage, maxLen int, text string) (json.RawMessage, bool) {
	if out, changed, ok := scanTruncateArgs(raw, maxLen, text); ok {
		return out, changed
	}
	return truncateJSONArgsDecoder(raw, maxLen, text)
}

// scanTruncateArgs is truncateJSONArgsDecoder for an object whose keys are
// printable ASCII without escapes and whose values are strings, true, false
// or null, the strings to truncate simple (see scanJSONString); ok is false
// for any other input.
func scanTruncateArgs(raw []byte, maxLen int, text string) (out json.RawMessage, changed, ok bool) {
	type member struct {
		key, val [2]int
		repl     []byte
	}
	var spans [8]member
	members := spans[:0]
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false, false
	}
	if i = skipJSONSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return raw, false, true
	}
	for {
		var mb member
		if i >= len(raw) || raw[i] != '"' {
			return nil, false, false
		}
		mb.key[0] = i
		for i++; i < len(raw) && raw[i] != '"'; i++ {
			if c := raw[i]; c < 0x20 || c >= 0x7f || c == '\\' {
				return nil, false, false
			}
		}
		if i >= len(raw) {
			return nil, false, false
		}
		mb.key[1] = i + 1
		if i = skipJSONSpace(raw, i+1); i >= len(raw) || raw[i] != ':' {
			return nil, false, false
		}
		i = skipJSONSpace(raw, i+1)
		mb.val[0] = i
		switch {
		case i < len(raw) && raw[i] == '"':
			end, chars, simple := scanJSONString(raw, i)
			if end < 0 {
				return nil, false, false
			}
			if val := raw[i:end]; len(val) > maxLen && chars > maxLen {
				if !simple {
					return nil, false, false
				}
				mb.repl = marshalString(simplePrefix(val[1:len(val)-1], truncatedPrefixChars) + text)
				changed = true
			}
			i = end
		case bytes.HasPrefix(raw[i:], []byte("true")), bytes.HasPrefix(raw[i:], []byte("null")):
			i += 4
		case bytes.HasPrefix(raw[i:], []byte("false")):
			i += 5
		default:
			return nil, false, false
		}
		mb.val[1] = i
		members = append(members, mb)
		if i = skipJSONSpace(raw, i); i >= len(raw) {
			return nil, false, false
		}
		if raw[i] == '}' {
			break
		}
		if raw[i] != ',' {
			return nil, false, false
		}
		i = skipJSONSpace(raw, i+1)
	}
	if !changed {
		return raw, false, true
	}
	b := make([]byte, 0, 64*len(members))
	b = append(b, '{')
	for k, mb := range members {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(append(b, raw[mb.key[0]:mb.key[1]]...), ':')
		if mb.repl != nil {
			b = append(b, mb.repl...)
		} else {
			b = append(b, raw[mb.val[0]:mb.val[1]]...)
		}
	}
	return append(b, '}'), true, true
}

func skipJSONSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// scanJSONString scans the JSON string starting at raw[i] (a quote) and
// returns the index past its closing quote (-1 when it is not a valid
// string), how many characters it decodes to, and whether it is simple:
// free of \u escapes of surrogates, so that every escape is one character.
// Bytes that are not UTF-8 decode to one U+FFFD each, as encoding/json
// decodes them.
func scanJSONString(raw []byte, i int) (end, chars int, simple bool) {
	simple = true
	for i++; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			return i + 1, chars, simple
		case c < 0x20:
			return -1, 0, false
		case c >= utf8.RuneSelf:
			_, size := utf8.DecodeRune(raw[i:])
			i += size - 1
		case c == '\\':
			if i+1 >= len(raw) {
				return -1, 0, false
			}
			i++
			switch raw[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				r, ok := hex4(raw, i+1)
				if !ok {
					return -1, 0, false
				}
				if utf16.IsSurrogate(r) {
					simple = false
				}
				i += 4
			default:
				return -1, 0, false
			}
		}
		chars++
	}
	return -1, 0, false
}

// hex4 decodes the four hex digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// simplePrefix decodes the first n characters of the body of a simple
// JSON string (see scanJSONString).
func simplePrefix(body []byte, n int) string {
	out := make([]byte, 0, n)
	for i, k := 0, 0; i < len(body) && k < n; i, k = i+1, k+1 {
		c := body[i]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(body[i:])
			out = utf8.AppendRune(out, r)
			i += size - 1
			continue
		case c != '\\':
			out = append(out, c)
			continue
		}
		i++
		switch c = body[i]; c {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, _ := hex4(body, i+1)
			out = utf8.AppendRune(out, r)
			i += 4
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

// truncateJSONArgsDecoder is truncateJSONArgs through encoding/json's
// decoder, for any input.
func truncateJSONArgsDecoder(raw json.RawMessage, maxLen int, text string) (json.RawMessage, bool) {
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
