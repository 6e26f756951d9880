package openai

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/dageval/dageval/internal/jsonscan"
)

// scanChatText decodes a trimmed answer as decodeChatText does, tool
// calls included, by walking it once instead of through encoding/json's
// reflection (and its validating pass over the whole answer first), which
// was most of decoding a live call's answer. It reports false wherever it
// is not sure to give what decodeChatText gives, which then decides: a key
// trimming would not leave, a member of an unexpected JSON type, a number
// that is not a plain int64, a string with \u escapes or bytes that are
// not UTF-8 (which encoding/json rewrites), a tool call key encoding/json
// could match otherwise than exactly, invalid JSON.
func scanChatText(b []byte) (*chatText, bool) {
	s := chatScan{b: b}
	t := &chatText{}
	var seen [4]bool
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return once(&seen[0]) && s.str(&t.ID)
		case "model":
			return once(&seen[1]) && s.str(&t.Model)
		case "choices":
			return once(&seen[2]) && s.choices(t)
		case "usage":
			return once(&seen[3]) && s.usage(t)
		}
		return false
	})
	if !ok || jsonscan.SkipSpace(b, s.i) != len(b) {
		return nil, false
	}
	if len(t.Choices) > 0 {
		msg := &t.Choices[0].Message
		switch string(msg.ToolCalls) {
		case "", "null", "[]":
		default:
			if msg.calls, ok = scanCalls(msg.ToolCalls); !ok {
				return nil, false
			}
		}
	}
	return t, true
}

// once reports whether a member is seen for the first time, marking it
// seen: encoding/json keeps the last of duplicates, trimming the first.
func once(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// chatScan reads a JSON document from b[i] on, checking it is valid as it
// goes.
type chatScan struct {
	b []byte
	i int
}

// at skips space and reports whether the next byte is c.
func (s *chatScan) at(c byte) bool {
	s.i = jsonscan.SkipSpace(s.b, s.i)
	return s.i < len(s.b) && s.b[s.i] == c
}

// null consumes a null literal when there is one.
func (s *chatScan) null() bool {
	if s.at('n') && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += len("null")
		return true
	}
	return false
}

// object reads an object, calling member with each key (unescaped keys
// only) to read the member's value; false when the object is not valid,
// or member says so.
func (s *chatScan) object(member func(key []byte) bool) bool {
	if !s.at('{') {
		return false
	}
	s.i++
	if s.at('}') {
		s.i++
		return true
	}
	for {
		if !s.at('"') {
			return false
		}
		end, ok := jsonscan.ValidValueEnd(s.b, s.i)
		if !ok {
			return false
		}
		key := s.b[s.i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		s.i = end
		if !s.at(':') {
			return false
		}
		s.i = jsonscan.SkipSpace(s.b, s.i+1)
		if !member(key) {
			return false
		}
		switch {
		case s.at(','):
			s.i++
		case s.at('}'):
			s.i++
			return true
		default:
			return false
		}
	}
}

// list reads a list, calling elem to read each element.
func (s *chatScan) list(elem func() bool) bool {
	if !s.at('[') {
		return false
	}
	s.i++
	if s.at(']') {
		s.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch {
		case s.at(','):
			s.i++
		case s.at(']'):
			s.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string or null (which leaves dst as it is, as encoding/json
// does).
func (s *chatScan) str(dst *string) bool {
	if s.null() {
		return true
	}
	if !s.at('"') {
		return false
	}
	end, ok := jsonscan.ValidValueEnd(s.b, s.i)
	if !ok {
		return false
	}
	v, ok := jsonscan.Unquote(s.b[s.i:end])
	if !ok {
		return false
	}
	*dst, s.i = v, end
	return true
}

// int reads an integer that fits an int64, or null.
func (s *chatScan) int(dst *int64) bool {
	if s.null() {
		return true
	}
	if s.i >= len(s.b) || s.b[s.i] != '-' && (s.b[s.i] < '0' || s.b[s.i] > '9') {
		return false
	}
	end, ok := jsonscan.ValidValueEnd(s.b, s.i)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(s.b[s.i:end]), 10, 64)
	if err != nil {
		return false // a fraction, an exponent or too large: an error to encoding/json
	}
	*dst, s.i = n, end
	return true
}

// raw reads any value as json.RawMessage does.
// The value is a slice of the trimmed answer, which is the answer's own.
func (s *chatScan) raw(dst *json.RawMessage) bool {
	start := jsonscan.SkipSpace(s.b, s.i)
	if !s.skip() {
		return false
	}
	*dst = s.b[start:s.i:s.i]
	return true
}

// skip steps over any valid value.
func (s *chatScan) skip() bool {
	end, ok := jsonscan.ValidValueEnd(s.b, jsonscan.SkipSpace(s.b, s.i))
	if ok {
		s.i = end
	}
	return ok
}

func (s *chatScan) choices(t *chatText) bool {
	if s.null() {
		t.Choices = nil
		return true
	}
	t.Choices = []chatTextChoice{}
	return s.list(func() bool {
		t.Choices = append(t.Choices, chatTextChoice{})
		return s.choice(&t.Choices[len(t.Choices)-1])
	})
}

func (s *chatScan) choice(ch *chatTextChoice) bool {
	var seen [2]bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "finish_reason":
			return once(&seen[0]) && s.str(&ch.FinishReason)
		case "message":
			return once(&seen[1]) && (s.null() || s.message(&ch.Message))
		}
		return false
	})
}

func (s *chatScan) message(m *chatTextMessage) bool {
	var seen [6]bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			return once(&seen[0]) && s.str(&m.Content)
		case "refusal":
			return once(&seen[1]) && s.str(&m.Refusal)
		case "tool_calls":
			return once(&seen[2]) && s.raw(&m.ToolCalls)
		case "reasoning_content":
			return once(&seen[3]) && s.raw(&m.ReasoningContent)
		case "reasoning":
			return once(&seen[4]) && s.raw(&m.Reasoning)
		case "extra_content":
			return once(&seen[5]) && s.raw(&m.ExtraContent)
		}
		return false
	})
}

func (s *chatScan) usage(t *chatText) bool {
	if s.null() {
		t.Usage = nil
		return true
	}
	u := &chatTextUsage{}
	t.Usage = u
	var seen [3]bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return once(&seen[0]) && s.int(&u.PromptTokens)
		case "completion_tokens":
			return once(&seen[1]) && s.int(&u.CompletionTokens)
		case "prompt_tokens_details":
			if !once(&seen[2]) {
				return false
			}
			if s.null() {
				return true
			}
			var details [2]bool
			d := &u.PromptTokensDetails
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "cached_tokens":
					return once(&details[0]) && s.int(&d.CachedTokens)
				case "cache_write_tokens":
					return once(&details[1]) && s.int(&d.CacheWriteTokens)
				}
				return false
			})
		}
		return false
	})
}

// scanCalls reads tool calls (a message's tool_calls, kept whole by
// trimming, so with any members) as decodeChatText does. Each call must be
// an object; the members chatTextCall reads must be named exactly, once
// (exactCalls' rule); other members are stepped over, unless encoding/json
// might match their key to one of those (see foldsToOneOf).
func scanCalls(raw []byte) ([]chatTextCall, bool) {
	s := chatScan{b: raw}
	calls := []chatTextCall{}
	ok := s.list(func() bool {
		calls = append(calls, chatTextCall{})
		c := &calls[len(calls)-1]
		var seen [3]bool
		return s.object(func(key []byte) bool {
			switch string(key) {
			case "id":
				return once(&seen[0]) && s.str(&c.ID)
			case "function":
				return once(&seen[1]) && (s.null() || s.function(c))
			case "extra_content":
				return once(&seen[2]) && s.raw(&c.ExtraContent)
			}
			return s.other(key, callNames)
		})
	})
	if !ok || jsonscan.SkipSpace(raw, s.i) != len(raw) {
		return nil, false
	}
	return calls, true
}

func (s *chatScan) function(c *chatTextCall) bool {
	var seen [2]bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return once(&seen[0]) && s.str(&c.Function.Name)
		case "arguments":
			return once(&seen[1]) && s.str(&c.Function.Arguments)
		}
		return s.other(key, functionNames)
	})
}

// other steps over the value of a member read by no field, unless its key
// might be matched to one of names by encoding/json.
func (s *chatScan) other(key []byte, names []string) bool {
	if foldsToOneOf(key, names) {
		return false
	}
	return s.skip()
}

// foldsToOneOf reports whether encoding/json might match key (not one of
// names exactly) to one of names: it matches names regardless of case,
// folding some non-ASCII letters to ASCII ones too (the dotless i, the
// long s, the Kelvin sign), so any key with non-ASCII bytes counts.
func foldsToOneOf(key []byte, names []string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
