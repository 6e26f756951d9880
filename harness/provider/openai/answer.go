package openai

import (
	"bytes"
	"errors"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/internal/jsonscan"
)

// answerMembers are the members of a Responses API answer fromResponse
// reads. The answer also echoes the request (tools with their schemas,
// instructions, settings), which decoding it whole through the SDK's
// reflection-driven decoder spends most of its time on, and which a live
// call, unlike a replay, decodes for every answer.
var answerMembers = [][]byte{[]byte("status"), []byte("output"), []byte("usage"), []byte("incomplete_details"), []byte("error"), []byte("model")}

// The recorded answers replays decoded (see provider.Answers).
var (
	chatAnswers     provider.Answers[*sdk.ChatCompletion]
	responseAnswers provider.Answers[*responses.Response]
)

// errNullAnswer is what decoding an answer that is JSON null gives: the
// SDK would hand back no value and no error.
var errNullAnswer = errors.New("the answer is null")

// decodeChat decodes a Chat Completions answer as the SDK does into its
// ChatCompletion.
func decodeChat(raw []byte) (*sdk.ChatCompletion, error) {
	if string(raw) == "null" {
		return nil, errNullAnswer
	}
	c := &sdk.ChatCompletion{}
	if err := c.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return c, nil
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
func trimObject(raw []byte, keep [][]byte) ([]byte, bool) {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	found := make([][]byte, len(keep))
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
		for k, name := range keep {
			if found[k] == nil && bytes.Equal(key, name) {
				found[k] = raw[start:end]
			}
		}
		i = jsonscan.SkipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i++
		}
	}
	out := make([]byte, 0, 512)
	out = append(out, '{')
	for k, v := range found {
		if v == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, keep[k]...)
		out = append(out, '"', ':')
		out = append(out, v...)
	}
	return append(out, '}'), true
}
