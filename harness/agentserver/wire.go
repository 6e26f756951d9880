package agentserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// lcMessage is a message as LangGraph servers return it: LangChain's
// serialised form (type human, ai, tool or system).
type lcMessage struct {
	Type       string          `json:"type"`
	Content    any             `json:"content"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []lcToolCall    `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Status     string          `json:"status,omitempty"`
	Usage      *lcUsage        `json:"usage_metadata,omitempty"`
	Artifact   json.RawMessage `json:"artifact,omitempty"`
}

type lcToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id"`
	Type string          `json:"type"`
}

type lcUsage struct {
	Input  int `json:"input_tokens"`
	Output int `json:"output_tokens"`
	Total  int `json:"total_tokens"`
}

var lcTypes = map[llm.Role]string{llm.RoleUser: "human", llm.RoleAssistant: "ai", llm.RoleTool: "tool", llm.RoleSystem: "system"}

func toLC(m llm.Message) lcMessage {
	out := lcMessage{Type: lcTypes[m.Role], ID: m.ID, Name: m.Name, Content: lcContent(m.Content), Artifact: m.Artifact}
	for _, c := range m.ToolCalls {
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		out.ToolCalls = append(out.ToolCalls, lcToolCall{Name: c.Name, Args: args, ID: c.ID, Type: "tool_call"})
	}
	if m.Role == llm.RoleTool {
		out.ToolCallID, out.Status = m.ToolCallID, "success"
		if m.IsError {
			out.Status = "error"
		}
	}
	if m.Usage != nil {
		out.Usage = &lcUsage{Input: m.Usage.InputTokens, Output: m.Usage.OutputTokens, Total: m.Usage.InputTokens + m.Usage.OutputTokens}
	}
	return out
}

// lcContent is a string when the content is plain text, as LangChain
// writes it, and a list of blocks otherwise.
func lcContent(blocks []llm.Block) any {
	if len(blocks) == 0 {
		return ""
	}
	if len(blocks) == 1 && blocks[0].Type == llm.BlockText && blocks[0].CacheControl == nil {
		return blocks[0].Text
	}
	return blocks
}

func toLCs(msgs []llm.Message) []lcMessage {
	out := make([]lcMessage, len(msgs))
	for i, m := range msgs {
		out[i] = toLC(m)
	}
	return out
}

// inMessage is a message as clients send it: {role|type, content} with
// content a string or a list of blocks.
type inMessage struct {
	Role       string          `json:"role"`
	Type       string          `json:"type"`
	Content    json.RawMessage `json:"content"`
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
		ID   string          `json:"id"`
	} `json:"tool_calls"`
}

var roles = map[string]llm.Role{
	"user": llm.RoleUser, "human": llm.RoleUser, "assistant": llm.RoleAssistant, "ai": llm.RoleAssistant,
	"system": llm.RoleSystem, "tool": llm.RoleTool,
}

func fromIn(i int, in inMessage) (llm.Message, error) {
	kind := in.Role
	if kind == "" {
		kind = in.Type
	}
	role, ok := roles[kind]
	if !ok {
		return llm.Message{}, fmt.Errorf("input.messages[%d]: role %q is not one of user, assistant, system, tool (or human, ai)", i, kind)
	}
	m := llm.Message{Role: role, ID: in.ID, Name: in.Name, ToolCallID: in.ToolCallID}
	if len(in.Content) > 0 && string(in.Content) != "null" {
		var s string
		if err := json.Unmarshal(in.Content, &s); err == nil {
			m.Content = []llm.Block{llm.TextBlock(s)}
		} else if err := json.Unmarshal(in.Content, &m.Content); err != nil {
			return llm.Message{}, fmt.Errorf("input.messages[%d].content: a string or a list of content blocks: %v", i, err)
		}
	}
	for _, c := range in.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	if role == llm.RoleTool && m.ToolCallID == "" {
		return llm.Message{}, fmt.Errorf("input.messages[%d]: a tool message needs a tool_call_id", i)
	}
	return m, nil
}

// decodeInput turns a run's input into the agent's: messages, files (path
// → text or file data) and any other key as a state value.
func decodeInput(raw json.RawMessage) (agent.Input, error) {
	var in agent.Input
	if len(raw) == 0 || string(raw) == "null" {
		return in, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return in, fmt.Errorf("input: an object of state keys: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		v := keys[k]
		switch k {
		case "messages":
			var msgs []inMessage
			if err := json.Unmarshal(v, &msgs); err != nil {
				return in, fmt.Errorf("input.messages: a list of messages: %v", err)
			}
			for i, im := range msgs {
				m, err := fromIn(i, im)
				if err != nil {
					return in, err
				}
				in.Messages = append(in.Messages, m)
			}
		case "files":
			var files map[string]json.RawMessage
			if err := json.Unmarshal(v, &files); err != nil {
				return in, fmt.Errorf("input.files: an object of path → content: %v", err)
			}
			in.Files = map[string]agent.FileData{}
			for p, fv := range files {
				var s string
				if json.Unmarshal(fv, &s) == nil {
					in.Files[p] = agent.FileData{Content: s}
					continue
				}
				var fd agent.FileData
				if err := json.Unmarshal(fv, &fd); err != nil {
					return in, fmt.Errorf("input.files[%q]: a string or {content, encoding}: %v", p, err)
				}
				in.Files[p] = fd
			}
		default:
			if in.Values == nil {
				in.Values = map[string]json.RawMessage{}
			}
			in.Values[k] = v
		}
	}
	return in, nil
}

// interruptOut is one pending interrupt as LangGraph lists it.
type interruptOut struct {
	Value json.RawMessage `json:"value"`
	ID    string          `json:"id"`
}

func interruptsOut(ints []agent.PendingInterrupt) []interruptOut {
	out := make([]interruptOut, len(ints))
	for i, in := range ints {
		out[i] = interruptOut{Value: in.Value, ID: in.ID}
	}
	return out
}

// values renders a thread's state as LangGraph's values: messages, files,
// todos, the structured response and every public state key, plus
// __interrupt__ when the thread waits for an answer.
func values(st *agent.State, private map[string]bool, ints []agent.PendingInterrupt) map[string]any {
	out := map[string]any{"messages": []lcMessage{}}
	if st != nil {
		out["messages"] = toLCs(st.Messages)
		if len(st.Files) > 0 {
			out["files"] = st.Files
		}
		if len(st.Todos) > 0 {
			out["todos"] = st.Todos
		}
		if len(st.StructuredResponse) > 0 {
			out["structured_response"] = st.StructuredResponse
		}
		for k, v := range st.Values {
			if !private[k] {
				out[k] = v
			}
		}
	}
	if len(ints) > 0 {
		out["__interrupt__"] = interruptsOut(ints)
	}
	return out
}

// updateOut renders one state update for the updates stream mode.
func updateOut(u *agent.Update) map[string]any {
	out := map[string]any{}
	if u == nil {
		return out
	}
	if len(u.Messages) > 0 {
		out["messages"] = toLCs(u.Messages)
	}
	if len(u.Files) > 0 {
		out["files"] = u.Files
	}
	if u.Todos != nil {
		out["todos"] = u.Todos
	}
	if u.StructuredResponse != nil {
		out["structured_response"] = u.StructuredResponse
	}
	for k, v := range u.Values {
		out[k] = v
	}
	return out
}
