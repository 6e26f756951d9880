package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
)

// A replayed run is served the same recorded answers every time it runs
// (an eval's repeats, its models' cells, a benchmark), and decoding an
// answer through an SDK's reflection-driven decoder was a tenth to a
// quarter of a replayed run's CPU time. Answers remembers what each answer
// body decoded to, by its exact bytes, so that a replay decodes each
// recorded answer once per process. A kept value is shared by every call
// that hits it and must not be modified; the adapters only read the SDK
// types they convert from.
type Answers[V any] struct {
	mu sync.Mutex
	// Two generations bound the memory, as in Encoded.
	cur, old map[string]V
	curBytes int
}

// Bounds of one generation of an Answers cache.
const (
	maxAnswers     = 1 << 12
	maxAnswerBytes = 16 << 20
)

// Decode decodes raw, the body of the 2xx answer res, as both SDKs decode
// a JSON answer into one of their types, with the same errors: an answer
// whose Content-Type is not JSON is refused, a body that is valid JSON is
// handed to decode whole (trimmed of spaces), anything else goes through
// encoding/json's decoder, which reads its first value. The SDKs' own
// decoder also reads the body twice (once to find the value's end, once
// to hand it over); here a valid body is read once. When remember is set
// (a replay), a body decoded before gives what it gave then, and a body
// decoded now is kept.
func (c *Answers[V]) Decode(res *http.Response, raw []byte, remember bool, decode func([]byte) (V, error)) (V, error) {
	var zero V
	ct := ""
	if res != nil {
		ct = res.Header.Get("content-type")
	}
	mediaType, _, _ := mime.ParseMediaType(ct)
	if !strings.Contains(mediaType, "application/json") && !strings.HasSuffix(mediaType, "+json") {
		return zero, fmt.Errorf("expected destination type of 'string' or '[]byte' for responses with content-type '%s' that is not 'application/json'", ct)
	}
	if remember {
		if v, ok := c.get(raw); ok {
			return v, nil
		}
	}
	var v V
	if json.Valid(raw) {
		var err error
		if v, err = decode(bytes.Trim(raw, " \t\r\n")); err != nil {
			return zero, fmt.Errorf("error parsing response json: %w", err)
		}
	} else {
		u := &unmarshaler[V]{decode: decode}
		if err := json.NewDecoder(bytes.NewReader(raw)).Decode(u); err != nil {
			return zero, fmt.Errorf("error parsing response json: %w", err)
		}
		// What follows the first value would make another body decode
		// alike; such bodies are rare and not worth a key of their own.
		return u.v, nil
	}
	if remember {
		c.put(raw, v)
	}
	return v, nil
}

// unmarshaler hands what encoding/json's decoder found to decode.
type unmarshaler[V any] struct {
	decode func([]byte) (V, error)
	v      V
}

func (u *unmarshaler[V]) UnmarshalJSON(raw []byte) error {
	v, err := u.decode(raw)
	u.v = v
	return err
}

func (c *Answers[V]) get(raw []byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[string(raw)]; ok {
		return v, true
	}
	v, ok := c.old[string(raw)]
	if ok {
		delete(c.old, string(raw))
		c.store(string(raw), v)
	}
	return v, ok
}

func (c *Answers[V]) put(raw []byte, v V) {
	if len(raw) > maxAnswerBytes/4 {
		return // not worth holding a generation for
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(string(raw), v)
}

func (c *Answers[V]) store(k string, v V) {
	if _, ok := c.cur[k]; ok {
		return
	}
	if c.cur == nil || len(c.cur) >= maxAnswers || c.curBytes+len(k) > maxAnswerBytes {
		c.old, c.cur, c.curBytes = c.cur, make(map[string]V), 0
	}
	c.cur[k] = v
	c.curBytes += len(k)
}

// Remember is Decode for a value that is not a whole HTTP answer, such as
// one event of a recorded stream: when remember is set (a replay), raw
// decoded before gives what it gave then, and raw decoded now without an
// error is kept. The same sharing rule holds: a kept value is read-only.
func (c *Answers[V]) Remember(raw []byte, remember bool, decode func([]byte) (V, error)) (V, error) {
	if !remember {
		return decode(raw)
	}
	if v, ok := c.get(raw); ok {
		return v, nil
	}
	v, err := decode(raw)
	if err != nil {
		return v, err
	}
	c.put(raw, v)
	return v, nil
}
