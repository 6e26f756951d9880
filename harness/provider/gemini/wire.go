package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/dageval/dageval/harness/provider"
)

// placeholderKey is the key the SDK client is built with; it never leaves
// the process (see wire).
const placeholderKey = "dageval-gemini-placeholder-key"

// maxAnswer bounds how much of a recorded-shape answer is read to reshape it.
const maxAnswer = 256 << 20

// callKey carries the per-attempt call in a request context.
type callKey struct{}

// call is what one attempt hands the wire layer.
type call struct {
	header, value string // the credential; empty header sends none
	capture       *provider.Capture
}

// wire sits between the SDK and the configured transport (where the
// recorder sits). It puts the configured credential in place of the
// SDK's placeholder key, keeps the recording machine's Go version out of
// the telemetry headers, captures error answers for classification, and
// times each exchange (provider.Capture, which also reads the recorded
// latency a recorder announces), and gives the SDK each answer in the shape it asked for: Gemini streams as
// server-sent events with alt=sse and as one JSON array without it, and a
// replayed recording may hold either shape (or a whole answer) whichever
// way the agent calls now.
type wire struct {
	next http.RoundTripper
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	if out.Header.Get("X-Goog-Api-Key") == placeholderKey {
		out.Header.Del("X-Goog-Api-Key")
	}
	c, _ := req.Context().Value(callKey{}).(*call)
	if c != nil && c.header != "" {
		out.Header.Set(c.header, c.value)
	}
	for _, h := range []string{"User-Agent", "X-Goog-Api-Client"} {
		if vs := out.Header.Values(h); len(vs) > 0 {
			out.Header.Del(h)
			for _, v := range vs {
				out.Header.Add(h, goVersion().ReplaceAllString(v, "gl-go"))
			}
		}
	}
	next := w.next
	if next == nil {
		next = http.DefaultTransport
	}
	send := func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			if err := reshape(resp, isStreamPath(req.URL.Path)); err != nil {
				return nil, err
			}
		}
		return resp, nil
	}
	if c == nil {
		return send(out)
	}
	// The capture times the exchange from here and sees the answer
	// reshaped, so it is always in the framing the call asked for: it
	// keeps error answers, the recorder's duration and first-event
	// headers, and when the first streamed bytes arrive.
	return c.capture.Middleware(out, send)
}

// goVersion matches the "gl-go/go1.26.8" token of the SDK's telemetry
// headers: re-recording an unchanged conversation with another Go release
// then writes the same cassette.
var goVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`gl-go/\S+`) })

func isStreamPath(path string) bool { return strings.HasSuffix(path, ":streamGenerateContent") }

// reshape rewrites a successful answer into the shape the SDK expects: an
// event stream for a streaming request, one JSON object otherwise. Answers
// already in that shape are left untouched.
func reshape(resp *http.Response, stream bool) error {
	sse := isEventStream(resp.Header.Get("Content-Type"))
	if stream && sse {
		return nil
	}
	if resp.Body == nil {
		return nil
	}
	br := bufio.NewReader(resp.Body)
	isArray := firstByte(br) == '['
	if !stream && !sse && !isArray {
		// The common case, a whole answer to a whole request: passed on
		// without reading it here.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{br, resp.Body}
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(br, maxAnswer))
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(body)
	var chunks []json.RawMessage
	switch {
	case sse:
		chunks = sseData(body)
	case isArray:
		if json.Unmarshal(trimmed, &chunks) != nil {
			setBody(resp, body, resp.Header.Get("Content-Type"))
			return nil // not ours to fix: the SDK reports the bad answer
		}
	default:
		chunks = []json.RawMessage{trimmed}
	}
	if stream {
		var b bytes.Buffer
		for _, c := range chunks {
			b.WriteString("data: ")
			if err := json.Compact(&b, c); err != nil {
				b.Write(c)
			}
			b.WriteString("\n\n")
		}
		setBody(resp, b.Bytes(), "text/event-stream")
		return nil
	}
	merged, status := mergeChunks(chunks)
	if status != 0 {
		resp.StatusCode, resp.Status = status, strconv.Itoa(status)+" "+http.StatusText(status)
	}
	setBody(resp, merged, "application/json")
	return nil
}

// firstByte peeks at the first byte of br that is not white space, 0 if none.
func firstByte(br *bufio.Reader) byte {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n || err != nil {
			return 0
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
}

func setBody(resp *http.Response, body []byte, contentType string) {
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Transfer-Encoding")
	if contentType != "" {
		resp.Header.Set("Content-Type", contentType)
	}
}

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// sseData returns the data of each event of an event stream.
func sseData(body []byte) []json.RawMessage {
	var out []json.RawMessage
	var cur []byte
	flush := func() {
		if len(bytes.TrimSpace(cur)) > 0 {
			out = append(out, json.RawMessage(cur))
		}
		cur = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), maxAnswer)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			data := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			if len(cur) > 0 {
				cur = append(cur, '\n')
			}
			cur = append(cur, data...)
		}
	}
	flush()
	return out
}

// mergeChunks folds a stream's chunks into the one answer Generate reads,
// as the stream would accumulate: parts in order, and the last finish
// reason, usage and identifiers. An error chunk becomes the answer, with
// its code as the status.
func mergeChunks(chunks []json.RawMessage) ([]byte, int) {
	merged := map[string]any{}
	var cand map[string]any
	var parts []any
	for _, raw := range chunks {
		var c map[string]any
		if json.Unmarshal(raw, &c) != nil {
			continue
		}
		if e, ok := c["error"].(map[string]any); ok {
			status := http.StatusInternalServerError
			if code, ok := e["code"].(float64); ok && code >= 400 && code < 600 {
				status = int(code)
			}
			return raw, status
		}
		for k, v := range c {
			if k != "candidates" {
				merged[k] = v
			}
		}
		list, _ := c["candidates"].([]any)
		if len(list) == 0 {
			continue
		}
		first, _ := list[0].(map[string]any)
		if cand == nil {
			cand = map[string]any{}
		}
		for k, v := range first {
			if k != "content" {
				cand[k] = v
				continue
			}
			content, _ := v.(map[string]any)
			if role, ok := content["role"]; ok {
				cand["role"] = role
			}
			ps, _ := content["parts"].([]any)
			parts = append(parts, ps...)
		}
	}
	if cand != nil {
		role := cand["role"]
		delete(cand, "role")
		if role == nil {
			role = genai.RoleModel
		}
		cand["content"] = map[string]any{"role": role, "parts": parts}
		merged["candidates"] = []any{cand}
	}
	b, _ := json.Marshal(merged)
	return b, 0
}

// errorDocument is the body of a Google error, for classification.
func errorDocument(e genai.APIError) []byte {
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}
