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

// chatAPI speaks the OpenAI Chat Completions API.
type chatAPI struct{}

func (chatAPI) name() string { return cassette.APIOpenAIChat }

// openAIAuth accepts "Authorization: Bearer" and Azure's api-key header.
func openAIAuth(r *http.Request, want string) *apiError {
	key := bearer(r)
	if key == "" {
		key = r.Header.Get("Api-Key")
	}
	if key == "" {
		return &apiError{status: http.StatusUnauthorized, kind: "invalid_request_error", msg: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."}
	}
	if want != "" && key != want {
		return &apiError{status: http.StatusUnauthorized, kind: "invalid_request_error", code: "invalid_api_key", msg: "Incorrect API key provided."}
	}
	return nil
}

func openAIErrorBody(e *apiError) []byte {
	type inner struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	in := inner{Message: e.msg, Type: e.kind}
	if e.param != "" {
		in.Param = &e.param
	}
	if e.code != "" {
		in.Code = &e.code
	}
	switch e.kind { // OpenAI names a few kinds differently from Anthropic
	case "rate_limit_error":
		in.Type = "requests"
	case "api_error", "overloaded_error":
		in.Type = "server_error"
	case "authentication_error":
		in.Type = "invalid_request_error"
	}
	return marshal(struct {
		Error inner `json:"error"`
	}{in})
}

func (chatAPI) checkAuth(r *http.Request, want string) *apiError { return openAIAuth(r, want) }
func (chatAPI) checkHeaders(*http.Request) *apiError             { return nil }
func (chatAPI) errorBody(e *apiError, _ string) []byte           { return openAIErrorBody(e) }

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	Model               *string           `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ResponseFormat      json.RawMessage   `json:"response_format"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	Seed                *int64            `json:"seed"`
	Stop                json.RawMessage   `json:"stop"`
	Stream              bool              `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage       bool  `json:"include_usage"`
		IncludeObfuscation *bool `json:"include_obfuscation"`
	} `json:"stream_options"`
	N                 *int            `json:"n"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	ReasoningEffort   json.RawMessage `json:"reasoning_effort"`

	Audio                json.RawMessage `json:"audio"`
	FrequencyPenalty     json.RawMessage `json:"frequency_penalty"`
	FunctionCall         json.RawMessage `json:"function_call"`
	Functions            json.RawMessage `json:"functions"`
	LogitBias            json.RawMessage `json:"logit_bias"`
	Logprobs             json.RawMessage `json:"logprobs"`
	Metadata             json.RawMessage `json:"metadata"`
	Modalities           json.RawMessage `json:"modalities"`
	Moderation           json.RawMessage `json:"moderation"`
	Prediction           json.RawMessage `json:"prediction"`
	PresencePenalty      json.RawMessage `json:"presence_penalty"`
	PromptCacheKey       json.RawMessage `json:"prompt_cache_key"`
	PromptCacheOptions   json.RawMessage `json:"prompt_cache_options"`
	PromptCacheRetention json.RawMessage `json:"prompt_cache_retention"`
	SafetyIdentifier     json.RawMessage `json:"safety_identifier"`
	ServiceTier          json.RawMessage `json:"service_tier"`
	Store                json.RawMessage `json:"store"`
	TopLogprobs          json.RawMessage `json:"top_logprobs"`
	User                 json.RawMessage `json:"user"`
	Verbosity            json.RawMessage `json:"verbosity"`
	WebSearchOptions     json.RawMessage `json:"web_search_options"`
}

type chatMessage struct {
	Role             string            `json:"role"`
	Content          json.RawMessage   `json:"content"`
	Name             string            `json:"name"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
	ToolCallID       *string           `json:"tool_call_id"`
	Refusal          *string           `json:"refusal"`
	Audio            json.RawMessage   `json:"audio"`
	FunctionCall     json.RawMessage   `json:"function_call"`
	ReasoningContent *string           `json:"reasoning_content"`
}

type chatPart struct {
	Type                  string          `json:"type"`
	Text                  *string         `json:"text"`
	Refusal               *string         `json:"refusal"`
	ImageURL              *chatImageURL   `json:"image_url"`
	InputAudio            json.RawMessage `json:"input_audio"`
	File                  json.RawMessage `json:"file"`
	PromptCacheBreakpoint json.RawMessage `json:"prompt_cache_breakpoint"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type chatResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// chatState is where the conversion of a conversation's messages stands
// (see resumes).
type chatState struct {
	system   []llm.Block
	messages []llm.Message
	names    toolNames
	pending  []string
	leading  bool
}

var chatResumes resumes[chatState]

func (chatAPI) decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError) {
	var w chatRequest
	var skeleton []byte // the body without its messages, when decodeBody split them
	if elems, _, skel, ok := decodeBody(&chatSkeletons, body, &w, "messages", nil); ok {
		w.Messages, skeleton = elems, skel
	} else {
		w = chatRequest{}
		if e := strictDecode(body, &w, "request body"); e != nil {
			return nil, nil, e
		}
	}
	call.Stream = w.Stream
	if w.Model == nil || *w.Model == "" {
		return nil, nil, paramError("model", "you must provide a model parameter")
	}
	call.Model = *w.Model
	if len(w.Messages) == 0 {
		return nil, nil, paramError("messages", "[] is too short - 'messages'")
	}
	if w.StreamOptions != nil && !w.Stream {
		return nil, nil, paramError("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	if w.N != nil && *w.N != 1 {
		return nil, nil, paramError("n", "the local server answers with one choice; n must be 1")
	}
	if len(w.Functions) > 0 || len(w.FunctionCall) > 0 {
		return nil, nil, badRequest("functions and function_call are deprecated; use tools and tool_choice")
	}
	req := &llm.Request{Temperature: w.Temperature, TopP: w.TopP, Seed: w.Seed}
	switch {
	case w.MaxCompletionTokens != nil:
		req.MaxTokens = *w.MaxCompletionTokens
	case w.MaxTokens != nil:
		req.MaxTokens = *w.MaxTokens
	}
	switch jsonKind(w.Stop) {
	case "", "null":
	case "string":
		req.StopSequences = []string{jsonString(w.Stop)}
	case "array":
		if e := strictDecode(w.Stop, &req.StopSequences, "stop"); e != nil {
			return nil, nil, e
		}
	default:
		return nil, nil, badRequest("stop: expected a string or a list of strings")
	}

	names := toolNames{}
	var pending []string
	leading := true
	start := 0
	if k, st, ok := chatResumes.find(w.Messages); ok {
		start, leading = k, st.leading
		req.System, req.Messages = slices.Clip(st.system), slices.Clip(st.messages)
		names, pending = maps.Clone(st.names), slices.Clone(st.pending)
	}
	for i := start; i < len(w.Messages); i++ {
		raw := w.Messages[i]
		at := fmt.Sprintf("messages[%d]", i)
		var m chatMessage
		if e := strictDecodeMemo(&chatMessages, raw, &m, at); e != nil {
			return nil, nil, e
		}
		if len(pending) > 0 && m.Role != "tool" {
			return nil, nil, unansweredToolCalls(pending)
		}
		switch m.Role {
		case "system", "developer":
			blocks, e := chatContent(m.Content, at+".content", false)
			if e != nil {
				return nil, nil, e
			}
			if leading {
				req.System = append(req.System, blocks...)
			} else {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: blocks})
			}
			continue
		case "user":
			blocks, e := chatContent(m.Content, at+".content", true)
			if e != nil {
				return nil, nil, e
			}
			if len(blocks) == 0 {
				return nil, nil, badRequest("%s.content: a user message needs content", at)
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Name: m.Name, Content: blocks})
		case "assistant":
			msg := llm.Message{Role: llm.RoleAssistant, Name: m.Name}
			if jsonKind(m.Content) != "" && jsonKind(m.Content) != "null" {
				blocks, e := chatContent(m.Content, at+".content", false)
				if e != nil {
					return nil, nil, e
				}
				msg.Content = blocks
			}
			if m.ReasoningContent != nil && *m.ReasoningContent != "" {
				msg.Content = append([]llm.Block{{Type: llm.BlockThinking, Thinking: *m.ReasoningContent}}, msg.Content...)
			}
			for j, rawCall := range m.ToolCalls {
				cat := fmt.Sprintf("%s.tool_calls[%d]", at, j)
				var tc chatToolCall
				if e := strictDecodeMemo(&chatToolCalls, rawCall, &tc, cat); e != nil {
					return nil, nil, e
				}
				if tc.Type != "function" {
					return nil, nil, badRequest("%s.type: expected 'function', got %q", cat, tc.Type)
				}
				if tc.ID == "" {
					return nil, nil, missingParam(cat + ".id")
				}
				if tc.Function == nil || tc.Function.Name == "" {
					return nil, nil, badRequest("%s.function.name: missing", cat)
				}
				if jsonKind(tc.Function.Arguments) != "string" {
					return nil, nil, badRequest("%s.function.arguments: expected a string holding JSON, got a JSON %s", cat, jsonKind(tc.Function.Arguments))
				}
				if _, dup := names[tc.ID]; dup {
					return nil, nil, badRequest("%s.id: duplicate tool call id %s", cat, tc.ID)
				}
				names[tc.ID] = tc.Function.Name
				pending = append(pending, tc.ID)
				addOpenAIToolCall(&msg, tc.ID, tc.Function.Name, jsonString(tc.Function.Arguments))
			}
			if len(msg.Content) == 0 && len(msg.ToolCalls) == 0 && len(msg.InvalidToolCalls) == 0 && (m.Refusal == nil || *m.Refusal == "") {
				return nil, nil, badRequest("%s: an assistant message needs content or tool_calls", at)
			}
			req.Messages = append(req.Messages, msg)
		case "tool":
			if m.ToolCallID == nil || *m.ToolCallID == "" {
				return nil, nil, missingParam(at + ".tool_call_id")
			}
			id := *m.ToolCallID
			if !slices.Contains(pending, id) {
				return nil, nil, paramError(at+".role", "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %s has no open call).", id)
			}
			pending = slices.DeleteFunc(pending, func(s string) bool { return s == id })
			blocks, e := chatContent(m.Content, at+".content", false)
			if e != nil {
				return nil, nil, e
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: names[id], Content: blocks})
		case "function":
			return nil, nil, badRequest("%s.role: 'function' messages are deprecated; use 'tool'", at)
		default:
			return nil, nil, badRequest("%s.role: expected system, developer, user, assistant or tool, got %q", at, m.Role)
		}
		leading = false
	}
	chatResumes.keep(w.Messages, resumeState[chatState]{len(w.Messages), chatState{system: req.System, messages: req.Messages, names: names, pending: pending, leading: leading}})
	if len(pending) > 0 {
		return nil, nil, unansweredToolCalls(pending)
	}

	d := derive(&chatDerivations, skeleton, func() derived { return deriveChat(&w) })
	if d.err != nil {
		return nil, nil, d.err
	}
	d.apply(req)
	return req, &w, nil
}

// chatDerivations keeps what a Chat Completions request's tools,
// tool_choice and response_format declare by the request's bytes without
// its messages (see derived).
var chatDerivations memo[derived]

func deriveChat(w *chatRequest) (d derived) {
	fail := func(e *apiError) derived { return derived{err: e} }
	seen := map[string]bool{}
	for i, raw := range w.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		var t chatTool
		if e := strictDecode(raw, &t, at); e != nil {
			return fail(e)
		}
		if t.Type != "function" {
			return fail(badRequest("%s.type: the local server supports function tools, got %q", at, t.Type))
		}
		if t.Function == nil || t.Function.Name == "" {
			return fail(missingParam(at + ".function.name"))
		}
		if seen[t.Function.Name] {
			return fail(badRequest("tools: duplicate function name %q", t.Function.Name))
		}
		seen[t.Function.Name] = true
		params := t.Function.Parameters
		switch jsonKind(params) {
		case "", "null":
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		case "object":
		default:
			return fail(badRequest("%s.function.parameters: expected a JSON Schema object", at))
		}
		d.tools = append(d.tools, toolSpec(t.Function.Name, t.Function.Description, params))
	}
	tc, e := openAIToolChoice(w.ToolChoice, seen, false)
	if e != nil {
		return fail(e)
	}
	d.toolChoice = tc

	if k := jsonKind(w.ResponseFormat); k != "" && k != "null" {
		var rf chatResponseFormat
		if e := strictDecode(w.ResponseFormat, &rf, "response_format"); e != nil {
			return fail(e)
		}
		f := respFormat{Type: rf.Type}
		if js := rf.JSONSchema; js != nil {
			f.Name, f.Description, f.Schema, f.Strict = js.Name, js.Description, js.Schema, js.Strict
		}
		if d.format, e = openAIResponseFormat(f, "response_format", "response_format.json_schema"); e != nil {
			return fail(e)
		}
	}
	return d
}

// openAIToolChoice reads tool_choice: "auto" | "none" | "required" or a
// named function, as {"type":"function","function":{"name":…}} (chat) or
// {"type":"function","name":…} (responses).
func openAIToolChoice(raw json.RawMessage, tools map[string]bool, flat bool) (*llm.ToolChoice, *apiError) {
	switch jsonKind(raw) {
	case "", "null":
		return nil, nil
	case "string":
		s := jsonString(raw)
		var tc *llm.ToolChoice
		switch s {
		case "auto":
			tc = &llm.ToolChoice{Mode: llm.ToolChoiceAuto}
		case "none":
			tc = &llm.ToolChoice{Mode: llm.ToolChoiceNone}
		case "required":
			tc = &llm.ToolChoice{Mode: llm.ToolChoiceAny}
		default:
			return nil, badRequest("tool_choice: expected auto, none, required or a function, got %q", s)
		}
		if tc.Mode != llm.ToolChoiceNone && len(tools) == 0 {
			return nil, paramError("tool_choice", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
		}
		return tc, nil
	case "object":
		var name string
		if flat {
			var v struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if e := strictDecode(raw, &v, "tool_choice"); e != nil {
				return nil, e
			}
			if v.Type != "function" {
				return nil, badRequest("tool_choice.type: the local server supports 'function', got %q", v.Type)
			}
			name = v.Name
		} else {
			var v struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if e := strictDecode(raw, &v, "tool_choice"); e != nil {
				return nil, e
			}
			if v.Type != "function" {
				return nil, badRequest("tool_choice.type: the local server supports 'function', got %q", v.Type)
			}
			name = v.Function.Name
		}
		if !tools[name] {
			return nil, badRequest("tool_choice: function %q is not among the tools", name)
		}
		return &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: name}, nil
	}
	return nil, badRequest("tool_choice: expected a string or an object")
}

// unansweredToolCalls is Chat Completions' error for tool calls that no
// tool message answers.
func unansweredToolCalls(ids []string) *apiError {
	return paramError("messages", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(ids, ", "))
}

// addOpenAIToolCall adds a call whose arguments arrive as a string holding
// JSON; arguments that are not JSON make an invalid tool call.
func addOpenAIToolCall(msg *llm.Message, id, name, args string) {
	a, _ := toolArgs.decode([]byte(args), func() (validArgs, *apiError) {
		if !json.Valid([]byte(args)) {
			return validArgs{}, nil
		}
		return validArgs{true, compactJSON([]byte(args))}, nil
	})
	if a.valid {
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: name, Args: a.compact})
		return
	}
	msg.InvalidToolCalls = append(msg.InvalidToolCalls, llm.InvalidToolCall{ID: id, Name: name, Args: args, Error: "arguments are not valid JSON"})
}

// validArgs is what addOpenAIToolCall keeps of a call's arguments.
type validArgs struct {
	valid   bool
	compact json.RawMessage
}

// toolArgs keeps checked and compacted tool-call arguments (see memo).
var toolArgs memo[validArgs]

// openAIResponseFormat reads a structured-output format as the Responses
// API writes it (Chat Completions nests name and schema one level down):
// at names the format in errors, schemaAt the place of its name and schema.
func openAIResponseFormat(f respFormat, at, schemaAt string) (*llm.ResponseFormat, *apiError) {
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &llm.ResponseFormat{Name: "json_object", Schema: json.RawMessage(`{"type":"object"}`)}, nil
	case "json_schema":
		if f.Name == "" {
			return nil, missingParam(schemaAt + ".name")
		}
		if !isJSONObject(f.Schema) {
			return nil, badRequest("%s.schema: expected a JSON Schema object", schemaAt)
		}
		return &llm.ResponseFormat{Name: f.Name, Description: f.Description, Schema: compactJSON(f.Schema), Strict: f.Strict != nil && *f.Strict}, nil
	}
	return nil, badRequest("%s.type: expected text, json_object or json_schema, got %q", at, f.Type)
}

// chatContent reads message content: a string or a list of parts. Media
// parts are allowed only in user messages.
func chatContent(raw json.RawMessage, at string, media bool) ([]llm.Block, *apiError) {
	switch jsonKind(raw) {
	case "", "null":
		return nil, nil
	case "string":
		return stringBlocks(raw), nil
	case "array":
		var parts []json.RawMessage
		_ = json.Unmarshal(raw, &parts)
		var out []llm.Block
		for i, p := range parts {
			pat := fmt.Sprintf("%s[%d]", at, i)
			var part chatPart
			if e := strictDecodeMemo(&chatParts, p, &part, pat); e != nil {
				return nil, e
			}
			switch part.Type {
			case "text":
				if part.Text == nil {
					return nil, badRequest("%s.text: missing", pat)
				}
				out = append(out, llm.TextBlock(*part.Text))
			case "refusal":
				if part.Refusal == nil {
					return nil, badRequest("%s.refusal: missing", pat)
				}
				out = append(out, llm.TextBlock(*part.Refusal))
			case "image_url":
				if !media {
					return nil, badRequest("%s.type: image parts are only allowed in user messages", pat)
				}
				if part.ImageURL == nil || part.ImageURL.URL == "" {
					return nil, badRequest("%s.image_url.url: missing", pat)
				}
				out = append(out, imageFromURL(part.ImageURL.URL))
			case "input_audio", "file":
				if !media {
					return nil, badRequest("%s.type: %s parts are only allowed in user messages", pat, part.Type)
				}
				kind := llm.BlockAudio
				if part.Type == "file" {
					kind = llm.BlockFile
				}
				out = append(out, llm.Block{Type: kind, Data: string(compactJSON(firstNonEmpty(part.InputAudio, part.File)))})
			default:
				return nil, badRequest("%s.type: expected text, image_url, input_audio, file or refusal, got %q", pat, part.Type)
			}
		}
		return out, nil
	}
	return nil, badRequest("%s: expected a string or a list of content parts, got a JSON %s", at, jsonKind(raw))
}

func firstNonEmpty(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 {
		return a
	}
	return b
}

// imageFromURL turns a data: URL into base64 data and keeps others as URLs.
func imageFromURL(u string) llm.Block {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok && strings.HasSuffix(meta, ";base64") {
			return llm.Block{Type: llm.BlockImage, MediaType: strings.TrimSuffix(meta, ";base64"), Data: data}
		}
	}
	return llm.Block{Type: llm.BlockImage, URL: u}
}

// Response wire types.

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatFunctionDelta names the function only in a call's first chunk.
type chatFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatToolCallOut struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatMessageOut struct {
	Role        string            `json:"role"`
	Content     *string           `json:"content"`
	Refusal     *string           `json:"refusal"`
	ToolCalls   []chatToolCallOut `json:"tool_calls,omitempty"`
	Annotations []any             `json:"annotations"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

func openAIUsage(u llm.Usage) chatUsage {
	var out chatUsage
	out.PromptTokens = u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	out.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	out.CompletionTokens = u.OutputTokens
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	return out
}

func chatFinishReason(r llm.StopReason) string {
	switch r {
	case llm.StopToolUse:
		return "tool_calls"
	case llm.StopMaxTokens:
		return "length"
	case llm.StopContentFilter, llm.StopRefusal:
		return "content_filter"
	}
	return "stop"
}

func (chatAPI) write(w *responseWriter, call ServedCall, wireReq any, resp *llm.Response, ids *idSource) error {
	wr := wireReq.(*chatRequest)
	id := ids.id("chatcmpl-", 29)
	created := w.created.Unix()
	text := resp.Message.Text()
	var calls []chatToolCallOut
	for _, tc := range resp.Message.ToolCalls {
		calls = append(calls, chatToolCallOut{ID: tc.ID, Type: "function", Function: chatFunction{Name: tc.Name, Arguments: string(tc.Args)}})
	}
	finish := chatFinishReason(resp.StopReason)
	usage := openAIUsage(resp.Usage)
	const fingerprint = "fp_dageval01"
	if !call.Stream {
		msg := chatMessageOut{Role: "assistant", ToolCalls: calls, Annotations: []any{}}
		if text != "" || len(calls) == 0 {
			msg.Content = &text
		}
		out := chatCompletion{ID: id, Object: "chat.completion", Created: created, Model: call.Model,
			Choices: []chatChoice{{Index: 0, Message: msg, FinishReason: finish}}, Usage: usage,
			ServiceTier: "default", SystemFingerprint: fingerprint}
		return w.json(marshal(out))
	}

	includeUsage := wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage
	type toolDelta struct {
		Index    int                `json:"index"`
		ID       string             `json:"id,omitempty"`
		Type     string             `json:"type,omitempty"`
		Function *chatFunctionDelta `json:"function,omitempty"`
	}
	type delta struct {
		Role      string      `json:"role,omitempty"`
		Content   *string     `json:"content,omitempty"`
		Refusal   *string     `json:"refusal,omitempty"`
		ToolCalls []toolDelta `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int       `json:"index"`
		Delta        delta     `json:"delta"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason *string   `json:"finish_reason"`
	}
	type chunk struct {
		ID                string     `json:"id"`
		Object            string     `json:"object"`
		Created           int64      `json:"created"`
		Model             string     `json:"model"`
		ServiceTier       string     `json:"service_tier"`
		SystemFingerprint string     `json:"system_fingerprint"`
		Choices           []choice   `json:"choices"`
		Usage             *chatUsage `json:"usage,omitempty"`
	}
	var s sse
	add := func(c choice) {
		ch := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: call.Model, ServiceTier: "default", SystemFingerprint: fingerprint, Choices: []choice{c}}
		if includeUsage {
			s.add("", struct {
				chunk
				Usage *chatUsage `json:"usage"`
			}{chunk: ch})
			return
		}
		s.add("", ch)
	}
	empty := ""
	add(choice{Delta: delta{Role: "assistant", Content: &empty}})
	for _, piece := range pieces.Words(text) {
		p := piece
		add(choice{Delta: delta{Content: &p}})
	}
	for i, tc := range calls {
		add(choice{Delta: delta{ToolCalls: []toolDelta{{Index: i, ID: tc.ID, Type: "function", Function: &chatFunctionDelta{Name: tc.Function.Name}}}}})
		for _, piece := range splitPieces(tc.Function.Arguments, 3) {
			add(choice{Delta: delta{ToolCalls: []toolDelta{{Index: i, Function: &chatFunctionDelta{Arguments: piece}}}}})
		}
	}
	add(choice{Delta: delta{}, FinishReason: &finish})
	if includeUsage {
		s.add("", chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: call.Model, ServiceTier: "default", SystemFingerprint: fingerprint, Choices: []choice{}, Usage: &usage})
	}
	s.add("", []byte("[DONE]"))
	return w.stream(&s)
}
