package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/internal/jsonscan"
)

// answerMembers are the members of a Responses API answer fromResponse
// reads. The answer also echoes the request (tools with their schemas,
// instructions, settings), which decoding it whole through the SDK's
// reflection-driven decoder spends most of its time on.
var answerMembers = [][]byte{[]byte("status"), []byte("output"), []byte("usage"), []byte("incomplete_details"), []byte("error"), []byte("model")}

// answerBody is the destination of a Responses API answer: the SDK's
// Response, decoded from the members fromResponse reads only. The SDK hands
// it the whole body once its JSON is known to be valid, as it would hand
// it to Response itself, so failures read as they always did.
type answerBody struct{ r *responses.Response }

func (b *answerBody) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		b.r = nil
		return nil
	}
	if trimmed, ok := trimObject(raw, answerMembers); ok {
		raw = trimmed
	}
	r := &responses.Response{}
	if err := r.UnmarshalJSON(raw); err != nil {
		return err
	}
	b.r = r
	return nil
}

// decodeAnswer decodes a Responses API answer's body as the SDK does into
// an answerBody destination, with the same errors, but without its
// decoder's two passes over the whole body (one to find the value's end,
// one to hand it over): a body that is valid JSON goes to answerBody at
// once, anything else through the SDK's own steps.
func decodeAnswer(res *http.Response, raw []byte) (answerBody, error) {
	var body answerBody
	ct := ""
	if res != nil {
		ct = res.Header.Get("content-type")
	}
	mediaType, _, _ := mime.ParseMediaType(ct)
	if !strings.Contains(mediaType, "application/json") && !strings.HasSuffix(mediaType, "+json") {
		return body, fmt.Errorf("expected destination type of 'string' or '[]byte' for responses with content-type '%s' that is not 'application/json'", ct)
	}
	if json.Valid(raw) {
		err := body.UnmarshalJSON(bytes.Trim(raw, " \t\r\n"))
		if err != nil {
			err = fmt.Errorf("error parsing response json: %w", err)
		}
		return body, err
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&body); err != nil {
		return body, fmt.Errorf("error parsing response json: %w", err)
	}
	return body, nil
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
