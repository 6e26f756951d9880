package middleware

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/dageval/dageval/harness/llm"
)

// TokenCounter estimates how many tokens a model call with this system
// prompt, these messages and these tools would use. Any of the three may be
// empty; SummarizationMiddleware calls it once per model call.
type TokenCounter func(system []llm.Block, messages []llm.Message, tools []llm.ToolSpec) int

// Constants of the approximate token counter.
const (
	// charsPerToken is the usual rule of thumb for English text and code;
	// the filesystem middleware turns its token limits into characters with it.
	charsPerToken = 4
	// messageOverheadTokens covers the role marker and separators every
	// message costs on the wire.
	messageOverheadTokens = 3
	// toolOverheadTokens covers the framing of one tool definition.
	toolOverheadTokens = 8
	// mediaBlockTokens is what one image, audio, video or file block is
	// assumed to cost; providers bill media by their own rules, which
	// reported usage calibrates.
	mediaBlockTokens = 1500
)

// approxTokens is a stateless approximate TokenCounter: four ASCII
// characters per token, and two characters per token for everything else
// (a conservative guess for accented, Cyrillic or CJK text, where tokens
// carry fewer characters), plus a small overhead per message and per tool.
// It needs no tokenizer files and no network. SummarizationMiddleware uses
// approxCounter, which gives the same answers but measures each tool schema
// only once.
func approxTokens(system []llm.Block, messages []llm.Message, tools []llm.ToolSpec) int {
	n := blocksTokens(system) + messagesTokens(messages)
	for i := range tools {
		n += toolTokens(&tools[i])
	}
	return n
}

// approxCounter returns a TokenCounter equal to approxTokens that remembers
// the size of every tool schema it has measured, so that the dozens of tools
// an agent offers on every call are not re-measured each time. The cache
// holds one entry per tool name and is safe for concurrent use.
func approxCounter() TokenCounter { return approxCounterWith(newToolCache()) }

func approxCounterWith(c *toolCache) TokenCounter {
	return func(system []llm.Block, messages []llm.Message, tools []llm.ToolSpec) int {
		return blocksTokens(system) + messagesTokens(messages) + c.total(tools)
	}
}

// textUnits weighs text for the approximate counter: one unit per ASCII
// byte, two per other character; charsPerToken units make a token. It
// checks eight bytes at a time because the history of a long conversation
// is scanned on every model call and is mostly ASCII.
func textUnits[T ~string | ~[]byte](s T) int {
	n := 0
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 == 0 {
			n += 8
			continue
		}
		for k := i; k < i+8; k++ {
			n += byteUnits(s[k])
		}
	}
	for ; i < len(s); i++ {
		n += byteUnits(s[i])
	}
	return n
}

// byteUnits counts an ASCII byte once and the lead byte of a multi-byte
// character twice; continuation bytes count nothing.
func byteUnits(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b >= 0xC0:
		return 2
	}
	return 0
}

func unitsToTokens(u int) int { return (u + charsPerToken - 1) / charsPerToken }

func blocksUnits(blocks []llm.Block) (units, media int) {
	for i := range blocks {
		b := &blocks[i]
		switch b.Type {
		case llm.BlockText:
			units += textUnits(b.Text)
		case llm.BlockThinking:
			units += textUnits(b.Thinking)
		case llm.BlockRedactedThinking:
			units += len(b.Redacted)
		case llm.BlockImage, llm.BlockAudio, llm.BlockVideo, llm.BlockFile:
			if b.Data != "" {
				media++
			} else {
				units += len(b.URL)
			}
		}
	}
	return units, media
}

func blocksTokens(blocks []llm.Block) int {
	u, media := blocksUnits(blocks)
	return unitsToTokens(u) + media*mediaBlockTokens
}

func messageTokens(m *llm.Message) int {
	u, media := blocksUnits(m.Content)
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		u += len(tc.Name) + len(tc.ID) + textUnits(tc.Args)
	}
	for i := range m.InvalidToolCalls {
		tc := &m.InvalidToolCalls[i]
		u += len(tc.Name) + len(tc.ID) + textUnits(tc.Args)
	}
	u += len(m.ToolCallID) + len(m.Name)
	return unitsToTokens(u) + media*mediaBlockTokens + messageOverheadTokens
}

func messagesTokens(msgs []llm.Message) int {
	n := 0
	for i := range msgs {
		n += messageTokens(&msgs[i])
	}
	return n
}

func toolTokens(t *llm.ToolSpec) int {
	return unitsToTokens(len(t.Name)+textUnits(t.Description)+textUnits(t.Parameters)) + toolOverheadTokens
}

// maxCachedTools bounds the tool cache; past it the cache starts over, which
// only costs re-measuring.
const maxCachedTools = 4096

// toolCache remembers the token count of each tool by name. An entry is
// reused only when the description and schema are equal to the measured
// ones; comparing them is cheap because an agent passes the same strings and
// byte slices on every call, and Go compares identical memory without
// reading it. Lookups are lock-free: the map is replaced, never modified.
type toolCache struct {
	mu      sync.Mutex // serialises writers
	entries atomic.Pointer[map[string]toolEntry]
}

type toolEntry struct {
	description string
	parameters  []byte
	tokens      int
}

func newToolCache() *toolCache {
	c := &toolCache{}
	m := map[string]toolEntry{}
	c.entries.Store(&m)
	return c
}

func (c *toolCache) total(tools []llm.ToolSpec) int {
	m := *c.entries.Load()
	n := 0
	var missed []int
	for i := range tools {
		t := &tools[i]
		if e, ok := m[t.Name]; ok && e.description == t.Description && bytes.Equal(e.parameters, t.Parameters) {
			n += e.tokens
			continue
		}
		missed = append(missed, i)
	}
	if len(missed) == 0 {
		return n
	}
	fresh := make(map[string]toolEntry, len(missed))
	for _, i := range missed {
		t := &tools[i]
		k := toolTokens(t)
		n += k
		fresh[t.Name] = toolEntry{description: t.Description, parameters: t.Parameters, tokens: k}
	}
	c.store(fresh)
	return n
}

func (c *toolCache) store(fresh map[string]toolEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.entries.Load()
	next := make(map[string]toolEntry, len(old)+len(fresh))
	if len(old)+len(fresh) <= maxCachedTools {
		for k, v := range old {
			next[k] = v
		}
	}
	for k, v := range fresh {
		next[k] = v
	}
	c.entries.Store(&next)
}
