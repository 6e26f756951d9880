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

// responsesAPI speaks the OpenAI Responses API. The local server keeps no
// state: previous_response_id, conversations and background runs are refused.
type responsesAPI struct{}

func (responsesAPI) name() string { return cassette.APIOpenAIResponses }

func (responsesAPI) checkAuth(r *http.Request, want string) *apiError { return openAIAuth(r, want) }
func (responsesAPI) checkHeaders(*http.Request) *apiError             { return nil }
func (responsesAPI) errorBody(e *apiError, _ string) []byte           { return openAIErrorBody(e) }

type respRequest struct {
	Model              *string           `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       json.RawMessage   `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Text               *respTextConfig   `json:"text"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Stream             bool              `json:"stream"`
	StreamOptions      json.RawMessage   `json:"stream_options"`
	Store              *bool             `json:"store"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Background         *bool             `json:"background"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Reasoning          json.RawMessage   `json:"reasoning"`

	AccessPrograms       json.RawMessage `json:"access_programs"`
	ContextManagement    json.RawMessage `json:"context_management"`
	Image                json.RawMessage `json:"image"`
	Include              json.RawMessage `json:"include"`
	MaxToolCalls         json.RawMessage `json:"max_tool_calls"`
	Metadata             json.RawMessage `json:"metadata"`
	Moderation           json.RawMessage `json:"moderation"`
	Prompt               json.RawMessage `json:"prompt"`
	PromptCacheKey       json.RawMessage `json:"prompt_cache_key"`
	PromptCacheOptions   json.RawMessage `json:"prompt_cache_options"`
	PromptCacheRetention json.RawMessage `json:"prompt_cache_retention"`
	SafetyIdentifier     json.RawMessage `json:"safety_identifier"`
	ServiceTier          json.RawMessage `json:"service_tier"`
	TopLogprobs          json.RawMessage `json:"top_logprobs"`
	Truncation           json.RawMessage `json:"truncation"`
	User                 json.RawMessage `json:"user"`
}

type respTextConfig struct {
	Format    json.RawMessage `json:"format"`
	Verbosity json.RawMessage `json:"verbosity"`
}

type respFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// respItem is any input item; which fields may be set depends on Type.
type respItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Status           string          `json:"status"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Phase            json.RawMessage `json:"phase"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        json.RawMessage `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	Namespace        string          `json:"namespace"`
	Caller           json.RawMessage `json:"caller"`
	Async            *bool           `json:"async"`
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
}

type respPart struct {
	Type                  string          `json:"type"`
	Text                  *string         `json:"text"`
	Refusal               *string         `json:"refusal"`
	Annotations           json.RawMessage `json:"annotations"`
	Logprobs              json.RawMessage `json:"logprobs"`
	ImageURL              *string         `json:"image_url"`
	FileID                *string         `json:"file_id"`
	Detail                string          `json:"detail"`
	FileData              *string         `json:"file_data"`
	FileURL               *string         `json:"file_url"`
	Filename              *string         `json:"filename"`
	PromptCacheBreakpoint json.RawMessage `json:"prompt_cache_breakpoint"`
}

type respTool struct {
	Type           string          `json:"type"`
	Name           string          `json:"name"`
	Description    *string         `json:"description"`
	Parameters     json.RawMessage `json:"parameters"`
	Strict         *bool           `json:"strict"`
	Async          *bool           `json:"async"`
	DeferLoading   *bool           `json:"defer_loading"`
	AllowedCallers json.RawMessage `json:"allowed_callers"`
	OutputSchema   json.RawMessage `json:"output_schema"`
}

func (responsesAPI) decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError) {
	var w respRequest
	var items []json.RawMessage // the input items, when decodeBody split them
	var skeleton []byte         // the body without them, when decodeBody split them
	var resumed *respResumed    // where respInput resumes, when decodeBody looked it up
	known := func(elems []json.RawMessage) int {
		k, st, ok := respResumes.find(elems)
		resumed = &respResumed{k, st, ok}
		return k
	}
	if elems, array, skel, ok := decodeBody(&respSkeletons, body, &w, "input", known); ok {
		w.Input, items, skeleton = array, elems, skel
	} else {
		w, resumed = respRequest{}, nil
		if e := strictDecode(body, &w, "request body"); e != nil {
			return nil, nil, e
		}
	}
	call.Stream = w.Stream
	if w.Model == nil || *w.Model == "" {
		return nil, nil, missingParam("model")
	}
	call.Model = *w.Model
	switch {
	case w.PreviousResponseID != nil && *w.PreviousResponseID != "":
		return nil, nil, paramError("previous_response_id", "the local server keeps no responses; send the whole conversation as input")
	case len(w.Conversation) > 0 && jsonKind(w.Conversation) != "null":
		return nil, nil, paramError("conversation", "the local server keeps no conversations; send the whole conversation as input")
	case w.Background != nil && *w.Background:
		return nil, nil, paramError("background", "background responses are not supported by the local server")
	case len(w.StreamOptions) > 0 && jsonKind(w.StreamOptions) != "null" && !w.Stream:
		return nil, nil, paramError("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	req := &llm.Request{Temperature: w.Temperature, TopP: w.TopP}
	if w.MaxOutputTokens != nil {
		if *w.MaxOutputTokens < 16 {
			return nil, nil, paramError("max_output_tokens", "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got %d instead.", *w.MaxOutputTokens)
		}
		req.MaxTokens = *w.MaxOutputTokens
	}
	switch jsonKind(w.Instructions) {
	case "", "null":
	case "string":
		req.System = stringBlocks(w.Instructions)
	default:
		return nil, nil, badRequest("instructions: expected a string")
	}

	switch jsonKind(w.Input) {
	case "":
		return nil, nil, missingParam("input")
	case "string":
		req.Messages = []llm.Message{llm.User(jsonString(w.Input))}
	case "array":
		if items == nil {
			_ = json.Unmarshal(w.Input, &items)
		}
		if e := respInput(req, items, resumed); e != nil {
			return nil, nil, e
		}
	default:
		return nil, nil, badRequest("input: expected a string or a list of items, got a JSON %s", jsonKind(w.Input))
	}

	d := derive(&respDerivations, skeleton, func() derived { return deriveResp(&w) })
	if d.err != nil {
		return nil, nil, d.err
	}
	d.apply(req)
	return req, &w, nil
}

// derived is what a request's settings outside its history declare (tools,
// tool_choice, Anthropic's thinking, the output format), or the error they
// give. It depends on the request without its history alone, so requests
// that share that keep it (one memo per format) instead of decoding every
// tool again on every call.
type derived struct {
	tools      []llm.ToolSpec
	toolChoice *llm.ToolChoice
	thinking   *llm.Thinking
	format     *llm.ResponseFormat
	err        *apiError
}

// apply sets what d declares on req. A derived is shared by the requests
// with the same remainder: each request gets its own copies of what it may
// change.
func (d derived) apply(req *llm.Request) {
	req.Tools = slices.Clone(d.tools)
	if d.toolChoice != nil {
		tc := *d.toolChoice
		req.ToolChoice = &tc
	}
	if d.thinking != nil {
		th := *d.thinking
		req.Thinking = &th
	}
	if d.format != nil {
		rf := *d.format
		req.ResponseFormat = &rf
	}
}

// derive returns the settings of the request whose remainder is skeleton,
// from m when a request with the same remainder came before; without a
// skeleton (a body the server could not split) it derives them afresh.
func derive(m *memo[derived], skeleton []byte, fresh func() derived) derived {
	if skeleton == nil {
		return fresh()
	}
	d, _ := m.decode(skeleton, func() (derived, *apiError) { return fresh(), nil })
	return d
}

// respDerivations keeps derived settings by the request's bytes without its
// input (see decodeBody).
var respDerivations memo[derived]

func deriveResp(w *respRequest) (d derived) {
	fail := func(e *apiError) derived { return derived{err: e} }
	seen := map[string]bool{}
	for i, raw := range w.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		var t respTool
		if e := strictDecode(raw, &t, at); e != nil {
			return fail(e)
		}
		if t.Type != "function" {
			return fail(badRequest("%s.type: the local server supports function tools, got %q", at, t.Type))
		}
		if t.Name == "" {
			return fail(missingParam(at + ".name"))
		}
		if seen[t.Name] {
			return fail(badRequest("tools: duplicate function name %q", t.Name))
		}
		seen[t.Name] = true
		if !isJSONObject(t.Parameters) {
			return fail(badRequest("%s.parameters: expected a JSON Schema object", at))
		}
		d.tools = append(d.tools, toolSpec(t.Name, t.Description, t.Parameters))
	}
	tc, e := openAIToolChoice(w.ToolChoice, seen, true)
	if e != nil {
		return fail(e)
	}
	d.toolChoice = tc

	if w.Text != nil && len(w.Text.Format) > 0 && jsonKind(w.Text.Format) != "null" {
		var f respFormat
		if e := strictDecode(w.Text.Format, &f, "text.format"); e != nil {
			return fail(e)
		}
		if d.format, e = openAIResponseFormat(f, "text.format", "text.format"); e != nil {
			return fail(e)
		}
	}
	return d
}

// respInput turns input items into messages: consecutive assistant output
// (messages, reasoning, function calls) forms one assistant message, each
// function_call_output a tool message. resumed, when not nil, is what
// respResumes.find gave for items.
func respInput(req *llm.Request, items []json.RawMessage, resumed *respResumed) *apiError {
	names := toolNames{}
	var open []string     // function calls without output so far
	var answered []string // function calls with output
	inAssistant := false  // the last message is an assistant turn still being assembled
	leading := true
	instructions := len(req.System)
	start := 0
	if resumed == nil {
		k, st, ok := respResumes.find(items)
		resumed = &respResumed{k, st, ok}
	}
	if k, st, ok := resumed.k, resumed.st, resumed.ok; ok {
		start, leading = k, st.leading
		req.System = append(slices.Clip(req.System), st.system...)
		req.Messages = slices.Clip(st.messages)
		names, open, answered = maps.Clone(st.names), slices.Clone(st.open), slices.Clone(st.answered)
	}
	for i := start; i < len(items); i++ {
		raw := items[i]
		at := fmt.Sprintf("input[%d]", i)
		var it respItem
		if e := strictDecodeMemo(&respItems, raw, &it, at); e != nil {
			return e
		}
		kind := it.Type
		if kind == "" && it.Role != "" {
			kind = "message"
		}
		switch kind {
		case "message":
			blocks, e := respContent(it.Content, at+".content", it.Role)
			if e != nil {
				return e
			}
			switch it.Role {
			case "system", "developer":
				if leading {
					req.System = append(req.System, blocks...)
				} else {
					req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: blocks})
				}
				inAssistant = false
				continue
			case "user":
				if len(blocks) == 0 {
					return badRequest("%s.content: a user message needs content", at)
				}
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: blocks})
				inAssistant = false
			case "assistant":
				last := lastAssistant(req, inAssistant)
				last.Content = append(last.Content, blocks...)
				inAssistant = true
			default:
				return badRequest("%s.role: expected user, assistant, system or developer, got %q", at, it.Role)
			}
		case "reasoning":
			var summary []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if len(it.Summary) > 0 {
				if e := strictDecode(it.Summary, &summary, at+".summary"); e != nil {
					return e
				}
			}
			if it.ID == "" {
				return badRequest("%s.id: Missing required parameter", at)
			}
			var texts []string
			for _, s := range summary {
				texts = append(texts, s.Text)
			}
			b := llm.Block{Type: llm.BlockThinking, Thinking: strings.Join(texts, "\n\n")}
			if it.EncryptedContent != nil {
				b.Signature = *it.EncryptedContent
			}
			last := lastAssistant(req, inAssistant)
			last.Content = append(last.Content, b)
			inAssistant = true
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return badRequest("%s: function_call items need call_id and name", at)
			}
			if jsonKind(it.Arguments) != "string" {
				return badRequest("%s.arguments: expected a string holding JSON, got a JSON %s", at, jsonKind(it.Arguments))
			}
			if _, dup := names[it.CallID]; dup {
				return badRequest("%s.call_id: duplicate call_id %s", at, it.CallID)
			}
			names[it.CallID] = it.Name
			open = append(open, it.CallID)
			addOpenAIToolCall(lastAssistant(req, inAssistant), it.CallID, it.Name, jsonString(it.Arguments))
			inAssistant = true
		case "function_call_output":
			if it.CallID == "" {
				return missingParam(at + ".call_id")
			}
			if !slices.Contains(open, it.CallID) {
				return paramError("input", "No tool call found for function call output with call_id %s.", it.CallID)
			}
			open = slices.DeleteFunc(open, func(s string) bool { return s == it.CallID })
			answered = append(answered, it.CallID)
			var blocks []llm.Block
			switch jsonKind(it.Output) {
			case "string":
				blocks = stringBlocks(it.Output)
			case "array":
				var e *apiError
				blocks, e = respContent(it.Output, at+".output", "user")
				if e != nil {
					return e
				}
			default:
				return badRequest("%s.output: expected a string or a list of content parts", at)
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: it.CallID, Name: names[it.CallID], Content: blocks})
			inAssistant = false
		case "item_reference":
			return badRequest("%s: item references need stored responses, which the local server does not keep", at)
		case "":
			return badRequest("%s.type: Missing required parameter", at)
		default:
			return badRequest("%s.type: item type %q is not supported by the local server", at, kind)
		}
		leading = false
	}
	if !inAssistant {
		// An assistant turn still being assembled would be changed in
		// place by the next item: only a finished one is kept.
		respResumes.keep(items, resumeState[respState]{len(items), respState{
			system: slices.Clone(req.System[instructions:]), messages: req.Messages, names: names, open: open, answered: answered, leading: leading,
		}})
	}
	if len(open) > 0 {
		return paramError("input", "No tool output found for function call %s.", open[0])
	}
	return nil
}

// respState is where the conversion of a conversation's input items
// stands (see resumes): the system blocks and messages they made, and
// respInput's bookkeeping, between two messages.
type respState struct {
	system         []llm.Block
	messages       []llm.Message
	names          toolNames
	open, answered []string
	leading        bool
}

var respResumes resumes[respState]

// respResumed is what respResumes.find gave.
type respResumed struct {
	k  int
	st respState
	ok bool
}

// lastAssistant returns the assistant message being assembled, starting one if needed.
func lastAssistant(req *llm.Request, continuing bool) *llm.Message {
	if !continuing || len(req.Messages) == 0 || req.Messages[len(req.Messages)-1].Role != llm.RoleAssistant {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant})
	}
	return &req.Messages[len(req.Messages)-1]
}

// respContent reads a message's content: a string or a list of parts.
func respContent(raw json.RawMessage, at, role string) ([]llm.Block, *apiError) {
	switch jsonKind(raw) {
	case "string":
		return stringBlocks(raw), nil
	case "array":
		var parts []json.RawMessage
		_ = json.Unmarshal(raw, &parts)
		var out []llm.Block
		for i, p := range parts {
			pat := fmt.Sprintf("%s[%d]", at, i)
			var part respPart
			if e := strictDecodeMemo(&respParts, p, &part, pat); e != nil {
				return nil, e
			}
			switch part.Type {
			case "input_text", "output_text":
				if (part.Type == "output_text") != (role == "assistant") {
					return nil, badRequest("%s.type: %s parts belong to %s messages", pat, part.Type, map[bool]string{true: "assistant", false: "user, system and developer"}[part.Type == "output_text"])
				}
				if part.Text == nil {
					return nil, badRequest("%s.text: Missing required parameter", pat)
				}
				out = append(out, llm.TextBlock(*part.Text))
			case "refusal":
				if part.Refusal == nil {
					return nil, badRequest("%s.refusal: Missing required parameter", pat)
				}
				out = append(out, llm.TextBlock(*part.Refusal))
			case "input_image":
				switch {
				case part.ImageURL != nil:
					out = append(out, imageFromURL(*part.ImageURL))
				case part.FileID != nil:
					out = append(out, llm.Block{Type: llm.BlockImage, URL: "file:" + *part.FileID})
				default:
					return nil, badRequest("%s: input_image needs image_url or file_id", pat)
				}
			case "input_file":
				b := llm.Block{Type: llm.BlockFile}
				switch {
				case part.FileData != nil:
					b.Data = *part.FileData
				case part.FileURL != nil:
					b.URL = *part.FileURL
				case part.FileID != nil:
					b.URL = "file:" + *part.FileID
				default:
					return nil, badRequest("%s: input_file needs file_data, file_url or file_id", pat)
				}
				out = append(out, b)
			default:
				return nil, badRequest("%s.type: part type %q is not supported by the local server", pat, part.Type)
			}
		}
		return out, nil
	case "", "null":
		return nil, badRequest("%s: Missing required parameter", at)
	}
	return nil, badRequest("%s: expected a string or a list of content parts, got a JSON %s", at, jsonKind(raw))
}

// Response wire types.

type respOutputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type respSummary struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type respOutputItem struct {
	ID               string           `json:"id"`
	Type             string           `json:"type"`
	Status           string           `json:"status,omitempty"`
	Role             string           `json:"role,omitempty"`
	Content          []respOutputText `json:"content,omitempty"`
	Summary          []respSummary    `json:"summary,omitempty"`
	EncryptedContent string           `json:"encrypted_content,omitempty"`
	CallID           string           `json:"call_id,omitempty"`
	Name             string           `json:"name,omitempty"`
	Arguments        *string          `json:"arguments,omitempty"`
}

// MarshalJSON writes the fields each item type has, empty lists included.
func (it respOutputItem) MarshalJSON() ([]byte, error) {
	switch it.Type {
	case "message":
		content := it.Content
		if content == nil {
			content = []respOutputText{}
		}
		return marshal(struct {
			ID      string           `json:"id"`
			Type    string           `json:"type"`
			Status  string           `json:"status"`
			Role    string           `json:"role"`
			Content []respOutputText `json:"content"`
		}{it.ID, it.Type, it.Status, it.Role, content}), nil
	case "reasoning":
		summary := it.Summary
		if summary == nil {
			summary = []respSummary{}
		}
		return marshal(struct {
			ID               string        `json:"id"`
			Type             string        `json:"type"`
			Summary          []respSummary `json:"summary"`
			EncryptedContent string        `json:"encrypted_content,omitempty"`
		}{it.ID, it.Type, summary, it.EncryptedContent}), nil
	default:
		args := ""
		if it.Arguments != nil {
			args = *it.Arguments
		}
		return marshal(struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status"`
			Arguments string `json:"arguments"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
		}{it.ID, it.Type, it.Status, args, it.CallID, it.Name}), nil
	}
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type respResponse struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	Error              *struct{}         `json:"error"`
	IncompleteDetails  *incomplete       `json:"incomplete_details"`
	Instructions       json.RawMessage   `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []respOutputItem  `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	ServiceTier        string            `json:"service_tier"`
	Store              bool              `json:"store"`
	Temperature        float64           `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               float64           `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *respUsage        `json:"usage"`
	Metadata           json.RawMessage   `json:"metadata"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

func orJSON(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return compactJSON(raw)
}

func (responsesAPI) write(w *responseWriter, call ServedCall, wireReq any, resp *llm.Response, ids *idSource) error {
	wr := wireReq.(*respRequest)
	out := respResponse{
		ID: ids.id("resp_", 48), Object: "response", CreatedAt: w.created.Unix(), Status: "completed",
		Instructions: orJSON(wr.Instructions, "null"), MaxOutputTokens: wr.MaxOutputTokens, Model: call.Model,
		Output: []respOutputItem{}, ParallelToolCalls: wr.ParallelToolCalls == nil || *wr.ParallelToolCalls,
		Reasoning: orJSON(wr.Reasoning, `{"effort":null,"summary":null}`), ServiceTier: "default",
		Store: wr.Store == nil || *wr.Store, Temperature: 1, TopP: 1,
		Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: orJSON(wr.ToolChoice, `"auto"`),
		Tools: []json.RawMessage{}, Truncation: "disabled", Metadata: orJSON(wr.Metadata, "{}"),
	}
	if wr.Temperature != nil {
		out.Temperature = *wr.Temperature
	}
	if wr.TopP != nil {
		out.TopP = *wr.TopP
	}
	if wr.Text != nil {
		out.Text = compactJSON(marshal(wr.Text))
	}
	for _, t := range wr.Tools {
		out.Tools = append(out.Tools, compactJSON(t))
	}
	switch resp.StopReason {
	case llm.StopMaxTokens:
		out.Status, out.IncompleteDetails = "incomplete", &incomplete{"max_output_tokens"}
	case llm.StopContentFilter:
		out.Status, out.IncompleteDetails = "incomplete", &incomplete{"content_filter"}
	}
	var text []string
	for _, b := range resp.Message.Content {
		switch b.Type {
		case llm.BlockThinking:
			item := respOutputItem{ID: ids.id("rs_", 48), Type: "reasoning", Summary: []respSummary{{"summary_text", b.Thinking}}, EncryptedContent: b.Signature}
			if b.Thinking == "" {
				item.Summary = []respSummary{}
			}
			out.Output = append(out.Output, item)
		case llm.BlockText:
			if b.Text != "" {
				text = append(text, b.Text)
			}
		}
	}
	if len(text) > 0 {
		parts := make([]respOutputText, len(text))
		for i, t := range text {
			parts[i] = respOutputText{"output_text", t, []any{}, []any{}}
		}
		out.Output = append(out.Output, respOutputItem{ID: ids.id("msg_", 48), Type: "message", Status: "completed", Role: "assistant", Content: parts})
	}
	for _, tc := range resp.Message.ToolCalls {
		args := string(tc.Args)
		out.Output = append(out.Output, respOutputItem{ID: ids.id("fc_", 48), Type: "function_call", Status: "completed", CallID: tc.ID, Name: tc.Name, Arguments: &args})
	}
	u := &respUsage{InputTokens: resp.Usage.InputTokens + resp.Usage.CacheReadTokens + resp.Usage.CacheWriteTokens, OutputTokens: resp.Usage.OutputTokens}
	u.InputTokensDetails.CachedTokens = resp.Usage.CacheReadTokens
	u.TotalTokens = u.InputTokens + u.OutputTokens
	out.Usage = u
	if !call.Stream {
		return w.json(marshal(out))
	}

	var s sse
	seq := 0
	add := func(typ string, fields map[string]any) {
		// The API writes type and sequence_number first; the other
		// members follow in encoding/json's order for maps, sorted, so
		// events are stable.
		data := fmt.Appendf(nil, `{"type":%s,"sequence_number":%d`, marshal(typ), seq)
		seq++
		if rest := marshal(fields); len(rest) > 2 {
			data = append(append(data, ','), rest[1:]...)
		} else {
			data = append(data, '}')
		}
		s.add(typ, data)
	}
	pending := out
	pending.Status, pending.Output, pending.Usage, pending.IncompleteDetails = "in_progress", []respOutputItem{}, nil, nil
	add("response.created", map[string]any{"response": pending})
	add("response.in_progress", map[string]any{"response": pending})
	for i, item := range out.Output {
		start := item
		start.Status = "in_progress"
		switch item.Type {
		case "message":
			start.Content = []respOutputText{}
		case "function_call":
			empty := ""
			start.Arguments = &empty
		case "reasoning":
			start.Summary = []respSummary{}
		}
		add("response.output_item.added", map[string]any{"output_index": i, "item": start})
		switch item.Type {
		case "message":
			for j, part := range item.Content {
				base := map[string]any{"item_id": item.ID, "output_index": i, "content_index": j}
				with := func(k string, v any) map[string]any {
					m := map[string]any{k: v}
					for bk, bv := range base {
						m[bk] = bv
					}
					return m
				}
				add("response.content_part.added", with("part", respOutputText{"output_text", "", []any{}, []any{}}))
				for _, piece := range pieces.Words(part.Text) {
					m := with("delta", piece)
					m["logprobs"] = []any{}
					add("response.output_text.delta", m)
				}
				m := with("text", part.Text)
				m["logprobs"] = []any{}
				add("response.output_text.done", m)
				add("response.content_part.done", with("part", part))
			}
		case "function_call":
			for _, piece := range splitPieces(*item.Arguments, 3) {
				add("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": i, "delta": piece})
			}
			add("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": i, "name": item.Name, "arguments": *item.Arguments})
		case "reasoning":
			for j, sum := range item.Summary {
				base := func() map[string]any {
					return map[string]any{"item_id": item.ID, "output_index": i, "summary_index": j}
				}
				m := base()
				m["part"] = respSummary{"summary_text", ""}
				add("response.reasoning_summary_part.added", m)
				for _, piece := range pieces.Words(sum.Text) {
					m := base()
					m["delta"] = piece
					add("response.reasoning_summary_text.delta", m)
				}
				m = base()
				m["text"] = sum.Text
				add("response.reasoning_summary_text.done", m)
				m = base()
				m["part"] = sum
				add("response.reasoning_summary_part.done", m)
			}
		}
		add("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	final := "response.completed"
	if out.Status == "incomplete" {
		final = "response.incomplete"
	}
	add(final, map[string]any{"response": out})
	return w.stream(&s)
}
