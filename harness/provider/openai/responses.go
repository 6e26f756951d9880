package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// reasoningSig marks a thinking block holding a Responses API reasoning
// item: "openai-reasoning:" followed by {"id":..., "encrypted_content":...}.
const reasoningSig = "openai-reasoning:"

type reasoningState struct {
	ID               string `json:"id"`
	EncryptedContent string `json:"encrypted_content,omitempty"`
}

// responsesParams translates a request into Responses API parameters
// that send themselves spliced (see splicedResponses).
func (m *Model) responsesParams(req *llm.Request) (responses.ResponseNewParams, error) {
	p, err := m.responsesFields(req)
	if err != nil {
		return p, err
	}
	settings, keyed := provider.SettingsOf(req)
	return m.splicedResponses(p, settings, keyed), nil
}

// responsesFields translates a request into Responses API parameters.
// What it reads of req besides the system prompt, messages and tools must
// be in provider.Settings, which keys the shells of spliced requests.
func (m *Model) responsesFields(req *llm.Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{Model: shared.ResponsesModel(m.cfg.Model)}
	if sys := req.SystemText(); sys != "" {
		p.Instructions = param.NewOpt(sys)
	}
	var items responses.ResponseInputParam
	for i := range req.Messages {
		msg := &req.Messages[i]
		its, ok := m.responseItems.Message(msg)
		if !ok {
			if enc, size, fast := fastInputItems(msg); fast {
				m.responseItems.PutMessage(msg, enc, size)
				items = append(items, enc...)
				continue
			}
			var err error
			if its, err = inputItems(*msg, i); err != nil {
				return p, err
			}
			size := 0
			for k := range its {
				var n int
				its[k], n = preEncode(its[k])
				size += n
			}
			m.responseItems.PutMessage(msg, its, size)
		}
		items = append(items, its...)
	}
	p.Input.OfInputItemList = items
	for i := range req.Tools {
		t := &req.Tools[i]
		tp, ok := responseTools.Tool(t)
		if !ok {
			params, err := m.toolSchema(t.Parameters)
			if err != nil {
				return p, fmt.Errorf("openai: tool %s: %w", t.Name, err)
			}
			// Strict defaults to true in the Responses API, which would
			// reject ordinary schemas; tool arguments are validated by our
			// own tools.
			ft := &responses.FunctionToolParam{Name: t.Name, Parameters: params, Strict: param.NewOpt(false)}
			if t.Description != "" {
				ft.Description = param.NewOpt(t.Description)
			}
			var size int
			tp, size = preEncode(responses.ToolUnionParam{OfFunction: ft})
			responseTools.PutTool(t, tp, size)
		}
		p.Tools = append(p.Tools, tp)
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case llm.ToolChoiceAuto, "":
			p.ToolChoice.OfToolChoiceMode = param.NewOpt(responses.ToolChoiceOptionsAuto)
		case llm.ToolChoiceAny:
			p.ToolChoice.OfToolChoiceMode = param.NewOpt(responses.ToolChoiceOptionsRequired)
		case llm.ToolChoiceNone:
			p.ToolChoice.OfToolChoiceMode = param.NewOpt(responses.ToolChoiceOptionsNone)
		case llm.ToolChoiceTool:
			p.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: tc.Name}
		default:
			return p, fmt.Errorf("openai: unknown tool choice mode %q", tc.Mode)
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		schema, err := schemaMap(rf.Schema)
		if err != nil {
			return p, fmt.Errorf("openai: response format %s: %w", rf.Name, err)
		}
		js := &responses.ResponseFormatTextJSONSchemaConfigParam{Name: formatName(rf.Name), Schema: schema}
		js.Strict = param.NewOpt(rf.Strict && strictCompatible(schema))
		if rf.Description != "" {
			js.Description = param.NewOpt(rf.Description)
		}
		p.Text.Format.OfJSONSchema = js
	}
	if n := m.maxTokens(req); n > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(n))
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.TopP != nil {
		p.TopP = param.NewOpt(*req.TopP)
	}
	if req.Thinking != nil {
		p.Reasoning = shared.ReasoningParam{Effort: effort(req.Thinking.BudgetTokens), Summary: shared.ReasoningSummaryAuto}
	}
	// Seed and stop sequences do not exist in the Responses API.
	return p, nil
}

// inputItems converts one message into Responses input items.
func inputItems(msg llm.Message, i int) ([]responses.ResponseInputItemUnionParam, error) {
	switch msg.Role {
	case llm.RoleSystem:
		text := llm.ConcatText(msg.Content)
		if text == "" {
			return nil, nil
		}
		return []responses.ResponseInputItemUnionParam{easyMessage(responses.EasyInputMessageRoleSystem, text)}, nil
	case llm.RoleUser:
		var parts responses.ResponseInputMessageContentListParam
		onlyText := true
		for j, b := range msg.Content {
			switch b.Type {
			case llm.BlockText:
				if b.Text != "" {
					parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: b.Text}})
				}
			case llm.BlockImage:
				url := b.URL
				if b.Data != "" {
					url = "data:" + b.MediaType + ";base64," + b.Data
				}
				if url == "" {
					return nil, fmt.Errorf("openai: message %d block %d: image has neither data nor url", i, j)
				}
				parts = append(parts, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{ImageURL: param.NewOpt(url), Detail: responses.ResponseInputImageDetailAuto}})
				onlyText = false
			case llm.BlockFile:
				f := &responses.ResponseInputFileParam{}
				switch {
				case b.URL != "":
					f.FileURL = param.NewOpt(b.URL)
				case b.Data != "":
					f.FileData = param.NewOpt("data:" + b.MediaType + ";base64," + b.Data)
				default:
					return nil, fmt.Errorf("openai: message %d block %d: file has neither data nor url", i, j)
				}
				parts = append(parts, responses.ResponseInputContentUnionParam{OfInputFile: f})
				onlyText = false
			case llm.BlockThinking, llm.BlockRedactedThinking:
			default:
				return nil, fmt.Errorf("openai: message %d block %d: %s content is not supported", i, j, b.Type)
			}
		}
		if len(parts) == 0 {
			return nil, nil
		}
		if onlyText {
			return []responses.ResponseInputItemUnionParam{easyMessage(responses.EasyInputMessageRoleUser, msg.Text())}, nil
		}
		return []responses.ResponseInputItemUnionParam{{OfMessage: &responses.EasyInputMessageParam{
			Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: parts},
		}}}, nil
	case llm.RoleAssistant:
		var out []responses.ResponseInputItemUnionParam
		for _, b := range msg.Content {
			if b.Type != llm.BlockThinking {
				continue
			}
			raw, ok := strings.CutPrefix(b.Signature, reasoningSig)
			if !ok {
				continue // reasoning from another provider cannot be replayed here
			}
			var st reasoningState
			if json.Unmarshal([]byte(raw), &st) != nil || st.ID == "" {
				continue
			}
			r := &responses.ResponseReasoningItemParam{ID: st.ID, Summary: []responses.ResponseReasoningItemSummaryParam{}}
			if b.Thinking != "" {
				r.Summary = append(r.Summary, responses.ResponseReasoningItemSummaryParam{Text: b.Thinking})
			}
			if st.EncryptedContent != "" {
				r.EncryptedContent = param.NewOpt(st.EncryptedContent)
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: r})
		}
		if text := msg.Text(); text != "" {
			out = append(out, easyMessage(responses.EasyInputMessageRoleAssistant, text))
		}
		for _, tc := range msg.ToolCalls {
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: tc.ID, Name: tc.Name, Arguments: argsString(tc.Args)}})
		}
		for _, tc := range msg.InvalidToolCalls {
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: tc.ID, Name: tc.Name, Arguments: tc.Args}})
		}
		return out, nil
	case llm.RoleTool:
		return []responses.ResponseInputItemUnionParam{{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: param.NewOpt(msg.ToolCallID),
			Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(msg.Text())},
		}}}, nil
	}
	return nil, fmt.Errorf("openai: message %d has unknown role %q", i, msg.Role)
}

func easyMessage(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
		Role: role, Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(text)},
	}}
}

// fromResponse converts a finished Response, whole or from the stream's
// final event.
func (m *Model) fromResponse(r *responses.Response) (*llm.Response, error) {
	if r.Status == responses.ResponseStatusFailed {
		return nil, m.responseFailure(r)
	}
	out := llm.Message{Role: llm.RoleAssistant}
	refused := false
	for _, item := range r.Output {
		switch item.Type {
		case "reasoning":
			var summary []string
			for _, s := range item.Summary {
				summary = append(summary, s.Text)
			}
			st, _ := json.Marshal(reasoningState{ID: item.ID, EncryptedContent: item.EncryptedContent})
			out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Thinking: strings.Join(summary, "\n\n"), Signature: reasoningSig + string(st)})
		case "message":
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					if c.Text != "" {
						out.Content = append(out.Content, llm.TextBlock(c.Text))
					}
				case "refusal":
					refused = true
					out.Content = append(out.Content, llm.TextBlock(c.Refusal))
				}
			}
		case "function_call":
			args := strings.TrimSpace(item.Arguments.OfString)
			if args == "" {
				args = "{}"
			}
			var v any
			if err := json.Unmarshal([]byte(args), &v); err != nil {
				out.InvalidToolCalls = append(out.InvalidToolCalls, llm.InvalidToolCall{ID: item.CallID, Name: item.Name, Args: item.Arguments.OfString, Error: "arguments are not valid JSON: " + err.Error()})
				continue
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: item.CallID, Name: item.Name, Args: compact(args)})
		}
	}
	u := r.Usage
	cached := int(u.InputTokensDetails.CachedTokens)
	written := int(u.InputTokensDetails.CacheWriteTokens)
	usage := llm.Usage{
		InputTokens:      max(int(u.InputTokens)-cached-written, 0),
		OutputTokens:     int(u.OutputTokens),
		CacheReadTokens:  cached,
		CacheWriteTokens: written,
	}
	if !r.JSON.Usage.Valid() {
		usage = llm.UnknownUsage()
	}
	uc := usage
	out.Usage = &uc
	stop := llm.StopEndTurn
	switch {
	case refused:
		stop = llm.StopRefusal
	case r.Status == responses.ResponseStatusIncomplete && r.IncompleteDetails.Reason == "max_output_tokens":
		stop = llm.StopMaxTokens
	case r.Status == responses.ResponseStatusIncomplete && r.IncompleteDetails.Reason == "content_filter":
		stop = llm.StopContentFilter
	case len(out.ToolCalls)+len(out.InvalidToolCalls) > 0:
		stop = llm.StopToolUse
	}
	return &llm.Response{Message: out, StopReason: stop, Usage: usage, Model: string(r.Model)}, nil
}

// responseFailure classifies a response whose status is failed.
func (m *Model) responseFailure(r *responses.Response) error {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": string(r.Error.Code), "message": r.Error.Message}})
	return m.cfg.Classify(provider.Failure{StatusCode: 200, Body: body})
}
