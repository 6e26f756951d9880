package openai

import (
	"encoding/json"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// fromTemplate returns the param build makes of vals, encoded from the
// template of shape k (see provider.Template), and its size; false when
// the shape has none or a string cannot fill it. build must depend on
// vals only by putting them into string fields.
func fromTemplate[K comparable, T marshalParam, PT param.InferPtr[T]](ts *provider.Templates[K], k K, vals []string, build func([]string) T) (T, int, bool) {
	var zero T
	t := ts.Get(k, len(vals), escapeHTML, func() ([]byte, error) {
		slots := make([]string, len(vals))
		for i := range slots {
			slots[i] = provider.Slot(i)
		}
		return build(slots).MarshalJSON()
	})
	if t == nil {
		return zero, 0, false
	}
	enc, ok := t.Fill(vals, 0)
	if !ok {
		return zero, 0, false
	}
	return param.Override[T, PT](json.RawMessage(enc)), len(enc), true
}

// chatShape is a shape of Chat Completions message with a template: its
// role, whether an assistant message has text, and its tool calls.
type chatShape struct {
	role  llm.Role
	text  bool
	calls int
}

var chatTemplates provider.Templates[chatShape]

// build makes the message of shape s with the given strings, as
// chatMessage makes it.
func (s chatShape) build(vals []string) sdk.ChatCompletionMessageParamUnion {
	switch s.role {
	case llm.RoleSystem:
		return sdk.SystemMessage(vals[0])
	case llm.RoleUser:
		u := &sdk.ChatCompletionUserMessageParam{}
		u.Content.OfString = param.NewOpt(vals[0])
		return sdk.ChatCompletionMessageParamUnion{OfUser: u}
	case llm.RoleAssistant:
		a := &sdk.ChatCompletionAssistantMessageParam{}
		if s.text {
			a.Content.OfString = param.NewOpt(vals[0])
			vals = vals[1:]
		}
		for range s.calls {
			a.ToolCalls = append(a.ToolCalls, toolCallParam(vals[0], vals[1], vals[2], ""))
			vals = vals[3:]
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: a}
	case llm.RoleTool:
		return sdk.ToolMessage(vals[0], vals[1])
	}
	panic("openai: unknown chat message shape")
}

func (s chatShape) encode(vals ...string) (sdk.ChatCompletionMessageParamUnion, int, bool) {
	return fromTemplate(&chatTemplates, s, vals, s.build)
}

// onlyText reports whether blocks hold text, of which some is not empty,
// and nothing else but thinking, which user turns do not send.
func onlyText(blocks []llm.Block) bool {
	some := false
	for _, b := range blocks {
		switch b.Type {
		case llm.BlockText:
			some = some || b.Text != ""
		case llm.BlockThinking, llm.BlockRedactedThinking:
		default:
			return false
		}
	}
	return some
}

// fastChatMessage converts and encodes a message as chatMessage and
// preEncode do, from templates, for messages of text and tool calls that
// send something; false for any other.
func fastChatMessage(msg *llm.Message) (sdk.ChatCompletionMessageParamUnion, int, bool) {
	switch msg.Role {
	case llm.RoleSystem:
		return chatShape{role: llm.RoleSystem}.encode(llm.ConcatText(msg.Content))
	case llm.RoleUser:
		if !onlyText(msg.Content) {
			break
		}
		return chatShape{role: llm.RoleUser}.encode(msg.Text())
	case llm.RoleAssistant:
		for _, b := range msg.Content {
			if b.Type == llm.BlockThinking && (strings.HasPrefix(b.Signature, geminiMessageSig) || strings.HasPrefix(b.Signature, geminiCallSig)) {
				return sdk.ChatCompletionMessageParamUnion{}, 0, false
			}
		}
		s := chatShape{role: llm.RoleAssistant, calls: len(msg.ToolCalls) + len(msg.InvalidToolCalls)}
		var vals []string
		if text := msg.Text(); text != "" {
			s.text = true
			vals = append(vals, text)
		}
		for _, tc := range msg.ToolCalls {
			vals = append(vals, tc.ID, tc.Name, argsString(tc.Args))
		}
		for _, tc := range msg.InvalidToolCalls {
			vals = append(vals, tc.ID, tc.Name, tc.Args)
		}
		if len(vals) == 0 {
			break
		}
		return s.encode(vals...)
	case llm.RoleTool:
		return chatShape{role: llm.RoleTool}.encode(msg.Text(), msg.ToolCallID)
	}
	return sdk.ChatCompletionMessageParamUnion{}, 0, false
}

// itemShape is a shape of Responses API input item with a template.
type itemShape struct {
	kind itemKind
	role responses.EasyInputMessageRole
}

type itemKind uint8

const (
	easyItem itemKind = iota + 1
	callItem
	outputItem
)

var itemTemplates provider.Templates[itemShape]

// build makes the item of shape s with the given strings, as inputItems
// makes it.
func (s itemShape) build(vals []string) responses.ResponseInputItemUnionParam {
	switch s.kind {
	case easyItem:
		return easyMessage(s.role, vals[0])
	case callItem:
		return responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: vals[0], Name: vals[1], Arguments: vals[2]}}
	case outputItem:
		return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: param.NewOpt(vals[0]),
			Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(vals[1])},
		}}
	}
	panic("openai: unknown input item shape")
}

// fastInputItems converts and encodes a message as inputItems and
// preEncode do, from templates, for messages of text and tool calls that
// send something; false for any other.
func fastInputItems(msg *llm.Message) ([]responses.ResponseInputItemUnionParam, int, bool) {
	var out []responses.ResponseInputItemUnionParam
	size := 0
	add := func(s itemShape, vals ...string) bool {
		it, n, ok := fromTemplate(&itemTemplates, s, vals, s.build)
		out = append(out, it)
		size += n
		return ok
	}
	ok := false
	switch msg.Role {
	case llm.RoleSystem:
		ok = add(itemShape{kind: easyItem, role: responses.EasyInputMessageRoleSystem}, llm.ConcatText(msg.Content))
	case llm.RoleUser:
		ok = onlyText(msg.Content) && add(itemShape{kind: easyItem, role: responses.EasyInputMessageRoleUser}, msg.Text())
	case llm.RoleAssistant:
		for _, b := range msg.Content {
			if b.Type == llm.BlockThinking && strings.HasPrefix(b.Signature, reasoningSig) {
				return nil, 0, false
			}
		}
		ok = true
		if text := msg.Text(); text != "" {
			ok = add(itemShape{kind: easyItem, role: responses.EasyInputMessageRoleAssistant}, text)
		}
		for _, tc := range msg.ToolCalls {
			ok = ok && add(itemShape{kind: callItem}, tc.ID, tc.Name, argsString(tc.Args))
		}
		for _, tc := range msg.InvalidToolCalls {
			ok = ok && add(itemShape{kind: callItem}, tc.ID, tc.Name, tc.Args)
		}
		ok = ok && len(out) > 0
	case llm.RoleTool:
		ok = add(itemShape{kind: outputItem}, msg.ToolCallID, msg.Text())
	}
	if !ok {
		return nil, 0, false
	}
	return out, size, true
}
