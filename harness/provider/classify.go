package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dageval/dageval/harness/llm"
)

// Failure is a provider failure stripped of SDK types: an HTTP answer
// outside 2xx, or an error event inside a stream (StatusCode then is the
// stream's 200, or 0).
type Failure struct {
	StatusCode int
	Header     http.Header
	// Body is the raw error document.
	Body []byte
	// Err is the SDK's error, kept as the cause.
	Err error
}

// Classify turns a failure into a provider-neutral *llm.Error. It reads the
// error shapes of Anthropic ({"type":"error","error":{"type","message"}}),
// OpenAI ({"error":{"message","type","code"}}) and the common compatible
// servers (Ollama's {"error":"..."}, vLLM's {"object":"error","message"},
// llama.cpp's {"error":{"type":"exceed_context_size_error"}}), Google's
// ({"error":{"code","message","status","details"}}, whose RetryInfo gives
// the wait), and the request-id and retry-after headers. Secrets of c are
// scrubbed from the message.
func (c Config) Classify(f Failure) *llm.Error {
	d := parseErrorBody(f.Body)
	if d.typ == "" && d.code == "" {
		// Amazon Bedrock names the error in a header
		// ("ThrottlingException:http://internal.amazon.com/coral/..."),
		// its body holding only the message.
		d.typ, _, _ = strings.Cut(header(f.Header, "x-amzn-ErrorType"), ":")
	}
	e := &llm.Error{
		Provider:   c.name(),
		StatusCode: f.StatusCode,
		Code:       firstNonEmpty(d.typ, d.code),
		Message:    c.Scrub(d.message),
		Err:        f.Err,
	}
	if d.typ != "" && d.code != "" && d.code != d.typ {
		e.Code = d.typ + "/" + d.code
	}
	if d.status != "" {
		// Google names the error by its canonical status and says why in
		// the ErrorInfo reason ("RESOURCE_EXHAUSTED", "API_KEY_INVALID").
		e.Code = firstNonEmpty(d.reason, d.status)
	}
	e.RequestID = firstNonEmpty(header(f.Header, "request-id"), header(f.Header, "x-request-id"), header(f.Header, "x-amzn-RequestId"), d.requestID)
	e.RetryAfter = retryAfter(f.Header)
	if e.RetryAfter == 0 {
		e.RetryAfter = d.retryDelay
	}
	e.Kind = kindOf(f.StatusCode, d)
	if e.Message == "" && f.Err == nil && len(f.Body) > 0 {
		e.Message = c.Scrub(truncate(strings.TrimSpace(string(f.Body)), 300))
	}
	if e.Message == "" && f.StatusCode != 0 {
		e.Message = http.StatusText(f.StatusCode)
	}
	return e
}

// ClassifyTransport classifies an error that arrived without an HTTP answer:
// the caller's cancellation passes through unchanged, network failures and
// cut-off bodies become llm.ErrConnection.
func (c Config) ClassifyTransport(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := llm.AsError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &llm.Error{Kind: llm.ErrTimeout, Provider: c.name(), Message: c.Scrub(err.Error()), Err: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) || errors.As(err, new(*net.OpError)) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &llm.Error{Kind: llm.ErrConnection, Provider: c.name(), Message: c.Scrub(err.Error()), Err: err}
	}
	return err
}

// Truncated is the error for a stream that ended before its final event.
func (c Config) Truncated(what string) *llm.Error {
	return &llm.Error{Kind: llm.ErrConnection, Provider: c.name(),
		Message: fmt.Sprintf("the response stream ended before %s; the answer is incomplete", what)}
}

// BadResponse is the error for a 2xx answer that could not be parsed.
func (c Config) BadResponse(err error) *llm.Error {
	return &llm.Error{Kind: llm.ErrBadResponse, Provider: c.name(), Message: c.Scrub(err.Error()), Err: err}
}

type errorDoc struct {
	typ, code, message, requestID string
	// status, reason and retryDelay come from Google's error documents.
	status, reason string
	retryDelay     time.Duration
}

func parseErrorBody(body []byte) errorDoc {
	var d errorDoc
	var top map[string]any
	if json.Unmarshal(body, &top) != nil {
		// Google's endpoints wrap the error document in a one-element array.
		var list []map[string]any
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return d
		}
		top = list[0]
	}
	d.requestID = str(top["request_id"])
	inner := top
	switch e := top["error"].(type) {
	case map[string]any:
		inner = e
	case string:
		d.message = e
	}
	if t := str(inner["type"]); t != "error" {
		d.typ = t
	}
	d.code = str(inner["code"])
	d.status = str(inner["status"])
	if d.status != "" {
		d.reason, d.retryDelay = googleDetails(inner["details"])
	}
	if d.message == "" {
		d.message = firstNonEmpty(str(inner["message"]), str(top["message"]), str(top["detail"]))
	}
	if d.typ == "" && d.code == "" {
		// vLLM puts its type beside the message at the top level.
		if t := str(top["type"]); t != "error" {
			d.typ = t
		}
	}
	return d
}

// googleDetails reads the ErrorInfo reason and the RetryInfo delay
// ("23s", "1.5s") of a Google error's details.
func googleDetails(v any) (reason string, delay time.Duration) {
	list, _ := v.([]any)
	for _, item := range list {
		m, _ := item.(map[string]any)
		switch t := str(m["@type"]); {
		case strings.HasSuffix(t, "google.rpc.ErrorInfo"):
			reason = firstNonEmpty(reason, str(m["reason"]))
		case strings.HasSuffix(t, "google.rpc.RetryInfo"):
			if d, err := time.ParseDuration(str(m["retryDelay"])); err == nil && d > 0 {
				delay = d
			}
		}
	}
	return reason, delay
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

var overflowPhrases = []string{
	"prompt is too long",
	"context length",
	"context_length",
	"context window",
	"maximum context",
	"exceed context limit",
	"exceeds the context",
	"exceeds context",
	"exceed the context",
	"exceeds the available context",
	"input token count",
	"reduce the length of the messages",
	"too many tokens in the prompt",
	"input is too long", // Amazon Bedrock's ValidationException
}

func kindOf(status int, d errorDoc) llm.ErrorKind {
	id := strings.ToLower(d.typ + " " + d.code)
	msg := strings.ToLower(d.message)
	if k, ok := googleKind(d); ok {
		return k
	}
	switch {
	case strings.Contains(id, "context_length_exceeded"), strings.Contains(id, "context_window_exceeded"),
		strings.Contains(id, "exceed_context_size"):
		return llm.ErrContextOverflow
	case status == http.StatusRequestEntityTooLarge || strings.Contains(id, "request_too_large"):
		return llm.ErrContextOverflow
	case (status == 0 || status == http.StatusOK || status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) && containsAny(msg, overflowPhrases):
		return llm.ErrContextOverflow
	case strings.Contains(id, "authentication_error"), strings.Contains(id, "permission_error"),
		strings.Contains(id, "invalid_api_key"), strings.Contains(id, "unauthorized"):
		return llm.ErrAuthentication
	case strings.Contains(id, "billing_error"), strings.Contains(id, "insufficient_quota"):
		return llm.ErrBilling
	case strings.Contains(id, "rate_limit"), strings.Contains(id, "throttling"):
		// Bedrock's ThrottlingException (throttlingException inside a stream).
		return llm.ErrRateLimit
	case strings.Contains(id, "overloaded"), strings.Contains(id, "serviceunavailable"):
		return llm.ErrOverloaded
	case strings.Contains(id, "timeout"):
		return llm.ErrTimeout
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.ErrAuthentication
	case status == http.StatusPaymentRequired:
		return llm.ErrBilling
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return llm.ErrTimeout
	case status == http.StatusTooManyRequests:
		return llm.ErrRateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		return llm.ErrOverloaded
	case status >= 500:
		return llm.ErrServer
	case status >= 400:
		return llm.ErrInvalidRequest
	}
	// An error event inside a 200 stream with a type we do not know.
	return llm.ErrServer
}

// googleKind classifies by Google's canonical status and ErrorInfo reason,
// which say more than the HTTP status: an invalid API key is a 400.
func googleKind(d errorDoc) (llm.ErrorKind, bool) {
	switch {
	case d.reason == "API_KEY_INVALID", d.reason == "API_KEY_SERVICE_BLOCKED", d.status == "UNAUTHENTICATED", d.status == "PERMISSION_DENIED":
		return llm.ErrAuthentication, true
	case d.status == "RESOURCE_EXHAUSTED":
		return llm.ErrRateLimit, true
	case d.status == "UNAVAILABLE":
		return llm.ErrOverloaded, true
	case d.status == "DEADLINE_EXCEEDED":
		return llm.ErrTimeout, true
	case d.status == "FAILED_PRECONDITION" && strings.Contains(strings.ToLower(d.message), "billing"):
		return llm.ErrBilling, true
	}
	return "", false
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func header(h http.Header, name string) string {
	if h == nil {
		return ""
	}
	return h.Get(name)
}

// retryAfter reads retry-after-ms, then retry-after (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	if v := header(h, "retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := header(h, "retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
