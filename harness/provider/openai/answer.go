package openai

import (
	"bytes"
	"encoding/json"
	"errors"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/internal/jsonscan"
)

// member is a member of an answer to keep when trimming it (see
// trimObject): its name and, when only some of its own members are read,
// those (for a list, those of its first element, the only one read).
type member struct {
	name  []byte
	keep  []member // nil keeps the value whole
	first bool     // the value is a list of which the first element is read
}

// members makes members kept whole of names.
func members(names ...string) []member {
	out := make([]member, len(names))
	for i, n := range names {
		out[i] = member{name: []byte(n)}
	}
	return out
}

// answerMembers are the members of a Responses API answer fromResponse
// reads. The answer also echoes the request (tools with their schemas,
// instructions, settings), which decoding it whole through the SDK's
// reflection-driven decoder spends most of its time on, and which a live
// call, unlike a replay, decodes for every answer.
var answerMembers = members("status", "output", "usage", "incomplete_details", "error", "model")

// chatMembers are the members of a Chat Completions answer chatResultOf
// reads, and of them what it reads: of the first choice its finish reason
// and message, of the message its text, refusal, tool calls (whole, for
// their raw JSON) and the extra fields reasoningOf and signatureOf read,
// of the usage what chatUsage reads and whether it is there. The SDK's
// decoder spends its time per member, through reflection, and an answer of
// a few hundred bytes has some thirty: the rest (object, created,
// system_fingerprint, service_tier, index, logprobs, role, annotations,
// total and completion token details) were most of a live call's
// decoding.
var chatMembers = []member{
	{name: []byte("id")},
	{name: []byte("model")},
	{name: []byte("choices"), first: true, keep: []member{
		{name: []byte("finish_reason")},
		{name: []byte("message"), keep: members("content", "refusal", "tool_calls", "reasoning_content", "reasoning", "extra_content")},
	}},
	{name: []byte("usage"), keep: []member{
		{name: []byte("prompt_tokens")},
		{name: []byte("completion_tokens")},
		{name: []byte("prompt_tokens_details"), keep: members("cached_tokens", "cache_write_tokens")},
	}},
}

// The recorded answers replays decoded (see provider.Answers).
var (
	chatAnswers     provider.Answers[*chatAnswer]
	responseAnswers provider.Answers[*responses.Response]
)

// errNullAnswer is what decoding an answer that is JSON null gives: the
// SDK would hand back no value and no error.
var errNullAnswer = errors.New("the answer is null")

// chatAnswer is a decoded Chat Completions answer: as chatText when
// encoding/json reads it as the SDK would, otherwise through the SDK's
// ChatCompletion.
type chatAnswer struct {
	text  *chatText
	whole *sdk.ChatCompletion
}

// chatText is what chatResultOf reads of an answer, decoded with
// encoding/json. The SDK's reflective decoder was most of
// the cost of an eval's live calls, each of which decodes its answer
// (a replay decodes each once); chatChunk made the same trade for stream
// chunks.
type chatText struct {
	ID      string           `json:"id"`
	Model   string           `json:"model"`
	Choices []chatTextChoice `json:"choices"`
	Usage   *chatTextUsage   `json:"usage"`
}

type chatTextChoice struct {
	FinishReason string          `json:"finish_reason"`
	Message      chatTextMessage `json:"message"`
}

type chatTextMessage struct {
	Content          string          `json:"content"`
	Refusal          string          `json:"refusal"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ExtraContent     json.RawMessage `json:"extra_content"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	calls            []chatTextCall
}

type chatTextUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// decodeChat decodes a Chat Completions answer from the members
// chatResultOf reads only, as the SDK would decode the whole answer. An
// answer that trims exactly (no member kept whole that has members to
// keep, so no key encoding/json would match differently: it matches names
// regardless of case and keeps the last of duplicates), with tool calls
// named exactly too (see exactCalls), is decoded as chatText when
// encoding/json reads it without error; any other (escaped keys, members
// of a type the SDK's lenient decoder tolerates) goes through the SDK.
func decodeChat(raw []byte) (*chatAnswer, error) {
	if string(raw) == "null" {
		return nil, errNullAnswer
	}
	var whole bool
	trimmed, ok := appendTrimmed(make([]byte, 0, 512), raw, chatMembers, &whole)
	if ok {
		if !whole {
			if t, ok := scanChatText(trimmed); ok {
				return &chatAnswer{text: t}, nil
			}
			if t := decodeChatText(trimmed); t != nil {
				return &chatAnswer{text: t}, nil
			}
		}
		raw = trimmed
	}
	c := &sdk.ChatCompletion{}
	if err := c.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return &chatAnswer{whole: c}, nil
}

// decodeChatText decodes a trimmed answer (unique, unescaped keys, as
// trimObject leaves them) as chatText, or gives nil when it has tool
// calls or encoding/json cannot read it.
func decodeChatText(trimmed []byte) *chatText {
	t := &chatText{}
	if json.Unmarshal(trimmed, t) != nil {
		return nil
	}
	if len(t.Choices) > 0 {
		msg := &t.Choices[0].Message
		switch string(msg.ToolCalls) {
		case "", "null", "[]":
		default:
			if !exactCalls(msg.ToolCalls) || json.Unmarshal(msg.ToolCalls, &msg.calls) != nil {
				return nil
			}
		}
	}
	return t
}

// chatTextCall is what chatTextResult reads of a tool call.
type chatTextCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	ExtraContent json.RawMessage `json:"extra_content"`
}

// The members of a tool call, and of its function, chatTextCall reads.
var (
	callNames     = []string{"id", "function", "extra_content"}
	functionNames = []string{"name", "arguments"}
)

// exactCalls reports whether every element of the list calls (valid JSON)
// is an object in which the members chatTextCall reads, and those of its
// function, are named exactly, once each, with no key to unescape.
// Trimming leaves tool calls whole, and encoding/json, which matches names
// regardless of case and keeps the last of duplicates, could otherwise
// read them otherwise than the SDK.
func exactCalls(calls []byte) bool {
	i := jsonscan.SkipSpace(calls, 0)
	if i >= len(calls) || calls[i] != '[' {
		return false
	}
	for i++; ; {
		i = jsonscan.SkipSpace(calls, i)
		if i >= len(calls) || calls[i] == ']' {
			return true
		}
		end := jsonscan.ValueEnd(calls, i)
		fn, ok := exactMembers(calls[i:end], callNames, "function")
		if !ok {
			return false
		}
		if fn != nil {
			if _, ok := exactMembers(fn, functionNames, ""); !ok {
				return false
			}
		}
		i = jsonscan.SkipSpace(calls, end)
		if i < len(calls) && calls[i] == ',' {
			i++
		}
	}
}

// exactMembers reports whether obj (valid JSON) is an object in which
// each key that encoding/json would match to one of names is that name,
// once, and no key has escapes; it gives the value of the member named
// inner when that is an object.
func exactMembers(obj []byte, names []string, inner string) ([]byte, bool) {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	var seen [4]bool
	var innerValue []byte
	for i++; ; {
		i = jsonscan.SkipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return innerValue, true
		}
		keyEnd := jsonscan.StringEnd(obj, i)
		key := obj[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		i = jsonscan.SkipSpace(obj, keyEnd) + 1 // the colon
		start := jsonscan.SkipSpace(obj, i)
		end := jsonscan.ValueEnd(obj, start)
		for n, name := range names {
			if !bytes.EqualFold(key, []byte(name)) {
				continue
			}
			if string(key) != name || seen[n] {
				return nil, false
			}
			seen[n] = true
			if name == inner && obj[start] == '{' {
				innerValue = obj[start:end]
			}
		}
		i = jsonscan.SkipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

// decodeResponse decodes a Responses API answer into the SDK's Response,
// from the members fromResponse reads only, as the SDK would decode the
// whole answer into it.
func decodeResponse(raw []byte) (*responses.Response, error) {
	if string(raw) == "null" {
		return nil, errNullAnswer
	}
	if trimmed, ok := trimObject(raw, answerMembers); ok {
		raw = trimmed
	}
	r := &responses.Response{}
	if err := r.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return r, nil
}

// trimObject returns the JSON object raw (valid JSON) with only the members
// named in keep, the first of each name as the SDK's decoder reads it, or
// false when raw is not an object or has keys it would have to unescape.
// A member with members of its own to keep is trimmed the same way when
// it is an object (and kept whole when it cannot be trimmed); a list of
// which the first element is read is cut to that element, trimmed, when
// every element is an object, so that the SDK decodes the other elements,
// which it reads no member of, without an error either way.
func trimObject(raw []byte, keep []member) ([]byte, bool) {
	var whole bool
	return appendTrimmed(make([]byte, 0, 512), raw, keep, &whole)
}

// appendTrimmed appends raw trimmed to keep to out (see trimObject); it
// sets *whole when it keeps a member whole that it would have trimmed.
func appendTrimmed(out, raw []byte, keep []member, whole *bool) ([]byte, bool) {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	var buf [8][]byte
	found := buf[:0]
	if len(keep) > len(buf) {
		found = make([][]byte, 0, len(keep))
	}
	found = found[:len(keep)]
	i++
	for {
		i = jsonscan.SkipSpace(raw, i)
		if i < len(raw) && raw[i] == '}' {
			break
		}
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		keyEnd := jsonscan.StringEnd(raw, i)
		if keyEnd-i < 2 {
			return nil, false // an answer cut off after a quote
		}
		key := raw[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		i = jsonscan.SkipSpace(raw, keyEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		start := jsonscan.SkipSpace(raw, i+1)
		end := jsonscan.ValueEnd(raw, start)
		for k := range keep {
			if found[k] == nil && bytes.Equal(key, keep[k].name) {
				found[k] = raw[start:end]
			}
		}
		i = jsonscan.SkipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i++
		}
	}
	out = append(out, '{')
	first := true
	for k, v := range found {
		if v == nil {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, '"')
		out = append(out, keep[k].name...)
		out = append(out, '"', ':')
		out = appendMember(out, v, keep[k], whole)
	}
	return append(out, '}'), true
}

// appendMember appends the value v of member m, trimmed as m says when it
// can be, to out.
func appendMember(out, v []byte, m member, whole *bool) []byte {
	switch {
	case m.first:
		if elem, ok := onlyFirst(v); ok {
			out = append(out, '[')
			if t, ok := appendTrimmed(out, elem, m.keep, whole); ok {
				out = t
			} else {
				*whole = true
				out = append(out, elem...)
			}
			return append(out, ']')
		}
		*whole = true
	case m.keep != nil:
		if t, ok := appendTrimmed(out, v, m.keep, whole); ok {
			return t
		}
		*whole = true
	}
	return append(out, v...)
}

// onlyFirst returns the first element of the list v when it has some and
// all are objects; false otherwise.
func onlyFirst(v []byte) ([]byte, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var first []byte
	i := 1
	for {
		i = jsonscan.SkipSpace(v, i)
		if i >= len(v) || v[i] == ']' {
			break
		}
		if v[i] != '{' {
			return nil, false
		}
		end := jsonscan.ValueEnd(v, i)
		if first == nil {
			first = v[i:end]
		}
		i = jsonscan.SkipSpace(v, end)
		if i < len(v) && v[i] == ',' {
			i++
		}
	}
	return first, first != nil
}
