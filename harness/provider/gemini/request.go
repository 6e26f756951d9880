package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"

	"google.golang.org/genai"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// Signature schemes for Gemini state kept in thinking blocks, shared with
// the OpenAI adapter's Gemini-compatible path so that a history moves
// between the two: "gemini:<signature>" belongs to the text (or thought)
// it precedes, "gemini-call:<call id>:<signature>" to a function call.
// Anthropic signatures never contain a colon, so each adapter knows its own.
const (
	messageSig = "gemini:"
	callSig    = "gemini-call:"
)

// syntheticIDPrefix marks tool-call ids the adapter made up for calls
// Gemini sent without one; they are never sent back as Gemini ids.
const syntheticIDPrefix = "gemini_"

// request translates a provider-neutral request into contents and a
// generation config.
func (m *Model) request(req *llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: new(false)}
	var system []*genai.Part
	for i, b := range req.System {
		if b.Type != llm.BlockText {
			return nil, nil, fmt.Errorf("gemini: system block %d has type %s; the system instruction takes text only", i, b.Type)
		}
	}
	if text := req.SystemText(); text != "" {
		system = append(system, &genai.Part{Text: text})
	}
	contents, leading, err := contentsOf(req.Messages)
	if err != nil {
		return nil, nil, err
	}
	system = append(system, leading...)
	if len(system) > 0 {
		cfg.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: system}
	}
	if len(req.Tools) > 0 {
		tool := &genai.Tool{}
		for _, t := range req.Tools {
			params, err := m.toolSchema(t.Parameters)
			if err != nil {
				return nil, nil, fmt.Errorf("gemini: tool %s: %w", t.Name, err)
			}
			fd := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if params != nil {
				fd.ParametersJsonSchema = params
			}
			tool.FunctionDeclarations = append(tool.FunctionDeclarations, fd)
		}
		cfg.Tools = []*genai.Tool{tool}
	}
	if tc := req.ToolChoice; tc != nil {
		fc := &genai.FunctionCallingConfig{}
		switch tc.Mode {
		case llm.ToolChoiceAuto, "":
			fc.Mode = genai.FunctionCallingConfigModeAuto
		case llm.ToolChoiceAny:
			fc.Mode = genai.FunctionCallingConfigModeAny
		case llm.ToolChoiceNone:
			fc.Mode = genai.FunctionCallingConfigModeNone
		case llm.ToolChoiceTool:
			fc.Mode, fc.AllowedFunctionNames = genai.FunctionCallingConfigModeAny, []string{tc.Name}
		default:
			return nil, nil, fmt.Errorf("gemini: unknown tool choice mode %q", tc.Mode)
		}
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: fc}
	}
	if rf := req.ResponseFormat; rf != nil {
		schema, err := schemaOf(rf.Schema)
		if err != nil {
			return nil, nil, fmt.Errorf("gemini: response format %s: %w", rf.Name, err)
		}
		cfg.ResponseMIMEType, cfg.ResponseJsonSchema = "application/json", schema
	}
	if n := req.MaxTokens; n > 0 {
		cfg.MaxOutputTokens = int32(min(n, math.MaxInt32))
	} else if n := m.cfg.MaxTokens; n > 0 {
		cfg.MaxOutputTokens = int32(min(n, math.MaxInt32))
	}
	if t := req.Temperature; t != nil {
		cfg.Temperature = new(float32(*t))
	}
	if p := req.TopP; p != nil {
		cfg.TopP = new(float32(*p))
	}
	if s := req.Seed; s != nil {
		cfg.Seed = new(int32(max(min(*s, math.MaxInt32), math.MinInt32)))
	}
	cfg.StopSequences = req.StopSequences
	if th := req.Thinking; th != nil {
		budget := int32(-1) // dynamic: the model decides
		if th.BudgetTokens > 0 {
			budget = int32(min(th.BudgetTokens, math.MaxInt32))
		}
		cfg.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: &budget}
	}
	if len(m.cfg.ExtraBody) > 0 {
		cfg.HTTPOptions = &genai.HTTPOptions{ExtraBody: maps.Clone(m.cfg.ExtraBody)}
	}
	return contents, cfg, nil
}

// contentsOf converts the conversation. Leading system messages join the
// system instruction; later ones become user turns, since contents have no
// system role. The results of one turn's tool calls go back together in a
// single user turn, as Gemini requires for parallel calls.
func contentsOf(in []llm.Message) ([]*genai.Content, []*genai.Part, error) {
	var out []*genai.Content
	var system []*genai.Part
	names := map[string]string{} // tool call id → function name
	leading := true
	for i, msg := range in {
		switch msg.Role {
		case llm.RoleSystem:
			text := llm.ConcatText(msg.Content)
			if text == "" {
				continue
			}
			if leading {
				system = append(system, &genai.Part{Text: text})
			} else {
				out = append(out, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: text}}})
			}
			continue
		case llm.RoleUser:
			parts, err := userParts(msg.Content, i)
			if err != nil {
				return nil, nil, err
			}
			if len(parts) > 0 {
				out = append(out, &genai.Content{Role: genai.RoleUser, Parts: parts})
			}
		case llm.RoleAssistant:
			parts := modelParts(msg)
			for _, tc := range msg.ToolCalls {
				names[tc.ID] = tc.Name
			}
			for _, tc := range msg.InvalidToolCalls {
				names[tc.ID] = tc.Name
			}
			if len(parts) > 0 {
				out = append(out, &genai.Content{Role: genai.RoleModel, Parts: parts})
			}
		case llm.RoleTool:
			p, err := functionResponse(msg, names, i)
			if err != nil {
				return nil, nil, err
			}
			if n := len(out); n > 0 && isFunctionResponses(out[n-1]) {
				out[n-1].Parts = append(out[n-1].Parts, p)
			} else {
				out = append(out, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{p}})
			}
		default:
			return nil, nil, fmt.Errorf("gemini: message %d has unknown role %q", i, msg.Role)
		}
		leading = false
	}
	return out, system, nil
}

func isFunctionResponses(c *genai.Content) bool {
	return c.Role == genai.RoleUser && len(c.Parts) > 0 && c.Parts[0].FunctionResponse != nil
}

func userParts(blocks []llm.Block, i int) ([]*genai.Part, error) {
	var parts []*genai.Part
	for j, b := range blocks {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				parts = append(parts, &genai.Part{Text: b.Text})
			}
		case llm.BlockImage, llm.BlockAudio, llm.BlockVideo, llm.BlockFile:
			p, err := mediaPart(b)
			if err != nil {
				return nil, fmt.Errorf("gemini: message %d block %d: %w", i, j, err)
			}
			parts = append(parts, p)
		case llm.BlockThinking, llm.BlockRedactedThinking:
		default:
			return nil, fmt.Errorf("gemini: message %d block %d: %s content is not supported", i, j, b.Type)
		}
	}
	return parts, nil
}

// mediaPart sends inline data as bytes and a URL as file data (a Files API
// URI, a Cloud Storage or a web URL).
func mediaPart(b llm.Block) (*genai.Part, error) {
	if b.Data != "" {
		data, err := base64.StdEncoding.DecodeString(b.Data)
		if err != nil {
			return nil, fmt.Errorf("%s data is not base64: %w", b.Type, err)
		}
		return &genai.Part{InlineData: &genai.Blob{MIMEType: b.MediaType, Data: data}}, nil
	}
	if b.URL != "" {
		return &genai.Part{FileData: &genai.FileData{FileURI: b.URL, MIMEType: b.MediaType}}, nil
	}
	return nil, fmt.Errorf("%s has neither data nor url", b.Type)
}

// modelParts converts an assistant message back into the parts Gemini
// sent, each with its thought signature: Gemini 3 rejects a function call
// without the signature it came with.
func modelParts(msg llm.Message) []*genai.Part {
	var parts []*genai.Part
	callSigs := map[string][]byte{}
	var pending []byte // a signature waiting for the text it belongs to
	for _, b := range msg.Content {
		switch b.Type {
		case llm.BlockThinking:
			if rest, ok := strings.CutPrefix(b.Signature, callSig); ok {
				if id, sig, ok := strings.Cut(rest, ":"); ok {
					callSigs[id] = decodeSignature(sig)
				}
				continue
			}
			sig, ours := strings.CutPrefix(b.Signature, messageSig)
			if !ours {
				continue // another provider's reasoning, or unsigned: not Gemini's to see
			}
			if b.Thinking != "" {
				parts = append(parts, &genai.Part{Text: b.Thinking, Thought: true, ThoughtSignature: decodeSignature(sig)})
				continue
			}
			pending = decodeSignature(sig)
		case llm.BlockText:
			if b.Text == "" {
				continue
			}
			parts = append(parts, &genai.Part{Text: b.Text, ThoughtSignature: pending})
			pending = nil
		}
	}
	// A signature that came on a part with no text has nothing to ride
	// on; Gemini validates only the signatures of function calls.
	for _, tc := range msg.ToolCalls {
		parts = append(parts, callPart(tc.ID, tc.Name, tc.Args, callSigs[tc.ID]))
	}
	for _, tc := range msg.InvalidToolCalls {
		parts = append(parts, callPart(tc.ID, tc.Name, json.RawMessage(tc.Args), callSigs[tc.ID]))
	}
	return parts
}

func callPart(id, name string, args json.RawMessage, sig []byte) *genai.Part {
	fc := &genai.FunctionCall{Name: name, Args: argsMap(args)}
	if !strings.HasPrefix(id, syntheticIDPrefix) {
		fc.ID = id
	}
	return &genai.Part{FunctionCall: fc, ThoughtSignature: sig}
}

// argsMap parses call arguments; arguments that are not a JSON object
// (an invalid call kept for the record) go back under "arguments".
func argsMap(args json.RawMessage) map[string]any {
	if len(bytes.TrimSpace(args)) == 0 {
		return map[string]any{}
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return map[string]any{"arguments": string(args)}
	}
	return m
}

// functionResponse answers a call: the tool's text under "output", or
// under "error" when the tool failed, the keys Gemini's documentation
// gives for function responses.
func functionResponse(msg llm.Message, names map[string]string, i int) (*genai.Part, error) {
	name := msg.Name
	if name == "" {
		name = names[msg.ToolCallID]
	}
	if name == "" {
		return nil, fmt.Errorf("gemini: message %d: tool result %q names no function, and no earlier call has that id", i, msg.ToolCallID)
	}
	fr := &genai.FunctionResponse{Name: name}
	if !strings.HasPrefix(msg.ToolCallID, syntheticIDPrefix) {
		fr.ID = msg.ToolCallID
	}
	key := "output"
	if msg.IsError {
		key = "error"
	}
	fr.Response = map[string]any{key: msg.Text()}
	for j, b := range msg.Content {
		switch b.Type {
		case llm.BlockText, llm.BlockThinking, llm.BlockRedactedThinking:
		case llm.BlockImage, llm.BlockAudio, llm.BlockVideo, llm.BlockFile:
			p, err := mediaPart(b)
			if err != nil {
				return nil, fmt.Errorf("gemini: message %d block %d: %w", i, j, err)
			}
			frp := &genai.FunctionResponsePart{}
			if p.InlineData != nil {
				frp.InlineData = &genai.FunctionResponseBlob{MIMEType: p.InlineData.MIMEType, Data: p.InlineData.Data}
			} else {
				frp.FileData = &genai.FunctionResponseFileData{FileURI: p.FileData.FileURI, MIMEType: p.FileData.MIMEType}
			}
			fr.Parts = append(fr.Parts, frp)
		default:
			return nil, fmt.Errorf("gemini: message %d block %d: %s content is not supported in tool results", i, j, b.Type)
		}
	}
	return &genai.Part{FunctionResponse: fr}, nil
}

// decodeSignature turns a stored signature back into the bytes Gemini
// sent; a signature that is not base64 (made by a test or another tool) is
// sent as its own bytes.
func decodeSignature(s string) []byte {
	if s == "" {
		return nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b
	}
	return []byte(s)
}

// toolSchema converts a tool's JSON Schema for parametersJsonSchema. Agents
// send the same tools on every turn, so each model keeps the conversions;
// the map is never modified, so calls share it. An empty schema declares
// a function without parameters.
func (m *Model) toolSchema(raw json.RawMessage) (map[string]any, error) {
	return provider.CachedSchema(&m.schemaMu, &m.schemas, raw, func() (map[string]any, error) {
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil, nil
		}
		return schemaOf(raw)
	})
}

// schemaOf parses a JSON Schema object, without the $schema and $id
// keywords, which describe the document rather than the value and which
// Gemini's schema subset does not take.
func schemaOf(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	if s == nil {
		return nil, fmt.Errorf("schema is not a JSON object")
	}
	delete(s, "$schema")
	delete(s, "$id")
	return s, nil
}
