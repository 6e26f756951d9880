package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// params translates a provider-neutral request into Messages API
// parameters that send themselves spliced (see spliced).
func (m *Model) params(req *llm.Request) (sdk.MessageNewParams, error) {
	p, err := m.fields(req)
	if err != nil {
		return p, err
	}
	settings, keyed := provider.SettingsOf(req)
	return m.spliced(p, settings, keyed), nil
}

// fields translates a provider-neutral request into Messages API
// parameters. What it reads of req besides the system prompt, messages and
// tools must be in provider.Settings, which keys the shells of spliced
// requests.
func (m *Model) fields(req *llm.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: m.cfg.Model}
	p.MaxTokens = int64(req.MaxTokens)
	if p.MaxTokens <= 0 {
		p.MaxTokens = int64(m.cfg.MaxTokens)
	}
	if p.MaxTokens <= 0 {
		p.MaxTokens = provider.DefaultMaxTokens
	}
	sys, err := m.systemBlocks(req.System)
	if err != nil {
		return p, err
	}
	p.System = sys
	msgs, system, err := m.convertMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.System = append(p.System, system...)
	p.Messages = msgs
	for i := range req.Tools {
		t := &req.Tools[i]
		tu, ok := tools.Tool(t)
		if !ok {
			tp, err := m.toolParam(*t)
			if err != nil {
				return p, err
			}
			var size int
			tu, size = preEncode(sdk.ToolUnionParam{OfTool: tp})
			tools.PutTool(t, tu, size)
		}
		p.Tools = append(p.Tools, tu)
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case llm.ToolChoiceAuto, "":
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
		case llm.ToolChoiceAny:
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
		case llm.ToolChoiceNone:
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
		case llm.ToolChoiceTool:
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: tc.Name}}
		default:
			return p, fmt.Errorf("anthropic: unknown tool choice mode %q", tc.Mode)
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		schema, err := objectSchema(rf.Schema)
		if err != nil {
			return p, fmt.Errorf("anthropic: response format %s: %w", rf.Name, err)
		}
		closeObjects(schema)
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	if th := req.Thinking; th != nil {
		if th.BudgetTokens <= 0 || adaptiveOnly(m.cfg.Model) {
			p.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
		} else {
			p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(max(th.BudgetTokens, 1024))}}
		}
	}
	p.StopSequences = req.StopSequences
	// Temperature, TopP and Seed are not sent: API version 2026-10-21 rejects
	// sampling parameters with a 400 and has no seed (see the package doc).
	return p, nil
}

// systemBlocks converts the system prompt, encoded once (see spliced).
func (m *Model) systemBlocks(system []llm.Block) ([]sdk.TextBlockParam, error) {
	if len(system) == 0 {
		return nil, nil
	}
	key := llm.Message{Role: llm.RoleSystem, Content: system}
	if blocks, ok := m.system.Message(&key); ok {
		return slices.Clip(blocks), nil
	}
	var out []sdk.TextBlockParam
	size := 0
	for i, b := range system {
		if b.Type != llm.BlockText {
			return nil, fmt.Errorf("anthropic: system block %d has type %s; the system prompt takes text only", i, b.Type)
		}
		if b.Text == "" {
			continue
		}
		enc, n := preEncode(textBlock(b))
		out = append(out, enc)
		size += n
	}
	m.system.PutMessage(&key, out, size)
	return slices.Clip(out), nil
}

// modelVersion reads "claude-<family>-<major>[-<minor>]" model ids.
var modelVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^claude-([a-z]+)-(\d+)(?:-(\d{1,2}))?(?:-|$)`) })

// adaptiveOnly reports models that reject budget-based thinking: Opus 4.7
// and every model from generation 5 on (Fable and Mythos included).
func adaptiveOnly(model string) bool {
	m := modelVersion().FindStringSubmatch(model)
	if m == nil {
		return false
	}
	if m[1] == "fable" || m[1] == "mythos" {
		return true
	}
	major, _ := strconv.Atoi(m[2])
	minor, _ := strconv.Atoi(m[3])
	return major >= 5 || (major == 4 && minor >= 7)
}

func cacheControl(c *llm.CacheControl) sdk.CacheControlEphemeralParam {
	p := sdk.NewCacheControlEphemeralParam()
	if c.TTL != "" {
		p.TTL = sdk.CacheControlEphemeralTTL(c.TTL)
	}
	return p
}

func textBlock(b llm.Block) sdk.TextBlockParam {
	t := sdk.TextBlockParam{Text: b.Text}
	if b.CacheControl != nil {
		t.CacheControl = cacheControl(b.CacheControl)
	}
	return t
}

// messages converts the conversation. Leading system messages join the
// system prompt; later ones stay in place as system-role messages. Tool
// results become tool_result blocks of a user turn, and consecutive turns of
// the same role are merged, as the API expects.
func (model *Model) convertMessages(in []llm.Message) ([]sdk.MessageParam, []sdk.TextBlockParam, error) {
	var out []sdk.MessageParam
	var system []sdk.TextBlockParam
	// turns[k] says which messages out[k] holds the blocks of.
	var turns []turnMembers
	leading := true
	for i, m := range in {
		if m.Role == llm.RoleSystem {
			var blocks []sdk.TextBlockParam
			for _, b := range m.Content {
				if b.Type == llm.BlockText && b.Text != "" {
					blocks = append(blocks, textBlock(b))
				}
			}
			if leading {
				system = append(system, blocks...)
			} else if len(blocks) > 0 {
				out = append(out, sdk.MessageParam{OfSystem: &sdk.SystemMessageParam{Content: blocks}})
				turns = append(turns, turnMembers{first: -1})
			}
			continue
		}
		blocks, err := model.blocksOf(&in[i], i)
		if err != nil {
			return nil, nil, err
		}
		n := len(out)
		out = appendTurn(out, turnRole(m.Role), blocks)
		if len(out) > n {
			turns = append(turns, turnMembers{first: i})
		}
		if len(blocks) > 0 {
			t := &turns[len(turns)-1]
			t.members = append(t.members, &blocks[0])
		}
		leading = false
	}
	for k := range out {
		if t := turns[k]; t.first >= 0 {
			model.encodeTurn(&out[k], &in[t.first], t.members)
		}
	}
	return out, system, nil
}

// turnMembers lists the messages of one turn: the first one's index and
// the blocks each contributed (as the block cache holds them).
type turnMembers struct {
	first   int
	members []*sdk.ContentBlockParamUnion
}

// encodedTurn is a turn encoded once, valid while it holds the same
// messages' blocks.
type encodedTurn struct {
	members []*sdk.ContentBlockParamUnion
	param   sdk.MessageParam
}

// encodeTurn replaces a turn by its encoding from an earlier request, or
// encodes it for later ones: a turn is one element for the SDK to encode,
// where its blocks are many, each costing the SDK's union machinery even
// when pre-encoded.
func (model *Model) encodeTurn(p *sdk.MessageParam, first *llm.Message, members []*sdk.ContentBlockParamUnion) {
	if e, ok := model.turns.Message(first); ok && slices.Equal(e.members, members) {
		*p = e.param
		return
	}
	enc, size, ok := splicedTurn(p)
	if !ok {
		if enc, size = preEncode(*p); size == 0 {
			return
		}
	}
	model.turns.PutMessage(first, &encodedTurn{members: slices.Clone(members), param: enc}, size)
	*p = enc
}

// blocksOf returns a message's blocks, converted and encoded once.
func (model *Model) blocksOf(m *llm.Message, i int) ([]sdk.ContentBlockParamUnion, error) {
	if blocks, ok := model.blocks.Message(m); ok {
		return blocks, nil
	}
	if blocks, size, ok := fastBlocks(m); ok {
		// Capped, as remember caps them.
		blocks = blocks[:len(blocks):len(blocks)]
		model.blocks.PutMessage(m, blocks, size)
		return blocks, nil
	}
	var blocks []sdk.ContentBlockParamUnion
	switch m.Role {
	case llm.RoleUser:
		var err error
		if blocks, err = contentBlocks(m.Content, i); err != nil {
			return nil, err
		}
	case llm.RoleAssistant:
		var err error
		if blocks, err = assistantBlocks(*m, i); err != nil {
			return nil, err
		}
	case llm.RoleTool:
		blocks = []sdk.ContentBlockParamUnion{toolResult(*m)}
	default:
		return nil, fmt.Errorf("anthropic: message %d has unknown role %q", i, m.Role)
	}
	return model.remember(m, blocks), nil
}

// turnRole is the role of the turn a message's blocks join.
func turnRole(r llm.Role) llm.Role {
	if r == llm.RoleTool {
		return llm.RoleUser
	}
	return r
}

// remember encodes a message's blocks for later requests and returns them.
// They are capped at their length: appendTurn appends to the blocks of the
// turn they start.
func (model *Model) remember(m *llm.Message, blocks []sdk.ContentBlockParamUnion) []sdk.ContentBlockParamUnion {
	enc := make([]sdk.ContentBlockParamUnion, len(blocks))
	size := 0
	for k, b := range blocks {
		var n int
		enc[k], n = preEncode(b)
		size += n
	}
	model.blocks.PutMessage(m, enc, size)
	return enc
}

func appendTurn(out []sdk.MessageParam, role llm.Role, blocks []sdk.ContentBlockParamUnion) []sdk.MessageParam {
	if len(blocks) == 0 {
		return out
	}
	if n := len(out); n > 0 {
		last := &out[n-1]
		switch {
		case role == llm.RoleUser && last.OfUser != nil:
			last.OfUser.Content = append(last.OfUser.Content, blocks...)
			return out
		case role == llm.RoleAssistant && last.OfAssistant != nil:
			last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
			return out
		}
	}
	if role == llm.RoleUser {
		return append(out, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
	}
	return append(out, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
}

// contentBlocks converts user content: text, images and PDF/text documents.
func contentBlocks(in []llm.Block, msg int) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	for j, b := range in {
		switch b.Type {
		case llm.BlockText:
			if b.Text == "" {
				continue
			}
			t := textBlock(b)
			out = append(out, sdk.ContentBlockParamUnion{OfText: &t})
		case llm.BlockImage:
			img := &sdk.ImageBlockParam{}
			switch {
			case b.Data != "":
				img.Source.OfBase64 = &sdk.Base64ImageSourceParam{Data: b.Data, MediaType: sdk.Base64ImageSourceMediaType(b.MediaType)}
			case b.URL != "":
				img.Source.OfURL = &sdk.URLImageSourceParam{URL: b.URL}
			default:
				return nil, fmt.Errorf("anthropic: message %d block %d: image has neither data nor url", msg, j)
			}
			if b.CacheControl != nil {
				img.CacheControl = cacheControl(b.CacheControl)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfImage: img})
		case llm.BlockFile:
			doc := &sdk.DocumentBlockParam{}
			switch {
			case b.URL != "":
				doc.Source.OfURL = &sdk.URLPDFSourceParam{URL: b.URL}
			case b.MediaType == "application/pdf":
				doc.Source.OfBase64 = &sdk.Base64PDFSourceParam{Data: b.Data}
			case strings.HasPrefix(b.MediaType, "text/"):
				doc.Source.OfText = &sdk.PlainTextSourceParam{Data: b.Data}
			default:
				return nil, fmt.Errorf("anthropic: message %d block %d: files of type %q are not supported (PDF or text only)", msg, j, b.MediaType)
			}
			if b.CacheControl != nil {
				doc.CacheControl = cacheControl(b.CacheControl)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfDocument: doc})
		case llm.BlockThinking, llm.BlockRedactedThinking:
			// Thinking belongs to assistant turns only.
		default:
			return nil, fmt.Errorf("anthropic: message %d block %d: %s content is not supported", msg, j, b.Type)
		}
	}
	return out, nil
}

// ownSignature reports whether a thinking signature came from Anthropic.
// Other adapters store their opaque reasoning state as "<scheme>:<payload>";
// Anthropic signatures are base64 and never contain a colon.
func ownSignature(sig string) bool { return sig != "" && !strings.Contains(sig, ":") }

// assistantBlocks converts an assistant turn: thinking first (with its
// signature, verbatim), then text, then one tool_use per call.
func assistantBlocks(m llm.Message, msg int) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	for j, b := range m.Content {
		switch b.Type {
		case llm.BlockThinking:
			if !ownSignature(b.Signature) {
				continue // unsigned or foreign thinking cannot be replayed to Claude
			}
			out = append(out, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: b.Thinking, Signature: b.Signature}})
		case llm.BlockRedactedThinking:
			if b.Redacted != "" && ownSignature(b.Redacted) {
				out = append(out, sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: b.Redacted}})
			}
		case llm.BlockText:
			if b.Text == "" {
				continue
			}
			t := textBlock(b)
			out = append(out, sdk.ContentBlockParamUnion{OfText: &t})
		default:
			return nil, fmt.Errorf("anthropic: message %d block %d: assistant turns cannot carry %s content", msg, j, b.Type)
		}
	}
	for _, tc := range m.ToolCalls {
		out = append(out, toolUse(tc.ID, tc.Name, tc.Args))
	}
	// A call whose arguments did not parse is still answered by a tool
	// result, so it must appear as a tool_use for the pairing to hold.
	for _, tc := range m.InvalidToolCalls {
		out = append(out, toolUse(tc.ID, tc.Name, nil))
	}
	return out, nil
}

func toolUse(id, name string, args json.RawMessage) sdk.ContentBlockParamUnion {
	input := json.RawMessage("{}")
	if len(bytes.TrimSpace(args)) > 0 && json.Valid(args) {
		input = args
	}
	return sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: id, Name: name, Input: input}}
}

// toolResult converts a tool message. A cache marker on its last block
// becomes the tool_result's marker.
func toolResult(m llm.Message) sdk.ContentBlockParamUnion {
	r := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if m.IsError {
		r.IsError = sdk.Bool(true)
	}
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: b.Text}})
			}
		case llm.BlockImage:
			img := &sdk.ImageBlockParam{}
			if b.Data != "" {
				img.Source.OfBase64 = &sdk.Base64ImageSourceParam{Data: b.Data, MediaType: sdk.Base64ImageSourceMediaType(b.MediaType)}
			} else {
				img.Source.OfURL = &sdk.URLImageSourceParam{URL: b.URL}
			}
			r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
		}
	}
	if n := len(m.Content); n > 0 && m.Content[n-1].CacheControl != nil {
		r.CacheControl = cacheControl(m.Content[n-1].CacheControl)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: r}
}

// toolParam converts a tool spec. Agents send the same tools on every
// turn, so each model keeps the converted input schemas; parsing them again
// per call was a fifth of a replayed call's time.
func (m *Model) toolParam(t llm.ToolSpec) (*sdk.ToolParam, error) {
	in, err := provider.CachedSchema(&m.schemaMu, &m.schemas, t.Parameters, func() (sdk.ToolInputSchemaParam, error) {
		return inputSchema(t.Parameters)
	})
	if err != nil {
		return nil, fmt.Errorf("anthropic: tool %s: %w", t.Name, err)
	}
	tp := &sdk.ToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		tp.Description = sdk.String(t.Description)
	}
	if t.CacheControl != nil {
		tp.CacheControl = cacheControl(t.CacheControl)
	}
	return tp, nil
}

// inputSchema converts a tool's JSON Schema, which must describe an object.
// Only the top level is parsed: properties and other keywords are sent as
// the caller wrote them, and the result is never modified, so models share it
// between calls.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var in sdk.ToolInputSchemaParam
	if len(bytes.TrimSpace(raw)) == 0 {
		in.Properties = json.RawMessage("{}")
		return in, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		if err == nil {
			err = errors.New("null")
		}
		return in, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	extra := map[string]any{}
	for k, v := range fields {
		switch k {
		case "type":
			var t any
			if err := json.Unmarshal(v, &t); err != nil || t != "object" {
				return in, fmt.Errorf("schema type is %v; it must be object", t)
			}
		case "properties":
			if string(v) != "null" {
				in.Properties = v
			}
		case "required":
			if err := json.Unmarshal(v, &in.Required); err != nil {
				return in, errors.New("required must be a list of names")
			}
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		in.ExtraFields = extra
	}
	return in, nil
}

// objectSchema parses a JSON Schema document that must describe an object.
func objectSchema(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	if t, ok := s["type"]; ok && t != "object" {
		return nil, fmt.Errorf("schema type is %v; it must be object", t)
	}
	return s, nil
}

// closeObjects sets additionalProperties false on every object schema that
// does not say otherwise: structured outputs require closed objects.
func closeObjects(v any) {
	switch s := v.(type) {
	case map[string]any:
		if s["type"] == "object" {
			if _, ok := s["additionalProperties"]; !ok {
				s["additionalProperties"] = false
			}
		}
		for _, child := range s {
			closeObjects(child)
		}
	case []any:
		for _, child := range s {
			closeObjects(child)
		}
	}
}
