package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// Signature schemes for provider state kept in thinking blocks. Anthropic
// signatures never contain a colon, so each adapter recognises its own.
const (
	geminiMessageSig = "gemini:"      // Gemini thought signature of a message
	geminiCallSig    = "gemini-call:" // "gemini-call:<call id>:<signature>"
)

// chatParams translates a request into Chat Completions parameters that
// send themselves spliced (see splicedChat).
func (m *Model) chatParams(req *llm.Request, stream bool) (sdk.ChatCompletionNewParams, error) {
	p, err := m.chatFields(req, stream)
	if err != nil {
		return p, err
	}
	settings, keyed := provider.SettingsOf(req)
	return m.splicedChat(p, settings, keyed, stream), nil
}

// chatFields translates a request into Chat Completions parameters. What
// it reads of req besides the system prompt, messages and tools must be in
// provider.Settings, which keys the shells of spliced requests.
func (m *Model) chatFields(req *llm.Request, stream bool) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: m.cfg.Model}
	if sys := req.SystemText(); sys != "" {
		enc, _, ok := chatShape{role: llm.RoleSystem}.encode(sys)
		if !ok {
			enc = sdk.SystemMessage(sys)
		}
		p.Messages = append(p.Messages, enc)
	}
	for i := range req.Messages {
		msg := &req.Messages[i]
		mp, ok := m.chatMessages.Message(msg)
		if !ok {
			if enc, size, fast := fastChatMessage(msg); fast {
				mp = &enc
				m.chatMessages.PutMessage(msg, mp, size)
				p.Messages = append(p.Messages, enc)
				continue
			}
			var err error
			if mp, err = chatMessage(*msg, i); err != nil {
				return p, err
			}
			size := 0
			if mp != nil {
				enc, n := preEncode(*mp)
				mp, size = &enc, n
			}
			m.chatMessages.PutMessage(msg, mp, size)
		}
		if mp != nil {
			p.Messages = append(p.Messages, *mp)
		}
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		tp, ok := chatTools.Tool(t)
		if !ok {
			params, err := m.toolSchema(t.Parameters)
			if err != nil {
				return p, fmt.Errorf("openai: tool %s: %w", t.Name, err)
			}
			fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
			if t.Description != "" {
				fd.Description = param.NewOpt(t.Description)
			}
			var size int
			tp, size = preEncode(sdk.ChatCompletionFunctionTool(fd))
			chatTools.PutTool(t, tp, size)
		}
		p.Tools = append(p.Tools, tp)
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case llm.ToolChoiceAuto, "":
			p.ToolChoice.OfAuto = param.NewOpt("auto")
		case llm.ToolChoiceAny:
			p.ToolChoice.OfAuto = param.NewOpt("required")
		case llm.ToolChoiceNone:
			p.ToolChoice.OfAuto = param.NewOpt("none")
		case llm.ToolChoiceTool:
			p.ToolChoice.OfFunctionToolChoice = &sdk.ChatCompletionNamedToolChoiceParam{Function: sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: tc.Name}}
		default:
			return p, fmt.Errorf("openai: unknown tool choice mode %q", tc.Mode)
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		schema, err := schemaMap(rf.Schema)
		if err != nil {
			return p, fmt.Errorf("openai: response format %s: %w", rf.Name, err)
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: formatName(rf.Name), Schema: schema}
		js.Strict = param.NewOpt(rf.Strict && strictCompatible(schema))
		if rf.Description != "" {
			js.Description = param.NewOpt(rf.Description)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}
	if n := m.maxTokens(req); n > 0 {
		// OpenAI itself wants max_completion_tokens; compatible servers know
		// the older max_tokens.
		if m.cfg.Kind == provider.KindOpenAI {
			p.MaxCompletionTokens = param.NewOpt(int64(n))
		} else {
			p.MaxTokens = param.NewOpt(int64(n))
		}
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.TopP != nil {
		p.TopP = param.NewOpt(*req.TopP)
	}
	if req.Seed != nil {
		p.Seed = param.NewOpt(*req.Seed)
	}
	if len(req.StopSequences) > 0 {
		p.Stop.OfStringArray = req.StopSequences
	}
	if req.Thinking != nil && m.cfg.Kind == provider.KindOpenAI {
		p.ReasoningEffort = effort(req.Thinking.BudgetTokens)
	}
	if stream {
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return p, nil
}

func (m *Model) maxTokens(req *llm.Request) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return m.cfg.MaxTokens
}

// effort maps a thinking budget to a reasoning effort.
func effort(budget int) shared.ReasoningEffort {
	switch {
	case budget <= 0:
		return shared.ReasoningEffortMedium
	case budget <= 2048:
		return shared.ReasoningEffortLow
	case budget <= 16384:
		return shared.ReasoningEffortMedium
	}
	return shared.ReasoningEffortHigh
}

// chatMessage converts one message; it returns nil for messages with
// nothing to send.
func chatMessage(msg llm.Message, i int) (*sdk.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case llm.RoleSystem:
		text := llm.ConcatText(msg.Content)
		if text == "" {
			return nil, nil
		}
		p := sdk.SystemMessage(text)
		return &p, nil
	case llm.RoleUser:
		parts, onlyText, err := userParts(msg.Content, i)
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			return nil, nil
		}
		u := &sdk.ChatCompletionUserMessageParam{}
		if onlyText {
			// Plain string content is what every compatible server accepts.
			u.Content.OfString = param.NewOpt(msg.Text())
		} else {
			u.Content.OfArrayOfContentParts = parts
		}
		return &sdk.ChatCompletionMessageParamUnion{OfUser: u}, nil
	case llm.RoleAssistant:
		a := &sdk.ChatCompletionAssistantMessageParam{}
		if text := msg.Text(); text != "" {
			a.Content.OfString = param.NewOpt(text)
		}
		callSigs := map[string]string{}
		for _, b := range msg.Content {
			if b.Type != llm.BlockThinking {
				continue
			}
			if sig, ok := strings.CutPrefix(b.Signature, geminiMessageSig); ok {
				a.SetExtraFields(map[string]any{"extra_content": googleSignature(sig)})
			}
			if rest, ok := strings.CutPrefix(b.Signature, geminiCallSig); ok {
				if id, sig, ok := strings.Cut(rest, ":"); ok {
					callSigs[id] = sig
				}
			}
		}
		for _, tc := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, toolCallParam(tc.ID, tc.Name, argsString(tc.Args), callSigs[tc.ID]))
		}
		for _, tc := range msg.InvalidToolCalls {
			a.ToolCalls = append(a.ToolCalls, toolCallParam(tc.ID, tc.Name, tc.Args, callSigs[tc.ID]))
		}
		if a.Content.OfString.Valid() || len(a.ToolCalls) > 0 {
			return &sdk.ChatCompletionMessageParamUnion{OfAssistant: a}, nil
		}
		return nil, nil
	case llm.RoleTool:
		p := sdk.ToolMessage(msg.Text(), msg.ToolCallID)
		return &p, nil
	}
	return nil, fmt.Errorf("openai: message %d has unknown role %q", i, msg.Role)
}

func googleSignature(sig string) map[string]any {
	return map[string]any{"google": map[string]any{"thought_signature": sig}}
}

func toolCallParam(id, name, args, sig string) sdk.ChatCompletionMessageToolCallUnionParam {
	call := &sdk.ChatCompletionMessageFunctionToolCallParam{ID: id, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args}}
	if sig != "" {
		call.SetExtraFields(map[string]any{"extra_content": googleSignature(sig)})
	}
	return sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: call}
}

func argsString(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	return string(args)
}

func userParts(blocks []llm.Block, i int) ([]sdk.ChatCompletionContentPartUnionParam, bool, error) {
	var parts []sdk.ChatCompletionContentPartUnionParam
	onlyText := true
	for j, b := range blocks {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				parts = append(parts, sdk.TextContentPart(b.Text))
			}
		case llm.BlockImage:
			url := b.URL
			if b.Data != "" {
				url = "data:" + b.MediaType + ";base64," + b.Data
			}
			if url == "" {
				return nil, false, fmt.Errorf("openai: message %d block %d: image has neither data nor url", i, j)
			}
			parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}))
			onlyText = false
		case llm.BlockFile:
			if b.Data == "" {
				return nil, false, fmt.Errorf("openai: message %d block %d: Chat Completions takes files as inline data only", i, j)
			}
			parts = append(parts, sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{FileData: param.NewOpt("data:" + b.MediaType + ";base64," + b.Data)}))
			onlyText = false
		case llm.BlockThinking, llm.BlockRedactedThinking:
		default:
			return nil, false, fmt.Errorf("openai: message %d block %d: %s content is not supported", i, j, b.Type)
		}
	}
	return parts, onlyText, nil
}

// chatResult is one Chat Completions answer, whole or accumulated from a
// stream; both paths end in response, so they give equal results.
type chatResult struct {
	id, model     string
	content       strings.Builder
	refusal       string
	reasoning     strings.Builder
	signature     string // Gemini thought signature of the message
	calls         []*chatCall
	finish        string
	usage         sdk.CompletionUsage
	usagePresent  bool
	choicePresent bool
}

type chatCall struct {
	id, name, signature string
	args                strings.Builder
}

func chatResultOf(a *chatAnswer) (*chatResult, error) {
	if a.text != nil {
		return chatTextResult(a.text)
	}
	c := a.whole
	r := &chatResult{id: c.ID, model: c.Model, usage: c.Usage, usagePresent: c.JSON.Usage.Valid()}
	if len(c.Choices) == 0 {
		return nil, errors.New("the answer has no choices")
	}
	ch := c.Choices[0]
	r.choicePresent = true
	r.finish = ch.FinishReason
	msg := ch.Message
	r.content.WriteString(msg.Content)
	r.refusal = msg.Refusal
	r.reasoning.WriteString(reasoningOf(msg.JSON.ExtraFields))
	r.signature = signatureOf(msg.JSON.ExtraFields)
	for _, tc := range msg.ToolCalls {
		call := &chatCall{id: tc.ID, name: tc.Function.Name, signature: rawSignature(tc.RawJSON())}
		call.args.WriteString(tc.Function.Arguments)
		r.calls = append(r.calls, call)
	}
	return r, nil
}

// chatTextResult reads an answer without tool calls as chatResultOf
// reads the SDK's decoding of it.
func chatTextResult(t *chatText) (*chatResult, error) {
	r := &chatResult{id: t.ID, model: t.Model}
	if u := t.Usage; u != nil {
		r.usage = sdk.CompletionUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		r.usage.PromptTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
		r.usage.PromptTokensDetails.CacheWriteTokens = u.PromptTokensDetails.CacheWriteTokens
		r.usagePresent = true
	}
	if len(t.Choices) == 0 {
		return nil, errors.New("the answer has no choices")
	}
	ch := &t.Choices[0]
	r.choicePresent = true
	r.finish = ch.FinishReason
	msg := &ch.Message
	r.content.WriteString(msg.Content)
	r.refusal = msg.Refusal
	r.reasoning.WriteString(firstReasoning(msg.ReasoningContent, msg.Reasoning))
	r.signature = signatureIn(msg.ExtraContent)
	for i := range msg.calls {
		tc := &msg.calls[i]
		call := &chatCall{id: tc.ID, name: tc.Function.Name, signature: signatureIn(tc.ExtraContent)}
		call.args.WriteString(tc.Function.Arguments)
		r.calls = append(r.calls, call)
	}
	return r, nil
}

// signatureIn reads Gemini's thought signature from a raw extra_content.
func signatureIn(raw json.RawMessage) string {
	var ec extraContent
	if len(raw) == 0 || json.Unmarshal(raw, &ec) != nil {
		return ""
	}
	return ec.Google.ThoughtSignature
}

// reasoningOf reads the reasoning text compatible servers add to messages
// and deltas: vLLM and DeepSeek use reasoning_content, OpenRouter and
// Ollama reasoning.
func reasoningOf(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if f, ok := extra[key]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}

// signatureOf reads Gemini's thought signature from extra_content.
func signatureOf(extra map[string]respjson.Field) string {
	f, ok := extra["extra_content"]
	if !ok {
		return ""
	}
	var ec extraContent
	if json.Unmarshal([]byte(f.Raw()), &ec) != nil {
		return ""
	}
	return ec.Google.ThoughtSignature
}

type extraContent struct {
	Google struct {
		ThoughtSignature string `json:"thought_signature"`
	} `json:"google"`
}

// rawSignature reads the signature from an object's raw JSON, for SDK
// union types that do not expose extra fields.
func rawSignature(raw string) string {
	var obj struct {
		ExtraContent extraContent `json:"extra_content"`
	}
	if raw == "" || json.Unmarshal([]byte(raw), &obj) != nil {
		return ""
	}
	return obj.ExtraContent.Google.ThoughtSignature
}

// response builds the provider-neutral answer. nMessages (the request's
// message count) makes synthesised tool-call ids unique across turns.
func (r *chatResult) response(nMessages int) *llm.Response {
	out := llm.Message{Role: llm.RoleAssistant}
	if th := r.reasoning.String(); th != "" {
		out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Thinking: th})
	}
	if r.signature != "" {
		out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Signature: geminiMessageSig + r.signature})
	}
	if text := r.content.String(); text != "" {
		out.Content = append(out.Content, llm.TextBlock(text))
	}
	if r.refusal != "" {
		out.Content = append(out.Content, llm.TextBlock(r.refusal))
	}
	for i, c := range r.calls {
		if c.name == "" && c.args.Len() == 0 {
			continue // a hole left by sparse stream indices
		}
		id := c.id
		if id == "" {
			id = synthesizeID(r.id, nMessages, i, c.name, c.args.String())
		}
		if c.signature != "" {
			out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Signature: geminiCallSig + id + ":" + c.signature})
		}
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		var v any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			out.InvalidToolCalls = append(out.InvalidToolCalls, llm.InvalidToolCall{ID: id, Name: c.name, Args: c.args.String(), Error: "arguments are not valid JSON: " + err.Error()})
			continue
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: c.name, Args: compact(args)})
	}
	usage := chatUsage(r.usage)
	if !r.usagePresent {
		usage = llm.UnknownUsage()
	}
	u := usage
	out.Usage = &u
	return &llm.Response{Message: out, StopReason: finishReason(r.finish, len(out.ToolCalls)+len(out.InvalidToolCalls) > 0, r.refusal != ""), Usage: usage, Model: r.model}
}

// chatUsage splits prompt tokens into uncached input and cache traffic.
func chatUsage(u sdk.CompletionUsage) llm.Usage {
	cached := int(u.PromptTokensDetails.CachedTokens)
	written := int(u.PromptTokensDetails.CacheWriteTokens)
	return llm.Usage{
		InputTokens:      max(int(u.PromptTokens)-cached-written, 0),
		OutputTokens:     int(u.CompletionTokens),
		CacheReadTokens:  cached,
		CacheWriteTokens: written,
	}
}

func finishReason(reason string, calls, refused bool) llm.StopReason {
	switch {
	case refused:
		return llm.StopRefusal
	case reason == "tool_calls" || reason == "function_call":
		return llm.StopToolUse
	case reason == "length":
		return llm.StopMaxTokens
	case reason == "content_filter":
		return llm.StopContentFilter
	case calls:
		// Some servers (Ollama, Gemini) say "stop" while calling tools.
		return llm.StopToolUse
	case reason == "stop" || reason == "":
		return llm.StopEndTurn
	}
	return llm.StopReason(reason)
}

func compact(s string) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return json.RawMessage(s)
	}
	return buf.Bytes()
}

// toolSchema converts a tool's JSON Schema into function parameters. Agents
// send the same tools on every turn, so each model keeps the conversions;
// parsing the schemas again per call was a sixth of a replayed call's time.
// Only the top level is parsed, its values are sent as the caller wrote
// them, and the map is never modified, so calls share it.
func (m *Model) toolSchema(raw json.RawMessage) (map[string]any, error) {
	return provider.CachedSchema(&m.schemaMu, &m.schemas, raw, func() (map[string]any, error) {
		if len(bytes.TrimSpace(raw)) == 0 {
			return map[string]any{"type": "object", "properties": map[string]any{}}, nil
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("schema is not a JSON object: %w", err)
		}
		if fields == nil {
			return nil, nil
		}
		s := make(map[string]any, len(fields))
		for k, v := range fields {
			s[k] = v
		}
		return s, nil
	})
}

// schemaMap parses a JSON Schema document describing an object.
func schemaMap(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	return s, nil
}

// strictCompatible reports whether OpenAI's strict mode accepts the schema:
// every object closed (additionalProperties false) and listing all its
// properties as required.
func strictCompatible(v any) bool {
	s, ok := v.(map[string]any)
	if !ok {
		return true
	}
	props, _ := s["properties"].(map[string]any)
	if s["type"] == "object" || props != nil {
		if s["additionalProperties"] != false {
			return false
		}
		req := map[string]bool{}
		if list, ok := s["required"].([]any); ok {
			for _, r := range list {
				if name, ok := r.(string); ok {
					req[name] = true
				}
			}
		}
		for name := range props {
			if !req[name] {
				return false
			}
		}
	}
	var subs []any
	for _, p := range props {
		subs = append(subs, p)
	}
	subs = append(subs, s["items"])
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := s[key].([]any); ok {
			subs = append(subs, list...)
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := s[key].(map[string]any); ok {
			for _, d := range defs {
				subs = append(subs, d)
			}
		}
	}
	for _, sub := range subs {
		if !strictCompatible(sub) {
			return false
		}
	}
	return true
}

// formatName makes a schema name acceptable to the API (^[a-zA-Z0-9_-]{1,64}$).
func formatName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	s := b.String()
	if s == "" {
		s = "response"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}
