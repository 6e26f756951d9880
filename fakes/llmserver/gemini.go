package llmserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/internal/pieces"
	"github.com/dageval/dageval/harness/llm"
)

// geminiAPI speaks Gemini's generateContent and streamGenerateContent. The
// model and the streaming choice are in the path (and alt=sse in the
// query), not in the body.
type geminiAPI struct {
	model  string
	stream bool
	sse    bool // alt=sse: events; otherwise a stream is one JSON array
}

func (geminiAPI) name() string { return cassette.APIGemini }

// checkAuth accepts the x-goog-api-key header or a key= query parameter,
// as the API does, with Google's answers: a missing key is a 403, a wrong
// one a 400 whose ErrorInfo reason is API_KEY_INVALID.
func (geminiAPI) checkAuth(r *http.Request, want string) *apiError {
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key == "" {
		return &apiError{status: http.StatusForbidden, kind: "permission_error", msg: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}
	}
	if want != "" && key != want {
		return &apiError{status: http.StatusBadRequest, kind: "authentication_error", code: "API_KEY_INVALID", msg: "API key not valid. Please pass a valid API key."}
	}
	return nil
}

func (geminiAPI) checkHeaders(*http.Request) *apiError { return nil }

// googleStatus is the canonical status Google's errors carry.
func googleStatus(e *apiError) string {
	switch e.status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable, 529:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if e.status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

func (geminiAPI) errorBody(e *apiError, _ string) []byte {
	type detail struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	type inner struct {
		Code    int      `json:"code"`
		Message string   `json:"message"`
		Status  string   `json:"status"`
		Details []detail `json:"details,omitempty"`
	}
	in := inner{Code: e.status, Message: e.msg, Status: googleStatus(e)}
	if upperReason().MatchString(e.code) {
		in.Details = []detail{{"type.googleapis.com/google.rpc.ErrorInfo", e.code, "googleapis.com"}}
	}
	return marshal(struct {
		Error inner `json:"error"`
	}{in})
}

var upperReason = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z_]+$`) })

// geminiRequest is the body of generateContent. Fields the local server
// accepts but does not act on are kept so that strict decoding knows them.
type geminiRequest struct {
	Contents          []json.RawMessage `json:"contents"`
	SystemInstruction json.RawMessage   `json:"systemInstruction"`
	Tools             []json.RawMessage `json:"tools"`
	ToolConfig        *struct {
		FunctionCallingConfig *struct {
			Mode                        string   `json:"mode"`
			AllowedFunctionNames        []string `json:"allowedFunctionNames"`
			StreamFunctionCallArguments *bool    `json:"streamFunctionCallArguments"`
		} `json:"functionCallingConfig"`
		RetrievalConfig json.RawMessage `json:"retrievalConfig"`
	} `json:"toolConfig"`
	GenerationConfig *geminiGenerationConfig `json:"generationConfig"`

	SafetySettings json.RawMessage `json:"safetySettings"`
	CachedContent  json.RawMessage `json:"cachedContent"`
	Labels         json.RawMessage `json:"labels"`
	ServiceTier    json.RawMessage `json:"serviceTier"`
	Store          json.RawMessage `json:"store"`
}

type geminiGenerationConfig struct {
	MaxOutputTokens    *int            `json:"maxOutputTokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"topP"`
	TopK               *float64        `json:"topK"`
	Seed               *int64          `json:"seed"`
	StopSequences      []string        `json:"stopSequences"`
	CandidateCount     *int            `json:"candidateCount"`
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ThinkingConfig     *struct {
		IncludeThoughts bool   `json:"includeThoughts"`
		ThinkingBudget  *int   `json:"thinkingBudget"`
		ThinkingLevel   string `json:"thinkingLevel"`
	} `json:"thinkingConfig"`

	PresencePenalty    json.RawMessage `json:"presencePenalty"`
	FrequencyPenalty   json.RawMessage `json:"frequencyPenalty"`
	ResponseLogprobs   json.RawMessage `json:"responseLogprobs"`
	Logprobs           json.RawMessage `json:"logprobs"`
	ResponseModalities json.RawMessage `json:"responseModalities"`
	MediaResolution    json.RawMessage `json:"mediaResolution"`
	SpeechConfig       json.RawMessage `json:"speechConfig"`
	ImageConfig        json.RawMessage `json:"imageConfig"`
}

type geminiContent struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

// geminiPart is one part; exactly one data field may be set, and any part
// may carry a thought signature.
type geminiPart struct {
	Text             *string `json:"text"`
	Thought          bool    `json:"thought"`
	ThoughtSignature string  `json:"thoughtSignature"`
	InlineData       *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData"`
	FileData *struct {
		MimeType    string `json:"mimeType"`
		FileURI     string `json:"fileUri"`
		DisplayName string `json:"displayName"`
	} `json:"fileData"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
		Parts    json.RawMessage `json:"parts"`
	} `json:"functionResponse"`
	VideoMetadata   json.RawMessage `json:"videoMetadata"`
	MediaResolution json.RawMessage `json:"mediaResolution"`
}

func (p *geminiPart) dataFields() int {
	n := 0
	for _, set := range []bool{p.Text != nil, p.InlineData != nil, p.FileData != nil, p.FunctionCall != nil, p.FunctionResponse != nil} {
		if set {
			n++
		}
	}
	return n
}

type geminiFunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          *string         `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	Response             json.RawMessage `json:"response"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema"`
	Behavior             json.RawMessage `json:"behavior"`
}

// Compiled at first use, as every pattern of the packages the CLI links:
// the bounded repetition makes a large program, and package start-up is
// every command's cost.
var functionName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`) })

// openCall is a function call of the previous model turn awaiting its response.
type openCall struct {
	id, wireID, name string
}

func (g geminiAPI) decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError) {
	call.Model, call.Stream = g.model, g.stream
	var w geminiRequest
	if e := strictDecode(body, &w, "request body"); e != nil {
		return nil, nil, e
	}
	if len(w.Contents) == 0 {
		return nil, nil, badRequest("* GenerateContentRequest.contents: contents is not specified")
	}
	req := &llm.Request{}
	if jsonKind(w.SystemInstruction) == "object" {
		var c geminiContent
		if e := strictDecode(w.SystemInstruction, &c, "systemInstruction"); e != nil {
			return nil, nil, e
		}
		for j, raw := range c.Parts {
			p, e := decodeGeminiPart(raw, fmt.Sprintf("systemInstruction.parts[%d]", j))
			if e != nil {
				return nil, nil, e
			}
			if p.Text == nil {
				return nil, nil, badRequest("systemInstruction.parts[%d]: the system instruction takes text parts only", j)
			}
			req.System = append(req.System, llm.TextBlock(*p.Text))
		}
	}

	// The "current turn" starts at the last user content that is not
	// function responses; Gemini 3 checks the signatures of the function
	// calls from there on.
	current := 0
	var decoded []geminiContent
	for i, raw := range w.Contents {
		var c geminiContent
		if e := strictDecode(raw, &c, fmt.Sprintf("contents[%d]", i)); e != nil {
			return nil, nil, e
		}
		decoded = append(decoded, c)
	}
	parts := make([][]*geminiPart, len(decoded))
	for i, c := range decoded {
		at := fmt.Sprintf("contents[%d]", i)
		if len(c.Parts) == 0 {
			return nil, nil, badRequest("* GenerateContentRequest.%s.parts: contents.parts must not be empty.", at)
		}
		for j, raw := range c.Parts {
			p, e := decodeGeminiPart(raw, fmt.Sprintf("%s.parts[%d]", at, j))
			if e != nil {
				return nil, nil, e
			}
			parts[i] = append(parts[i], p)
		}
		if (c.Role == "user" || c.Role == "") && parts[i][0].FunctionResponse == nil {
			current = i
		}
	}

	var open []openCall
	for i, c := range decoded {
		at := fmt.Sprintf("contents[%d]", i)
		ps := parts[i]
		switch c.Role {
		case "user", "":
			var responses []*geminiPart
			user := llm.Message{Role: llm.RoleUser}
			for j, p := range ps {
				switch {
				case p.FunctionResponse != nil:
					responses = append(responses, p)
				case p.FunctionCall != nil:
					return nil, nil, badRequest("* GenerateContentRequest.%s.parts[%d]: a function call must come from the model", at, j)
				default:
					b, e := geminiUserBlock(p, fmt.Sprintf("%s.parts[%d]", at, j))
					if e != nil {
						return nil, nil, e
					}
					if b != nil {
						user.Content = append(user.Content, *b)
					}
				}
			}
			if len(responses) > 0 || len(open) > 0 {
				if len(responses) != len(open) {
					return nil, nil, badRequest("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
				}
				msgs, e := geminiToolResults(responses, open, at)
				if e != nil {
					return nil, nil, e
				}
				req.Messages = append(req.Messages, msgs...)
				open = nil
			}
			if len(user.Content) > 0 {
				req.Messages = append(req.Messages, user)
			}
		case "model":
			if len(open) > 0 {
				return nil, nil, badRequest("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
			}
			msg, calls, e := g.geminiModelMessage(ps, at, i, i > current)
			if e != nil {
				return nil, nil, e
			}
			open = calls
			req.Messages = append(req.Messages, msg)
		default:
			return nil, nil, badRequest("* GenerateContentRequest.%s.role: Please use a valid role: user, model.", at)
		}
	}

	seen := map[string]bool{}
	for i, raw := range w.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		var t struct {
			FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
		}
		if e := strictDecode(raw, &t, at); e != nil {
			return nil, nil, e
		}
		for j, rawDecl := range t.FunctionDeclarations {
			dat := fmt.Sprintf("%s.functionDeclarations[%d]", at, j)
			var d geminiFunctionDeclaration
			if e := strictDecode(rawDecl, &d, dat); e != nil {
				return nil, nil, e
			}
			if !functionName().MatchString(d.Name) {
				return nil, nil, badRequest("* GenerateContentRequest.%s.name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 128.", dat)
			}
			if seen[d.Name] {
				return nil, nil, badRequest("* GenerateContentRequest.%s.name: duplicate function name %q", dat, d.Name)
			}
			seen[d.Name] = true
			params := d.ParametersJSONSchema
			if len(params) > 0 && len(d.Parameters) > 0 {
				return nil, nil, badRequest("* GenerateContentRequest.%s: parameters and parametersJsonSchema are mutually exclusive", dat)
			}
			if len(params) == 0 {
				params = d.Parameters
			}
			switch jsonKind(params) {
			case "", "null":
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			case "object":
			default:
				return nil, nil, badRequest("* GenerateContentRequest.%s.parametersJsonSchema: expected a JSON Schema object", dat)
			}
			req.Tools = append(req.Tools, toolSpec(d.Name, d.Description, params))
		}
	}
	if tc := w.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		fc := tc.FunctionCallingConfig
		switch fc.Mode {
		case "AUTO", "":
			req.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceAuto}
		case "ANY", "VALIDATED":
			req.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceAny}
		case "NONE":
			req.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceNone}
		default:
			return nil, nil, badRequest("* GenerateContentRequest.tool_config.function_calling_config.mode: unknown mode %q", fc.Mode)
		}
		for _, name := range fc.AllowedFunctionNames {
			if !seen[name] {
				return nil, nil, badRequest("* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: %q is not a declared function", name)
			}
		}
		if len(fc.AllowedFunctionNames) == 1 && req.ToolChoice.Mode == llm.ToolChoiceAny {
			req.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: fc.AllowedFunctionNames[0]}
		}
	}
	if gc := w.GenerationConfig; gc != nil {
		if gc.CandidateCount != nil && *gc.CandidateCount != 1 {
			return nil, nil, badRequest("* GenerateContentRequest.generation_config.candidate_count: the local server answers with one candidate")
		}
		if gc.MaxOutputTokens != nil {
			req.MaxTokens = *gc.MaxOutputTokens
		}
		req.Temperature, req.TopP, req.Seed, req.StopSequences = gc.Temperature, gc.TopP, gc.Seed, gc.StopSequences
		if len(gc.ResponseJSONSchema) > 0 || len(gc.ResponseSchema) > 0 {
			if gc.ResponseMimeType != "application/json" {
				return nil, nil, badRequest("* GenerateContentRequest.generation_config.response_mime_type: a response schema needs response_mime_type application/json, got %q", gc.ResponseMimeType)
			}
			schema := gc.ResponseJSONSchema
			if len(schema) == 0 {
				schema = gc.ResponseSchema
			}
			if !isJSONObject(schema) {
				return nil, nil, badRequest("* GenerateContentRequest.generation_config.response_json_schema: expected a JSON Schema object")
			}
			req.ResponseFormat = &llm.ResponseFormat{Name: "response", Schema: compactJSON(schema)}
		}
		if th := gc.ThinkingConfig; th != nil {
			budget := -1
			if th.ThinkingBudget != nil {
				budget = *th.ThinkingBudget
			}
			if budget != 0 {
				req.Thinking = &llm.Thinking{BudgetTokens: max(budget, 0)}
			}
		}
	}
	return req, &w, nil
}

func decodeGeminiPart(raw json.RawMessage, at string) (*geminiPart, *apiError) {
	var p geminiPart
	if e := strictDecode(raw, &p, at); e != nil {
		return nil, e
	}
	switch n := p.dataFields(); {
	case n == 0:
		return nil, badRequest("* GenerateContentRequest.%s.data: required oneof field 'data' must have one initialized field", at)
	case n > 1:
		return nil, badRequest("* GenerateContentRequest.%s: oneof field 'data' is already set. Cannot set 'data'", at)
	}
	if p.FunctionCall != nil && p.FunctionCall.Name == "" {
		return nil, badRequest("* GenerateContentRequest.%s.function_call.name: Name cannot be empty.", at)
	}
	if p.FunctionResponse != nil && p.FunctionResponse.Name == "" {
		return nil, badRequest("* GenerateContentRequest.%s.function_response.name: Name cannot be empty.", at)
	}
	if p.FunctionCall != nil && !isObjectOrEmpty(p.FunctionCall.Args) {
		return nil, badRequest("* GenerateContentRequest.%s.function_call.args: expected an object", at)
	}
	if p.FunctionResponse != nil && !isJSONObject(p.FunctionResponse.Response) {
		return nil, badRequest("* GenerateContentRequest.%s.function_response.response: expected an object", at)
	}
	return &p, nil
}

func isObjectOrEmpty(raw json.RawMessage) bool {
	return jsonKind(raw) == "" || jsonKind(raw) == "null" || isJSONObject(raw)
}

func geminiUserBlock(p *geminiPart, at string) (*llm.Block, *apiError) {
	switch {
	case p.Text != nil:
		if *p.Text == "" {
			return nil, nil
		}
		b := llm.TextBlock(*p.Text)
		return &b, nil
	case p.InlineData != nil:
		if p.InlineData.MimeType == "" || p.InlineData.Data == "" {
			return nil, badRequest("* GenerateContentRequest.%s.inline_data: mime_type and data are required", at)
		}
		b := llm.Block{Type: mediaKind(p.InlineData.MimeType), MediaType: p.InlineData.MimeType, Data: p.InlineData.Data}
		return &b, nil
	case p.FileData != nil:
		if p.FileData.FileURI == "" {
			return nil, badRequest("* GenerateContentRequest.%s.file_data.file_uri: Field required", at)
		}
		b := llm.Block{Type: mediaKind(p.FileData.MimeType), MediaType: p.FileData.MimeType, URL: p.FileData.FileURI}
		return &b, nil
	}
	return nil, nil
}

func mediaKind(mime string) llm.BlockType {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return llm.BlockImage
	case strings.HasPrefix(mime, "audio/"):
		return llm.BlockAudio
	case strings.HasPrefix(mime, "video/"):
		return llm.BlockVideo
	}
	return llm.BlockFile
}

// geminiModelMessage reads a model turn. Function calls without an id get
// one from their position, so their responses pair with them. In the
// current turn of a Gemini 3 model, the first function call of each step
// must carry the signature the server gave it, as Gemini 3 insists.
func (g geminiAPI) geminiModelMessage(ps []*geminiPart, at string, turn int, checkSignatures bool) (llm.Message, []openCall, *apiError) {
	msg := llm.Message{Role: llm.RoleAssistant}
	var calls []openCall
	for j, p := range ps {
		pat := fmt.Sprintf("%s.parts[%d]", at, j)
		switch {
		case p.Text != nil:
			sig := ""
			if p.ThoughtSignature != "" {
				sig = "gemini:" + p.ThoughtSignature
			}
			switch {
			case p.Thought:
				msg.Content = append(msg.Content, llm.Block{Type: llm.BlockThinking, Thinking: *p.Text, Signature: sig})
			default:
				if sig != "" {
					msg.Content = append(msg.Content, llm.Block{Type: llm.BlockThinking, Signature: sig})
				}
				if *p.Text != "" {
					msg.Content = append(msg.Content, llm.TextBlock(*p.Text))
				}
			}
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			args := canonicalArgs(fc.Args)
			if len(calls) == 0 && checkSignatures && g.requiresSignatures() {
				switch p.ThoughtSignature {
				case "":
					return msg, nil, badRequest("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", fc.Name, j+1)
				case callSignature(fc.Name, args), "skip_thought_signature_validator", "context_engineering_is_the_way_to_go":
				default:
					return msg, nil, badRequest("* GenerateContentRequest.%s.thought_signature: Corrupted thought signature.", pat)
				}
			}
			id := fc.ID
			if id == "" {
				id = fmt.Sprintf("fc_%d_%d", turn, len(calls))
			}
			calls = append(calls, openCall{id: id, wireID: fc.ID, name: fc.Name})
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: fc.Name, Args: args})
		default:
			return msg, nil, badRequest("* GenerateContentRequest.%s: a model turn holds text and function calls only on the local server", pat)
		}
	}
	return msg, calls, nil
}

// requiresSignatures reports the models that reject unsigned function
// calls: Gemini 3 and later.
func (g geminiAPI) requiresSignatures() bool {
	m := strings.TrimPrefix(g.model, "models/")
	return strings.HasPrefix(m, "gemini-") && !strings.HasPrefix(m, "gemini-1") && !strings.HasPrefix(m, "gemini-2")
}

// geminiToolResults pairs function responses with the calls they answer:
// by id when both have one, otherwise in order.
func geminiToolResults(responses []*geminiPart, open []openCall, at string) ([]llm.Message, *apiError) {
	used := make([]bool, len(open))
	var out []llm.Message
	for _, p := range responses {
		fr := p.FunctionResponse
		k := -1
		for i, c := range open {
			if !used[i] && (fr.ID != "" && fr.ID == c.wireID || fr.ID == "" && c.wireID == "") {
				k = i
				break
			}
		}
		if k < 0 {
			return nil, badRequest("* GenerateContentRequest.%s: function response %s (id %q) answers no function call of the previous turn", at, fr.Name, fr.ID)
		}
		used[k] = true
		if fr.Name != open[k].name {
			return nil, badRequest("* GenerateContentRequest.%s: function response name %q does not match the function call %q", at, fr.Name, open[k].name)
		}
		msg := llm.Message{Role: llm.RoleTool, ToolCallID: open[k].id, Name: fr.Name}
		var resp map[string]json.RawMessage
		_ = json.Unmarshal(fr.Response, &resp)
		text := string(compactJSON(fr.Response))
		switch {
		case len(resp) == 1 && jsonKind(resp["output"]) == "string":
			text = jsonString(resp["output"])
		case len(resp) == 1 && jsonKind(resp["error"]) == "string":
			text, msg.IsError = jsonString(resp["error"]), true
		}
		if text != "" {
			msg.Content = []llm.Block{llm.TextBlock(text)}
		}
		out = append(out, msg)
	}
	return out, nil
}

// canonicalArgs is a call's arguments as compact JSON with sorted keys, the
// form the server signs.
func canonicalArgs(raw json.RawMessage) json.RawMessage {
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return json.RawMessage("{}")
	}
	return marshal(v)
}

// callSignature is the thought signature the server gives a function call:
// derived from the call, so the server can check it on a later request
// without keeping state.
func callSignature(name string, args json.RawMessage) string {
	sum := sha256.Sum256([]byte("llmserver-thought\x00" + name + "\x00" + string(args)))
	return base64.StdEncoding.EncodeToString(sum[:18])
}

// Response wire types, in the field order the API uses.

type geminiOutPart struct {
	Text             *string             `json:"text,omitempty"`
	Thought          bool                `json:"thought,omitempty"`
	FunctionCall     *geminiFunctionCall `json:"functionCall,omitempty"`
	ThoughtSignature string              `json:"thoughtSignature,omitempty"`
}

type geminiFunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiCandidate struct {
	Content struct {
		Parts []geminiOutPart `json:"parts"`
		Role  string          `json:"role"`
	} `json:"content"`
	FinishReason string `json:"finishReason,omitempty"`
	Index        int    `json:"index"`
}

type geminiTokenCount struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

type geminiUsage struct {
	PromptTokenCount        int                `json:"promptTokenCount"`
	CandidatesTokenCount    int                `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int                `json:"totalTokenCount"`
	CachedContentTokenCount int                `json:"cachedContentTokenCount,omitempty"`
	PromptTokensDetails     []geminiTokenCount `json:"promptTokensDetails"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata *geminiUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

func geminiFinishReason(r llm.StopReason) string {
	switch r {
	case llm.StopMaxTokens:
		return "MAX_TOKENS"
	case llm.StopContentFilter, llm.StopRefusal:
		return "SAFETY"
	}
	return "STOP"
}

func str(s string) *string { return &s }

// geminiParts lists the answer's parts in order: the message's blocks
// (a signature-only thinking block rides on the next text), then its calls,
// the first signed by the server. A signature written "gemini:<base64>"
// is sent as is; any other is base64-encoded.
func geminiParts(resp *llm.Response) []geminiOutPart {
	var out []geminiOutPart
	pending := ""
	for _, b := range resp.Message.Content {
		switch b.Type {
		case llm.BlockThinking:
			if strings.HasPrefix(b.Signature, "gemini-call:") {
				continue
			}
			sig := wireSignature(b.Signature)
			if b.Thinking == "" {
				pending = sig
				continue
			}
			out = append(out, geminiOutPart{Text: str(b.Thinking), Thought: true, ThoughtSignature: sig})
		case llm.BlockText:
			if b.Text != "" {
				out = append(out, geminiOutPart{Text: str(b.Text), ThoughtSignature: pending})
				pending = ""
			}
		}
	}
	for i, tc := range resp.Message.ToolCalls {
		args := canonicalArgs(tc.Args)
		p := geminiOutPart{FunctionCall: &geminiFunctionCall{Name: tc.Name, Args: args}}
		if i == 0 {
			p.ThoughtSignature = callSignature(tc.Name, args)
		}
		out = append(out, p)
	}
	return out
}

func wireSignature(sig string) string {
	if sig == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(sig, "gemini:"); ok {
		return rest
	}
	return base64.StdEncoding.EncodeToString([]byte(sig))
}

func (g geminiAPI) write(w *responseWriter, call ServedCall, _ any, resp *llm.Response, ids *idSource) error {
	prompt := resp.Usage.InputTokens + resp.Usage.CacheReadTokens + resp.Usage.CacheWriteTokens
	usage := &geminiUsage{
		PromptTokenCount:        prompt,
		CandidatesTokenCount:    resp.Usage.OutputTokens,
		TotalTokenCount:         prompt + resp.Usage.OutputTokens,
		CachedContentTokenCount: resp.Usage.CacheReadTokens,
		PromptTokensDetails:     []geminiTokenCount{{"TEXT", prompt}},
	}
	id := ids.id("", 22)
	model := strings.TrimPrefix(call.Model, "models/")
	finish := geminiFinishReason(resp.StopReason)
	chunk := func(parts []geminiOutPart, last bool) geminiResponse {
		c := geminiCandidate{}
		c.Content.Role = "model"
		c.Content.Parts = parts
		r := geminiResponse{ModelVersion: model, ResponseID: id}
		if last {
			c.FinishReason = finish
			r.UsageMetadata = usage
		}
		r.Candidates = []geminiCandidate{c}
		return r
	}
	parts := geminiParts(resp)
	if !call.Stream {
		if len(parts) == 0 {
			parts = []geminiOutPart{{Text: str("")}}
		}
		return w.json(marshal(chunk(parts, true)))
	}
	// Streams split text at spaces (a signature rides on the last piece)
	// and send each call whole, as Gemini does, then end with an empty
	// text part carrying the finish reason and the usage.
	var s sse
	for _, p := range parts {
		if p.Text == nil {
			s.add("", chunk([]geminiOutPart{p}, false))
			continue
		}
		words := pieces.Words(*p.Text)
		for k, piece := range words {
			q := geminiOutPart{Text: str(piece), Thought: p.Thought}
			if k == len(words)-1 {
				q.ThoughtSignature = p.ThoughtSignature
			}
			s.add("", chunk([]geminiOutPart{q}, false))
		}
	}
	s.add("", chunk([]geminiOutPart{{Text: str("")}}, true))
	if g.sse {
		return w.stream(&s)
	}
	// Without alt=sse the chunks arrive as one JSON array.
	body := []byte{'['}
	for i, e := range s.events {
		if i > 0 {
			body = append(body, ",\r\n"...)
		}
		body = append(body, e.data...)
	}
	body = append(body, ']')
	return w.json(body)
}
