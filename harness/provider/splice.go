package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/llm"
)

// Even with every message and tool pre-encoded (see Encoded), an SDK that
// encodes a request walks it by reflection and copies each pre-encoded
// element through its JSON compactor twice, on every call: a fifth of a
// replayed run's CPU time. A request is instead encoded as a shell whose
// long lists each hold one placeholder element, and the lists' elements,
// already encoded, are spliced in place of the placeholders; the SDK is
// handed the result as the request's JSON (param.SetJSON), so it still
// builds the request from the same parameters, and the adapters send that
// JSON as the body itself (option.WithRequestBody) when no client option
// but the extra body fields they can set again would change it.

// Hole returns the JSON of the placeholder element that stands for list k
// in a shell. Its key starts with a NUL character, which an SDK encodes
// escaped, and a placeholder is only taken where it is a list's one
// element, "[" and "]" included, which a string cannot hold unescaped.
func Hole(k int) json.RawMessage {
	return json.RawMessage(`{"\u0000dageval splice":` + strconv.Itoa(k) + `}`)
}

// Splice returns shell with the placeholder list of Hole(k) replaced by
// the list of lists[k]'s elements, which must be encoded as the SDK
// encodes them in a list. It reports false, and the shell is not to be
// used, when some placeholder does not appear exactly once or the SDK's
// compaction would change the shell's own JSON.
func Splice(shell []byte, lists [][][]byte, escapeHTML bool) ([]byte, bool) {
	s, ok := NewShell(shell, len(lists), escapeHTML)
	if !ok {
		return nil, false
	}
	return s.Splice(lists), true
}

// A Shell is a shell (see Splice) checked and cut at its placeholders,
// which a request's parameters besides its lists decide: a model whose
// requests keep their settings, as an agent's do, splices every request
// into the shell it checked once. It is immutable.
type Shell struct {
	lits  [][]byte // the JSON between placeholders, one more than lists
	lists []int    // which list each placeholder stands for
}

// NewShell checks and cuts shell, which holds the placeholders of Hole(0)
// to Hole(n-1), as Splice does.
func NewShell(shell []byte, n int, escapeHTML bool) (*Shell, bool) {
	if !Compacted(shell, escapeHTML) {
		return nil, false
	}
	type cut struct{ at, end, k int }
	cuts := make([]cut, 0, n)
	for k := range n {
		mark := append(append([]byte{'['}, Hole(k)...), ']')
		at := bytes.Index(shell, mark)
		if at < 0 || bytes.Contains(shell[at+len(mark):], mark) {
			return nil, false
		}
		cuts = append(cuts, cut{at, at + len(mark), k})
	}
	// The lists are spliced in the order they appear in the shell.
	for i := 1; i < len(cuts); i++ {
		for j := i; j > 0 && cuts[j].at < cuts[j-1].at; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	s := &Shell{}
	last := 0
	for _, c := range cuts {
		if c.at < last {
			return nil, false // placeholders cannot overlap
		}
		s.lits = append(s.lits, shell[last:c.at])
		s.lists = append(s.lists, c.k)
		last = c.end
	}
	s.lits = append(s.lits, shell[last:])
	return s, true
}

// Splice returns the shell with its placeholder lists replaced by lists,
// one for each placeholder.
func (s *Shell) Splice(lists [][][]byte) []byte {
	size := 0
	for _, l := range s.lits {
		size += len(l)
	}
	for _, elems := range lists {
		size += 2
		for _, e := range elems {
			size += len(e) + 1
		}
	}
	out := make([]byte, 0, size)
	for i, k := range s.lists {
		out = append(out, s.lits[i]...)
		out = append(out, '[')
		for j, e := range lists[k] {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(out, e...)
		}
		out = append(out, ']')
	}
	return append(out, s.lits[len(s.lits)-1]...)
}

// Shells keeps the shell of a model's latest request, by a key an adapter
// makes of everything its shell is built from (see SettingsOf), so that
// requests with the same settings are spliced into it without the SDK
// encoding the rest of the request again.
type Shells[K comparable] struct {
	mu    sync.Mutex
	key   K
	shell *Shell
}

// Get returns the shell of key, checked and cut from what encode returns
// (which must hold n placeholders) unless it was the latest key's; false
// when that cannot be a shell.
func (c *Shells[K]) Get(key K, n int, escapeHTML bool, encode func() ([]byte, error)) (*Shell, bool) {
	c.mu.Lock()
	if c.shell != nil && c.key == key {
		s := c.shell
		c.mu.Unlock()
		return s, true
	}
	c.mu.Unlock()
	raw, err := encode()
	if err != nil {
		return nil, false
	}
	s, ok := NewShell(raw, n, escapeHTML)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	c.key, c.shell = key, s
	c.mu.Unlock()
	return s, true
}

// SharedShells keeps the shells of requests by their keys, for every model
// of an adapter, whose keys then hold what of a model's config its shells
// are built from: an eval run builds a model for each cell, and a Shells
// of each model checked and cut the shell of its first request again, one
// more encoding of the request by the SDK per cell. It keeps a bounded
// number of shells.
type SharedShells[K comparable] struct {
	mu     sync.Mutex
	shells map[K]*Shell
}

// maxSharedShells bounds a SharedShells; a full one starts again empty.
const maxSharedShells = 256

// Get is Shells.Get for the shell of any key kept.
func (c *SharedShells[K]) Get(key K, n int, escapeHTML bool, encode func() ([]byte, error)) (*Shell, bool) {
	c.mu.Lock()
	s, ok := c.shells[key]
	c.mu.Unlock()
	if ok {
		return s, true
	}
	raw, err := encode()
	if err != nil {
		return nil, false
	}
	if s, ok = NewShell(raw, n, escapeHTML); !ok {
		return nil, false
	}
	c.mu.Lock()
	if c.shells == nil || len(c.shells) >= maxSharedShells {
		c.shells = make(map[K]*Shell)
	}
	c.shells[key] = s
	c.mu.Unlock()
	return s, true
}

// Settings is what, besides its system prompt, messages, tools and
// response format, a request says, as one comparable value: two requests
// of a model with equal settings and no response format are encoded alike
// but for those.
type Settings struct {
	ToolChoice        llm.ToolChoice
	HasToolChoice     bool
	MaxTokens         int
	Temperature, TopP float64
	HasTemperature    bool
	HasTopP           bool
	Seed              int64
	HasSeed           bool
	Stop              string // the stop sequences, each with its length
	HasStop           bool   // a list of stop sequences, maybe empty
	Thinking          int
	HasThinking       bool
}

// SettingsOf returns req's settings; false when req has a response format,
// which adapters encode into their requests' shells.
func SettingsOf(req *llm.Request) (Settings, bool) {
	if req.ResponseFormat != nil {
		return Settings{}, false
	}
	s := Settings{MaxTokens: req.MaxTokens}
	if tc := req.ToolChoice; tc != nil {
		s.ToolChoice, s.HasToolChoice = *tc, true
	}
	if t := req.Temperature; t != nil {
		s.Temperature, s.HasTemperature = *t, true
	}
	if t := req.TopP; t != nil {
		s.TopP, s.HasTopP = *t, true
	}
	if v := req.Seed; v != nil {
		s.Seed, s.HasSeed = *v, true
	}
	if req.StopSequences != nil {
		s.HasStop = true
		var b strings.Builder
		for _, stop := range req.StopSequences {
			b.WriteString(strconv.Itoa(len(stop)))
			b.WriteByte(':')
			b.WriteString(stop)
		}
		s.Stop = b.String()
	}
	if th := req.Thinking; th != nil {
		s.Thinking, s.HasThinking = th.BudgetTokens, true
	}
	return s, true
}

// Element is an SDK param that encodes itself and may have been given
// its JSON (param.Override).
type Element interface {
	Overrides() (any, bool)
	MarshalJSON() ([]byte, error)
}

// ListJSON returns the JSON of each element of ps as the SDK encodes it in
// a list: the JSON it was given by param.Override (which preEncode made
// sure the SDK sends unchanged), or else its own encoding, which must be
// unchanged by the SDK's compaction (see Compacted). It reports false when
// ps is empty or an element does not encode so.
func ListJSON[P Element](ps []P, escapeHTML bool) ([][]byte, bool) {
	if len(ps) == 0 {
		return nil, false
	}
	out := make([][]byte, len(ps))
	for i, p := range ps {
		if v, ok := p.Overrides(); ok {
			raw, isRaw := v.(json.RawMessage)
			if !isRaw {
				return nil, false
			}
			out[i] = raw
			continue
		}
		raw, err := p.MarshalJSON()
		if err != nil || !Compacted(raw, escapeHTML) {
			return nil, false
		}
		out[i] = raw
	}
	return out, true
}

// Compacted reports whether the SDKs' compaction of JSON they are given
// (param.SetJSON) leaves raw as it is: no space between tokens and, for an
// SDK that escapes HTML, none of the characters it escapes.
func Compacted(raw []byte, escapeHTML bool) bool {
	if escapeHTML && (bytes.ContainsAny(raw, "<>&") || bytes.ContainsRune(raw, '\u2028') || bytes.ContainsRune(raw, '\u2029')) {
		return false
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	return json.Compact(&buf, raw) == nil && bytes.Equal(buf.Bytes(), raw)
}

// PlainKeys reports whether every key of extra is a plain field name
// (letters, digits, _ and -), not a path: setting such a key on an empty
// object, as a client's options do to a body handed over whole, cannot
// fail where setting it on the encoded request would not.
func PlainKeys(extra map[string]any) bool {
	for k := range extra {
		if k == "" {
			return false
		}
		for _, c := range k {
			if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}
