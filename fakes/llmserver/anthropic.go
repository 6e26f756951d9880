package llmserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/internal/pieces"
	"github.com/dageval/dageval/harness/llm"
)

// anthropicAPI speaks the Anthropic Messages API.
type anthropicAPI struct{}

func (anthropicAPI) name() string { return cassette.APIAnthropicMessages }

func (anthropicAPI) checkAuth(r *http.Request, want string) *apiError {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = bearer(r)
	}
	if key == "" {
		return &apiError{status: http.StatusUnauthorized, kind: "authentication_error", msg: "x-api-key header is required"}
	}
	if want != "" && key != want {
		return &apiError{status: http.StatusUnauthorized, kind: "authentication_error", msg: "invalid x-api-key"}
	}
	return nil
}

func (anthropicAPI) checkHeaders(r *http.Request) *apiError {
	if r.Header.Get("Anthropic-Version") == "" {
		return badRequest("anthropic-version: header is required")
	}
	return nil
}

func (anthropicAPI) errorBody(e *apiError, requestID string) []byte {
	type inner struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	return marshal(struct {
		Type      string `json:"type"`
		Error     inner  `json:"error"`
		RequestID string `json:"request_id,omitempty"`
	}{"error", inner{e.kind, e.msg}, requestID})
}

// antRequest is the body of POST /v1/messages. Fields the local server
// accepts but does not act on are kept so that strict decoding knows them.
type antRequest struct {
	Model         *string           `json:"model"`
	MaxTokens     *int              `json:"max_tokens"`
	Messages      []json.RawMessage `json:"messages"`
	System        json.RawMessage   `json:"system"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	Thinking      json.RawMessage   `json:"thinking"`
	Stream        bool              `json:"stream"`
	StopSequences []string          `json:"stop_sequences"`
	Temperature   *float64          `json:"temperature"`
	TopP          *float64          `json:"top_p"`
	TopK          *int              `json:"top_k"`
	OutputConfig  json.RawMessage   `json:"output_config"`
	OutputFormat  json.RawMessage   `json:"output_format"`
	CacheControl  *llm.CacheControl `json:"cache_control"`

	Metadata          json.RawMessage `json:"metadata"`
	ServiceTier       json.RawMessage `json:"service_tier"`
	InferenceGeo      json.RawMessage `json:"inference_geo"`
	Speed             json.RawMessage `json:"speed"`
	Container         json.RawMessage `json:"container"`
	Diagnostics       json.RawMessage `json:"diagnostics"`
	ContextManagement json.RawMessage `json:"context_management"`
	MCPServers        json.RawMessage `json:"mcp_servers"`
}

type antMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// decodedAntMessage is a message with its content decoded, as
// antMessages keeps it.
type decodedAntMessage struct {
	antMessage
	blocks []*antBlock
}

// antMessages and antContents keep decoded messages and tool-result
// contents across requests (see memo).
var (
	antMessages memo[decodedAntMessage]
	antContents memo[[]*antBlock]
)

// antBlock is any content block; which fields may be set depends on Type.
type antBlock struct {
	Type         string            `json:"type"`
	Text         *string           `json:"text,omitempty"`
	Citations    json.RawMessage   `json:"citations,omitempty"`
	CacheControl *llm.CacheControl `json:"cache_control,omitempty"`
	Source       *antSource        `json:"source,omitempty"`
	Title        *string           `json:"title,omitempty"`
	Context      *string           `json:"context,omitempty"`
	ID           string            `json:"id,omitempty"`
	Name         string            `json:"name,omitempty"`
	Input        json.RawMessage   `json:"input,omitempty"`
	Caller       json.RawMessage   `json:"caller,omitempty"`
	ToolsetName  string            `json:"toolset_name,omitempty"`
	ToolUseID    string            `json:"tool_use_id,omitempty"`
	Content      json.RawMessage   `json:"content,omitempty"`
	IsError      *bool             `json:"is_error,omitempty"`
	Thinking     *string           `json:"thinking,omitempty"`
	Signature    *string           `json:"signature,omitempty"`
	Data         *string           `json:"data,omitempty"`
}

type antSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

type antTool struct {
	Type                string            `json:"type"`
	Name                string            `json:"name"`
	Description         *string           `json:"description"`
	InputSchema         json.RawMessage   `json:"input_schema"`
	CacheControl        *llm.CacheControl `json:"cache_control"`
	Strict              *bool             `json:"strict"`
	EagerInputStreaming *bool             `json:"eager_input_streaming"`
	DeferLoading        *bool             `json:"defer_loading"`
	AllowedCallers      json.RawMessage   `json:"allowed_callers"`
	InputExamples       json.RawMessage   `json:"input_examples"`
}

type antToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
}

type antThinking struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens"`
	Display      string `json:"display"`
}

type antOutputConfig struct {
	Effort json.RawMessage  `json:"effort"`
	Format *antOutputFormat `json:"format"`
}

type antOutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// antState is where the conversion of a conversation's messages stands
// (see resumes).
type antState struct {
	messages []llm.Message
	names    toolNames
	pending  []string
}

var antResumes resumes[antState]

func (anthropicAPI) decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError) {
	var w antRequest
	var skeleton []byte
	if elems, _, sk, ok := decodeBody(&antSkeletons, body, &w, "messages", nil); ok {
		w.Messages, skeleton = elems, sk
	} else {
		w = antRequest{}
		if e := strictDecode(body, &w, "request body"); e != nil {
			return nil, nil, e
		}
	}
	call.Stream = w.Stream
	if w.Model == nil || *w.Model == "" {
		return nil, nil, badRequest("model: Field required")
	}
	call.Model = *w.Model
	if w.MaxTokens == nil {
		return nil, nil, badRequest("max_tokens: Field required")
	}
	if *w.MaxTokens < 1 {
		return nil, nil, badRequest("max_tokens: must be at least 1, got %d", *w.MaxTokens)
	}
	if len(w.Messages) == 0 {
		return nil, nil, badRequest("messages: at least one message is required")
	}
	req := &llm.Request{MaxTokens: *w.MaxTokens, Temperature: w.Temperature, TopP: w.TopP, StopSequences: w.StopSequences}

	// System prompt: a string or text blocks.
	switch jsonKind(w.System) {
	case "", "null":
	case "string":
		req.System = stringBlocks(w.System)
	case "array":
		var blocks []json.RawMessage
		_ = json.Unmarshal(w.System, &blocks)
		for i, raw := range blocks {
			b, e := decodeAntBlock(raw, fmt.Sprintf("system.%d", i))
			if e != nil {
				return nil, nil, e
			}
			if b.Type != "text" {
				return nil, nil, badRequest("system.%d.type: system blocks must be text, got %q", i, b.Type)
			}
			req.System = append(req.System, llm.Block{Type: llm.BlockText, Text: *b.Text, CacheControl: b.CacheControl})
		}
	default:
		return nil, nil, badRequest("system: expected a string or a list of text blocks, got a JSON %s", jsonKind(w.System))
	}

	// Messages.
	names := toolNames{}
	var pending []string // tool_use ids the next user message must answer
	start := 0
	if k, st, ok := antResumes.find(w.Messages); ok {
		start, req.Messages = k, slices.Clip(st.messages)
		names, pending = maps.Clone(st.names), slices.Clone(st.pending)
	}
	var states []resumeState[antState]
	for i := start; i < len(w.Messages); i++ {
		raw := w.Messages[i]
		if i == len(w.Messages)-1 {
			// The next request moves the cache marker off this message.
			states = append(states, resumeState[antState]{i, antState{messages: req.Messages, names: maps.Clone(names), pending: slices.Clone(pending)}})
		}
		at := fmt.Sprintf("messages.%d", i)
		dm, e := antMessages.decode(raw, func() (decodedAntMessage, *apiError) {
			var m antMessage
			if e := strictDecode(raw, &m, at); e != nil {
				return decodedAntMessage{}, e
			}
			blocks, e := decodeAntContent(m.Content, at+".content")
			return decodedAntMessage{m, blocks}, e
		})
		if e != nil {
			return nil, nil, e
		}
		m, blocks := dm.antMessage, dm.blocks
		if len(blocks) == 0 {
			return nil, nil, badRequest("%s.content: messages must have non-empty content", at)
		}
		switch m.Role {
		case "user":
			msgs, answered, e := antUserMessages(blocks, at, names, pending)
			if e != nil {
				return nil, nil, e
			}
			if missing := subtract(pending, answered); len(missing) > 0 {
				return nil, nil, badRequest("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s. Each tool_use block must have a corresponding tool_result block in the next message.", i-1, strings.Join(missing, ", "))
			}
			pending = nil
			req.Messages = append(req.Messages, msgs...)
		case "assistant":
			if len(pending) > 0 {
				return nil, nil, badRequest("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s. Each tool_use block must have a corresponding tool_result block in the next message.", i-1, strings.Join(pending, ", "))
			}
			msg, ids, e := antAssistantMessage(blocks, at, names)
			if e != nil {
				return nil, nil, e
			}
			pending = ids
			req.Messages = append(req.Messages, msg)
		case "system":
			var parts []llm.Block
			for j, b := range blocks {
				if b.Type != "text" {
					return nil, nil, badRequest("%s.content.%d.type: system messages hold text blocks only, got %q", at, j, b.Type)
				}
				parts = append(parts, llm.Block{Type: llm.BlockText, Text: *b.Text, CacheControl: b.CacheControl})
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: parts})
		default:
			return nil, nil, badRequest("%s.role: expected user, assistant or system, got %q", at, m.Role)
		}
	}
	antResumes.keep(w.Messages, append(states, resumeState[antState]{len(w.Messages), antState{messages: req.Messages, names: names, pending: pending}})...)
	if len(pending) > 0 {
		return nil, nil, badRequest("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s. Each tool_use block must have a corresponding tool_result block in the next message.", len(w.Messages)-1, strings.Join(pending, ", "))
	}

	d := derive(&antDerivations, skeleton, func() derived { return deriveAnt(&w) })
	if d.err != nil {
		return nil, nil, d.err
	}
	d.apply(req)
	return req, &w, nil
}

// antDerivations keeps derived settings by the request's bytes without its
// messages (see decodeBody).
var antDerivations memo[derived]

func deriveAnt(w *antRequest) (d derived) {
	fail := func(e *apiError) derived { return derived{err: e} }
	// Tools.
	seen := map[string]bool{}
	for i, raw := range w.Tools {
		at := fmt.Sprintf("tools.%d", i)
		var t antTool
		if e := strictDecode(raw, &t, at); e != nil {
			return fail(e)
		}
		if t.Type != "" && t.Type != "custom" {
			return fail(badRequest("%s.type: server tool %q is not available on the local server; only custom tools are", at, t.Type))
		}
		if t.Name == "" {
			return fail(badRequest("%s.name: Field required", at))
		}
		if seen[t.Name] {
			return fail(badRequest("tools: Tool names must be unique, %q appears twice", t.Name))
		}
		seen[t.Name] = true
		if !isJSONObject(t.InputSchema) {
			return fail(badRequest("%s.input_schema: Field required (a JSON Schema object)", at))
		}
		var schema struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(t.InputSchema, &schema)
		if schema.Type != "object" {
			return fail(badRequest("%s.input_schema.type: Input should be 'object', got %q", at, schema.Type))
		}
		spec := toolSpec(t.Name, t.Description, t.InputSchema)
		spec.CacheControl = t.CacheControl
		d.tools = append(d.tools, spec)
	}

	if len(w.ToolChoice) > 0 && jsonKind(w.ToolChoice) != "null" {
		var tc antToolChoice
		if e := strictDecode(w.ToolChoice, &tc, "tool_choice"); e != nil {
			return fail(e)
		}
		switch tc.Type {
		case "auto":
			d.toolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceAuto}
		case "any":
			d.toolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceAny}
		case "none":
			d.toolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceNone}
		case "tool":
			if tc.Name == "" {
				return fail(badRequest("tool_choice.name: Field required"))
			}
			if !seen[tc.Name] {
				return fail(badRequest("tool_choice.name: tool %q is not among the tools", tc.Name))
			}
			d.toolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: tc.Name}
		default:
			return fail(badRequest("tool_choice.type: expected auto, any, tool or none, got %q", tc.Type))
		}
		if tc.Type != "none" && len(d.tools) == 0 {
			return fail(badRequest("tool_choice: tool_choice may only be specified while providing tools"))
		}
	}

	if len(w.Thinking) > 0 && jsonKind(w.Thinking) != "null" {
		var th antThinking
		if e := strictDecode(w.Thinking, &th, "thinking"); e != nil {
			return fail(e)
		}
		switch th.Type {
		case "enabled":
			if th.BudgetTokens == nil {
				return fail(badRequest("thinking.enabled.budget_tokens: Field required"))
			}
			if *th.BudgetTokens >= *w.MaxTokens {
				return fail(badRequest("thinking.enabled.budget_tokens: must be less than max_tokens (%d >= %d)", *th.BudgetTokens, *w.MaxTokens))
			}
			d.thinking = &llm.Thinking{BudgetTokens: *th.BudgetTokens}
		case "adaptive":
			d.thinking = &llm.Thinking{}
		case "disabled":
		default:
			return fail(badRequest("thinking.type: expected enabled, adaptive or disabled, got %q", th.Type))
		}
	}

	format := w.OutputFormat
	formatAt := "output_format"
	if len(w.OutputConfig) > 0 && jsonKind(w.OutputConfig) != "null" {
		var oc antOutputConfig
		if e := strictDecode(w.OutputConfig, &oc, "output_config"); e != nil {
			return fail(e)
		}
		if oc.Format != nil {
			format, formatAt = marshal(oc.Format), "output_config.format"
		}
	}
	if len(format) > 0 && jsonKind(format) != "null" {
		var f antOutputFormat
		if e := strictDecode(format, &f, formatAt); e != nil {
			return fail(e)
		}
		if f.Type != "json_schema" {
			return fail(badRequest("%s.type: expected json_schema, got %q", formatAt, f.Type))
		}
		if !isJSONObject(f.Schema) {
			return fail(badRequest("%s.schema: Field required (a JSON Schema object)", formatAt))
		}
		d.format = &llm.ResponseFormat{Name: "output", Schema: compactJSON(f.Schema), Strict: true}
	}
	return d
}

func decodeAntBlock(raw json.RawMessage, at string) (*antBlock, *apiError) {
	var b antBlock
	if e := strictDecode(raw, &b, at); e != nil {
		return nil, e
	}
	switch b.Type {
	case "text":
		if b.Text == nil {
			return nil, badRequest("%s.text: Field required", at)
		}
		if strings.TrimSpace(*b.Text) == "" {
			return nil, badRequest("%s: text content blocks must be non-empty", at)
		}
	case "image", "document":
		if b.Source == nil {
			return nil, badRequest("%s.source: Field required", at)
		}
		switch b.Source.Type {
		case "base64":
			if b.Source.Data == "" || b.Source.MediaType == "" {
				return nil, badRequest("%s.source: base64 sources need media_type and data", at)
			}
		case "url":
			if b.Source.URL == "" {
				return nil, badRequest("%s.source.url: Field required", at)
			}
		case "text":
			if b.Type != "document" || b.Source.Data == "" {
				return nil, badRequest("%s.source: text sources are for documents and need data", at)
			}
		case "file":
			if b.Source.FileID == "" {
				return nil, badRequest("%s.source.file_id: Field required", at)
			}
		default:
			return nil, badRequest("%s.source.type: expected base64, url, text or file, got %q", at, b.Source.Type)
		}
	case "tool_use":
		if b.ID == "" || b.Name == "" {
			return nil, badRequest("%s: tool_use blocks need id and name", at)
		}
		if !isJSONObject(b.Input) {
			return nil, badRequest("%s.input: Input should be a valid dictionary", at)
		}
	case "tool_result":
		if b.ToolUseID == "" {
			return nil, badRequest("%s.tool_use_id: Field required", at)
		}
	case "thinking":
		if b.Thinking == nil || b.Signature == nil {
			return nil, badRequest("%s: thinking blocks need thinking and signature", at)
		}
	case "redacted_thinking":
		if b.Data == nil || *b.Data == "" {
			return nil, badRequest("%s.data: Field required", at)
		}
	case "":
		return nil, badRequest("%s.type: Field required", at)
	default:
		return nil, badRequest("%s.type: block type %q is not supported by the local server", at, b.Type)
	}
	return &b, nil
}

// decodeAntContent reads message content: a string or a list of blocks.
func decodeAntContent(raw json.RawMessage, at string) ([]*antBlock, *apiError) {
	switch jsonKind(raw) {
	case "string":
		s := jsonString(raw)
		if strings.TrimSpace(s) == "" {
			return nil, badRequest("%s: text content must be non-empty", at)
		}
		return []*antBlock{{Type: "text", Text: &s}}, nil
	case "array":
		var raws []json.RawMessage
		_ = json.Unmarshal(raw, &raws)
		out := make([]*antBlock, 0, len(raws))
		for i, r := range raws {
			b, e := decodeAntBlock(r, fmt.Sprintf("%s.%d", at, i))
			if e != nil {
				return nil, e
			}
			out = append(out, b)
		}
		return out, nil
	case "":
		return nil, badRequest("%s: Field required", at)
	}
	return nil, badRequest("%s: expected a string or a list of content blocks, got a JSON %s", at, jsonKind(raw))
}

func antMediaBlock(b *antBlock) llm.Block {
	kind := llm.BlockImage
	if b.Type == "document" {
		kind = llm.BlockFile
	}
	out := llm.Block{Type: kind, MediaType: b.Source.MediaType, Data: b.Source.Data, URL: b.Source.URL, CacheControl: b.CacheControl}
	if b.Source.Type == "file" {
		out.URL = "file:" + b.Source.FileID
	}
	return out
}

// antUserMessages splits a user turn into one tool message per tool_result
// (in order) followed by a user message with the other blocks.
func antUserMessages(blocks []*antBlock, at string, names toolNames, pending []string) ([]llm.Message, []string, *apiError) {
	var out []llm.Message
	var answered []string
	user := llm.Message{Role: llm.RoleUser}
	for j, b := range blocks {
		bat := fmt.Sprintf("%s.content.%d", at, j)
		switch b.Type {
		case "tool_result":
			if !slices.Contains(pending, b.ToolUseID) {
				return nil, nil, badRequest("%s: unexpected tool_use_id found in tool_result blocks: %s. Each tool_result block must have a corresponding tool_use block in the previous message.", bat, b.ToolUseID)
			}
			if slices.Contains(answered, b.ToolUseID) {
				return nil, nil, badRequest("%s: tool_use_id %s is answered twice", bat, b.ToolUseID)
			}
			answered = append(answered, b.ToolUseID)
			content, e := antToolResultContent(b.Content, bat+".content")
			if e != nil {
				return nil, nil, e
			}
			msg := llm.Message{Role: llm.RoleTool, ToolCallID: b.ToolUseID, Name: names[b.ToolUseID], Content: content}
			if b.IsError != nil {
				msg.IsError = *b.IsError
			}
			out = append(out, msg)
		case "text":
			user.Content = append(user.Content, llm.Block{Type: llm.BlockText, Text: *b.Text, CacheControl: b.CacheControl})
		case "image", "document":
			user.Content = append(user.Content, antMediaBlock(b))
		default:
			return nil, nil, badRequest("%s.type: %q blocks may not appear in user messages", bat, b.Type)
		}
	}
	if len(user.Content) > 0 {
		out = append(out, user)
	}
	return out, answered, nil
}

func antToolResultContent(raw json.RawMessage, at string) ([]llm.Block, *apiError) {
	switch jsonKind(raw) {
	case "", "null":
		return nil, nil
	case "string":
		return stringBlocks(raw), nil
	case "array":
		blocks, e := antContents.decode(raw, func() ([]*antBlock, *apiError) { return decodeAntContent(raw, at) })
		if e != nil {
			return nil, e
		}
		var out []llm.Block
		for j, b := range blocks {
			switch b.Type {
			case "text":
				out = append(out, llm.Block{Type: llm.BlockText, Text: *b.Text, CacheControl: b.CacheControl})
			case "image", "document":
				out = append(out, antMediaBlock(b))
			default:
				return nil, badRequest("%s.%d.type: tool results hold text, image or document blocks, got %q", at, j, b.Type)
			}
		}
		return out, nil
	}
	return nil, badRequest("%s: expected a string or a list of blocks, got a JSON %s", at, jsonKind(raw))
}

func antAssistantMessage(blocks []*antBlock, at string, names toolNames) (llm.Message, []string, *apiError) {
	msg := llm.Message{Role: llm.RoleAssistant}
	var ids []string
	for j, b := range blocks {
		bat := fmt.Sprintf("%s.content.%d", at, j)
		switch b.Type {
		case "text":
			msg.Content = append(msg.Content, llm.Block{Type: llm.BlockText, Text: *b.Text, CacheControl: b.CacheControl})
		case "thinking":
			msg.Content = append(msg.Content, llm.Block{Type: llm.BlockThinking, Thinking: *b.Thinking, Signature: *b.Signature})
		case "redacted_thinking":
			msg.Content = append(msg.Content, llm.Block{Type: llm.BlockRedactedThinking, Redacted: *b.Data})
		case "tool_use":
			if _, dup := names[b.ID]; dup {
				return msg, nil, badRequest("%s.id: tool_use ids must be unique, %s appears twice", bat, b.ID)
			}
			names[b.ID] = b.Name
			ids = append(ids, b.ID)
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Args: compactJSON(b.Input)})
		default:
			return msg, nil, badRequest("%s.type: %q blocks may not appear in assistant messages", bat, b.Type)
		}
	}
	return msg, ids, nil
}

func subtract(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// Response wire types, in the field order the API uses.

type antUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type antResponse struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        antUsage          `json:"usage"`
}

type antTextOut struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type antThinkingOut struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type antRedactedOut struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

type antToolUseOut struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func antStopReason(r llm.StopReason) string {
	switch r {
	case llm.StopContentFilter:
		return "refusal"
	case "":
		return "end_turn"
	}
	return string(r)
}

// antBlocks lists the answer's content blocks in order: the message's
// blocks, then its tool calls.
func antBlocks(resp *llm.Response) []any {
	var out []any
	for _, b := range resp.Message.Content {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				out = append(out, antTextOut{"text", b.Text})
			}
		case llm.BlockThinking:
			out = append(out, antThinkingOut{"thinking", b.Thinking, b.Signature})
		case llm.BlockRedactedThinking:
			out = append(out, antRedactedOut{"redacted_thinking", b.Redacted})
		}
	}
	for _, tc := range resp.Message.ToolCalls {
		out = append(out, antToolUseOut{"tool_use", tc.ID, tc.Name, compactJSON(tc.Args)})
	}
	return out
}

func (anthropicAPI) write(w *responseWriter, call ServedCall, _ any, resp *llm.Response, ids *idSource) error {
	whole, s := antAnswer(call, resp, ids)
	if whole != nil {
		return w.json(whole)
	}
	return w.stream(s)
}

// antAnswer is the Messages API answer: the whole JSON message, or (for a
// streaming call) the stream's events.
func antAnswer(call ServedCall, resp *llm.Response, ids *idSource) ([]byte, *sse) {
	usage := antUsage{
		InputTokens:              resp.Usage.InputTokens,
		CacheCreationInputTokens: resp.Usage.CacheWriteTokens,
		CacheReadInputTokens:     resp.Usage.CacheReadTokens,
		OutputTokens:             resp.Usage.OutputTokens,
	}
	id := ids.id("msg_01", 22)
	stop := antStopReason(resp.StopReason)
	var stopSeq *string
	if resp.StopReason == llm.StopSequence {
		s := resp.Message.Metadata["stop_sequence"]
		stopSeq = &s
	}
	blocks := antBlocks(resp)
	if !call.Stream {
		out := antResponse{ID: id, Type: "message", Role: "assistant", Model: call.Model, StopReason: &stop, StopSequence: stopSeq, Usage: usage, Content: []json.RawMessage{}}
		for _, b := range blocks {
			out.Content = append(out.Content, marshal(b))
		}
		return marshal(out), nil
	}

	var s sse
	start := antResponse{ID: id, Type: "message", Role: "assistant", Model: call.Model, Content: []json.RawMessage{}, Usage: usage}
	start.Usage.OutputTokens = 1
	s.add("message_start", struct {
		Type    string      `json:"type"`
		Message antResponse `json:"message"`
	}{"message_start", start})
	type delta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	type typed struct {
		Type string `json:"type"`
	}
	for i, b := range blocks {
		var first any
		switch v := b.(type) {
		case antTextOut:
			first = antTextOut{"text", ""}
		case antThinkingOut:
			first = antThinkingOut{"thinking", "", ""}
		case antRedactedOut:
			first = v
		case antToolUseOut:
			first = antToolUseOut{"tool_use", v.ID, v.Name, json.RawMessage("{}")}
		}
		s.add("content_block_start", struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock any    `json:"content_block"`
		}{"content_block_start", i, first})
		if i == 0 {
			s.add("ping", typed{"ping"})
		}
		switch v := b.(type) {
		case antTextOut:
			for _, piece := range pieces.Words(v.Text) {
				s.add("content_block_delta", delta{"content_block_delta", i, struct {
					Type string `json:"type"`
					Text string `json:"text"`
				}{"text_delta", piece}})
			}
		case antThinkingOut:
			for _, piece := range pieces.Words(v.Thinking) {
				s.add("content_block_delta", delta{"content_block_delta", i, struct {
					Type     string `json:"type"`
					Thinking string `json:"thinking"`
				}{"thinking_delta", piece}})
			}
			s.add("content_block_delta", delta{"content_block_delta", i, struct {
				Type      string `json:"type"`
				Signature string `json:"signature"`
			}{"signature_delta", v.Signature}})
		case antToolUseOut:
			for _, piece := range splitPieces(string(v.Input), 3) {
				s.add("content_block_delta", delta{"content_block_delta", i, struct {
					Type        string `json:"type"`
					PartialJSON string `json:"partial_json"`
				}{"input_json_delta", piece}})
			}
		}
		s.add("content_block_stop", struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}{"content_block_stop", i})
	}
	s.add("message_delta", struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage antUsage `json:"usage"`
	}{Type: "message_delta", Delta: struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}{stop, stopSeq}, Usage: usage})
	s.add("message_stop", typed{"message_stop"})
	return nil, &s
}
