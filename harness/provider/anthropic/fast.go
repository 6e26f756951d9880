package anthropic

import (
	"bytes"
	"encoding/json"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// blockShape is a shape of content block whose encoding is a template
// (see provider.Template): its kind and what, besides its strings, the
// block's param is built from.
type blockShape struct {
	kind    blockKind
	cc      llm.CacheControl
	hasCC   bool
	texts   int // a tool result's text blocks
	isError bool
}

type blockKind uint8

const (
	textKind blockKind = iota + 1
	thinkingKind
	redactedKind
	toolUseKind
	toolResultKind
)

var blockTemplates provider.Templates[blockShape]

func shapeCC(c *llm.CacheControl) (llm.CacheControl, bool) {
	if c == nil {
		return llm.CacheControl{}, false
	}
	return *c, true
}

// build returns the param of shape s with the given strings, as the
// converters in request.go build it; a template's param has slots for
// the strings.
func (s blockShape) build(vals []string) sdk.ContentBlockParamUnion {
	var cc *llm.CacheControl
	if s.hasCC {
		cc = &s.cc
	}
	switch s.kind {
	case textKind:
		t := textBlock(llm.Block{Type: llm.BlockText, Text: vals[0], CacheControl: cc})
		return sdk.ContentBlockParamUnion{OfText: &t}
	case thinkingKind:
		return sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: vals[0], Signature: vals[1]}}
	case redactedKind:
		return sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: vals[0]}}
	case toolUseKind:
		return sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: vals[0], Name: vals[1], Input: json.RawMessage(vals[2])}}
	case toolResultKind:
		m := llm.Message{Role: llm.RoleTool, ToolCallID: vals[0], IsError: s.isError}
		for _, t := range vals[1:] {
			m.Content = append(m.Content, llm.TextBlock(t))
		}
		if len(m.Content) > 0 {
			m.Content[len(m.Content)-1].CacheControl = cc
		}
		return toolResult(m)
	}
	panic("anthropic: unknown block shape")
}

// rawSlots says which of a shape's strings are raw JSON.
func (s blockShape) rawSlots() uint64 {
	if s.kind == toolUseKind {
		return 1 << 2
	}
	return 0
}

// encode returns the block of shape s with the given strings, encoded
// from its template, and its size; false when it has none or a string
// cannot fill it.
func (s blockShape) encode(vals []string) (sdk.ContentBlockParamUnion, int, bool) {
	raw := s.rawSlots()
	t := blockTemplates.Get(s, len(vals), escapeHTML, func() ([]byte, error) {
		slots := make([]string, len(vals))
		for k := range slots {
			slots[k] = provider.Slot(k)
			if raw&(1<<k) != 0 {
				// A raw slot holds JSON: a string holding the marker.
				slots[k] = `"` + "\\u0000" + slots[k][1:] + `"`
			}
		}
		return s.build(slots).MarshalJSON()
	})
	if t == nil {
		return sdk.ContentBlockParamUnion{}, 0, false
	}
	enc, ok := t.Fill(vals, raw)
	if !ok {
		return sdk.ContentBlockParamUnion{}, 0, false
	}
	return param.Override[sdk.ContentBlockParamUnion](json.RawMessage(enc)), len(enc), true
}

// fastBlocks converts and encodes a message's blocks as blocksOf does,
// from templates, for messages made only of text, thinking and tool
// calls or results; false for any other message, or when a block cannot
// be encoded so.
func fastBlocks(m *llm.Message) ([]sdk.ContentBlockParamUnion, int, bool) {
	var out []sdk.ContentBlockParamUnion
	size := 0
	add := func(s blockShape, vals ...string) bool {
		b, n, ok := s.encode(vals)
		if ok {
			out = append(out, b)
			size += n
		}
		return ok
	}
	switch m.Role {
	case llm.RoleUser:
		for _, b := range m.Content {
			if b.Type != llm.BlockText {
				return nil, 0, false
			}
			if b.Text == "" {
				continue
			}
			cc, has := shapeCC(b.CacheControl)
			if !add(blockShape{kind: textKind, cc: cc, hasCC: has}, b.Text) {
				return nil, 0, false
			}
		}
	case llm.RoleAssistant:
		for _, b := range m.Content {
			ok := true
			switch b.Type {
			case llm.BlockThinking:
				if ownSignature(b.Signature) {
					ok = add(blockShape{kind: thinkingKind}, b.Thinking, b.Signature)
				}
			case llm.BlockRedactedThinking:
				if b.Redacted != "" && ownSignature(b.Redacted) {
					ok = add(blockShape{kind: redactedKind}, b.Redacted)
				}
			case llm.BlockText:
				if b.Text != "" {
					cc, has := shapeCC(b.CacheControl)
					ok = add(blockShape{kind: textKind, cc: cc, hasCC: has}, b.Text)
				}
			default:
				ok = false
			}
			if !ok {
				return nil, 0, false
			}
		}
		for _, tc := range m.ToolCalls {
			input := []byte("{}")
			if len(bytes.TrimSpace(tc.Args)) > 0 && json.Valid(tc.Args) {
				input = tc.Args
			}
			if !provider.Compacted(input, escapeHTML) || !add(blockShape{kind: toolUseKind}, tc.ID, tc.Name, string(input)) {
				return nil, 0, false
			}
		}
		for _, tc := range m.InvalidToolCalls {
			if !add(blockShape{kind: toolUseKind}, tc.ID, tc.Name, "{}") {
				return nil, 0, false
			}
		}
	case llm.RoleTool:
		vals := []string{m.ToolCallID}
		for _, b := range m.Content {
			if b.Type != llm.BlockText || b.Text == "" {
				return nil, 0, false
			}
			vals = append(vals, b.Text)
		}
		s := blockShape{kind: toolResultKind, texts: len(vals) - 1, isError: m.IsError}
		if n := len(m.Content); n > 0 {
			s.cc, s.hasCC = shapeCC(m.Content[n-1].CacheControl)
		}
		if !add(s, vals...) {
			return nil, 0, false
		}
	default:
		return nil, 0, false
	}
	return out, size, true
}

// turnShells are the encodings of a user and an assistant turn, as
// appendTurn builds them, whose content list is one placeholder (see
// provider.Splice).
var turnShells = sync.OnceValue(func() (shells [2][]byte) {
	hole := []sdk.ContentBlockParamUnion{param.Override[sdk.ContentBlockParamUnion](provider.Hole(0))}
	shells[0], _ = sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: hole}}.MarshalJSON()
	shells[1], _ = sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: hole}}.MarshalJSON()
	return shells
})

// splicedTurn encodes a turn built by appendTurn as the SDK would, from
// its shell and its blocks' encodings, instead of having the SDK walk the
// turn and compact every block's JSON again; false when it cannot.
func splicedTurn(p *sdk.MessageParam) (sdk.MessageParam, int, bool) {
	var shell []byte
	var content []sdk.ContentBlockParamUnion
	switch {
	case p.OfUser != nil && p.OfAssistant == nil && p.OfSystem == nil:
		shell, content = turnShells()[0], p.OfUser.Content
	case p.OfAssistant != nil && p.OfUser == nil && p.OfSystem == nil:
		shell, content = turnShells()[1], p.OfAssistant.Content
	default:
		return sdk.MessageParam{}, 0, false
	}
	elems, ok := provider.ListJSON(content, escapeHTML)
	if !ok || shell == nil {
		return sdk.MessageParam{}, 0, false
	}
	enc, ok := provider.Splice(shell, [][][]byte{elems}, escapeHTML)
	if !ok {
		return sdk.MessageParam{}, 0, false
	}
	return param.Override[sdk.MessageParam](json.RawMessage(enc)), len(enc), true
}
