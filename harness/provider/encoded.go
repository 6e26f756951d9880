package provider

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/dageval/dageval/harness/llm"
)

// An agent sends its whole history on every call, so an adapter that
// converts and encodes every message of every request does work quadratic
// in the length of a run. Encoded remembers what an adapter made of each
// message (and tool) it has seen, so that each is converted and encoded
// once: the request is then built from pre-encoded parts, which the SDKs
// accept (param.Override) and send as they are.
//
// An entry is found by the identity of what it encodes (the message's
// content and tool-call arrays, which the runtime shares between the
// requests of a run and never modifies; a tool by a hash of its
// contents, see partKey) and checked field by field
// against a copy of them before it is used, so a part that was modified
// or rebuilt is encoded afresh. The comparisons cost little: equal strings
// that share memory compare without reading it, and tool arguments are
// compared at memory speed.
type Encoded[V any] struct {
	mu sync.Mutex
	// Two generations bound the memory: when cur is full it becomes old,
	// and an entry found in old moves back to cur.
	cur, old map[partKey]*encodedPart[V]
	curBytes int
}

// Bounds of one generation of an Encoded cache.
const (
	maxEncodedParts = 1 << 14
	maxEncodedBytes = 32 << 20
)

// partKey identifies a message by where its contents live, or a tool spec
// by a hash of its contents: the agents of an eval's cells and of a
// replay's runs are built anew, and those that build their tools anew too
// (rather than sharing their specs, as inferred schemas are) would encode
// every tool again in every run.
type partKey struct {
	content *llm.Block
	calls   *llm.ToolCall
	invalid *llm.InvalidToolCall
	sum     uint64 // of a tool's description and parameters
	marked  bool   // a tool with a cache marker
	role    llm.Role
	id      string // the tool call a tool message answers, or a tool's name
}

var toolSeed = maphash.MakeSeed()

// encodedPart is one entry: the parts' contents when it was encoded, and
// what they encoded to.
type encodedPart[V any] struct {
	msg   llm.Message
	cc    []llm.CacheControl // values of msg.Content's markers
	tool  llm.ToolSpec
	toolC llm.CacheControl
	v     V
	size  int
}

func messageKey(m *llm.Message) partKey {
	return partKey{
		content: sliceData(m.Content), calls: sliceData(m.ToolCalls), invalid: sliceData(m.InvalidToolCalls),
		role: m.Role, id: m.ToolCallID,
	}
}

func toolKey(t *llm.ToolSpec) partKey {
	var h maphash.Hash
	h.SetSeed(toolSeed)
	h.WriteString(t.Description)
	h.WriteByte(0)
	h.Write(t.Parameters)
	return partKey{sum: h.Sum64(), marked: t.CacheControl != nil, id: t.Name}
}

func sliceData[T any](s []T) *T {
	if cap(s) == 0 {
		return nil
	}
	return &s[:1][0]
}

// Message returns what m was encoded to, if it was.
func (c *Encoded[V]) Message(m *llm.Message) (V, bool) {
	e := c.get(messageKey(m))
	if e == nil || !e.sameMessage(m) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// PutMessage remembers that m encodes to v, which takes about size bytes.
func (c *Encoded[V]) PutMessage(m *llm.Message, v V, size int) {
	e := &encodedPart[V]{msg: *m, v: v, size: size}
	e.msg.Content = slices.Clone(m.Content)
	e.msg.ToolCalls = slices.Clone(m.ToolCalls)
	for i := range e.msg.ToolCalls {
		// Bytes, unlike strings, can change in place: keep a copy.
		e.msg.ToolCalls[i].Args = bytes.Clone(m.ToolCalls[i].Args)
	}
	e.msg.InvalidToolCalls = slices.Clone(m.InvalidToolCalls)
	e.cc = make([]llm.CacheControl, len(m.Content))
	for i, b := range m.Content {
		if b.CacheControl != nil {
			e.cc[i] = *b.CacheControl
		}
	}
	c.put(messageKey(m), e)
}

// Tool returns what t was encoded to, if it was.
func (c *Encoded[V]) Tool(t *llm.ToolSpec) (V, bool) {
	e := c.get(toolKey(t))
	if e == nil || !e.sameTool(t) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// PutTool remembers that t encodes to v, which takes about size bytes.
func (c *Encoded[V]) PutTool(t *llm.ToolSpec, v V, size int) {
	e := &encodedPart[V]{tool: *t, v: v, size: size}
	e.tool.Parameters = bytes.Clone(t.Parameters)
	if t.CacheControl != nil {
		e.toolC = *t.CacheControl
	}
	c.put(toolKey(t), e)
}

func (c *Encoded[V]) get(k partKey) *encodedPart[V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cur[k]; ok {
		return e
	}
	e, ok := c.old[k]
	if !ok {
		return nil
	}
	delete(c.old, k)
	c.store(k, e)
	return e
}

func (c *Encoded[V]) put(k partKey, e *encodedPart[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.size > maxEncodedBytes/4 {
		return // not worth holding a generation for
	}
	c.store(k, e)
}

func (c *Encoded[V]) store(k partKey, e *encodedPart[V]) {
	if c.cur == nil || len(c.cur) >= maxEncodedParts || c.curBytes+e.size > maxEncodedBytes {
		c.old, c.cur, c.curBytes = c.cur, make(map[partKey]*encodedPart[V]), 0
	}
	c.cur[k] = e
	c.curBytes += e.size
}

// sameMessage reports whether m has the contents e was encoded from, as
// far as any adapter encodes them.
func (e *encodedPart[V]) sameMessage(m *llm.Message) bool {
	o := &e.msg
	if m.Role != o.Role || m.Name != o.Name || m.ToolCallID != o.ToolCallID || m.IsError != o.IsError ||
		len(m.Content) != len(o.Content) || len(m.ToolCalls) != len(o.ToolCalls) || !slices.Equal(m.InvalidToolCalls, o.InvalidToolCalls) {
		return false
	}
	for i := range m.Content {
		b := &m.Content[i]
		if *b != o.Content[i] || b.CacheControl != nil && *b.CacheControl != e.cc[i] {
			return false
		}
	}
	for i := range m.ToolCalls {
		a, b := &m.ToolCalls[i], &o.ToolCalls[i]
		if a.ID != b.ID || a.Name != b.Name || !bytes.Equal(a.Args, b.Args) {
			return false
		}
	}
	return true
}

func (e *encodedPart[V]) sameTool(t *llm.ToolSpec) bool {
	o := &e.tool
	if t.Name != o.Name || t.Description != o.Description || !bytes.Equal(t.Parameters, o.Parameters) || (t.CacheControl == nil) != (o.CacheControl == nil) {
		return false
	}
	return t.CacheControl == nil || *t.CacheControl == e.toolC
}
