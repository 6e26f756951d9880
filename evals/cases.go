package evals

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/internal/yamlx"
	"github.com/dageval/dageval/rubrics"
)

// include reads the file a file:// value names, relative to the suite.
func (p *parser) include(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New("file:// names no file")
	}
	full := p.resolve(filepath.FromSlash(path))
	data, err := os.ReadFile(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s%s: file %s does not exist (file:// paths are relative to the suite file)", rubrics.IncludePrefix, path, full)
		}
		return "", fmt.Errorf("%s%s: %v", rubrics.IncludePrefix, path, err)
	}
	return string(data), nil
}

// caseAgent lays a case's agent: over the suite's agent file.
func (p *parser) caseAgent(c *Case, raw node, at string) error {
	switch {
	case p.broken["agent"]:
		return nil
	case p.s.Agent.Factory != "":
		return p.errAt(at, "a case cannot override the agent of a factory (agent: {factory: %s}); the factory builds it in Go", p.s.Agent.Factory)
	case p.s.Agent.Spec == nil:
		return nil
	}
	if _, ok := raw.n.(ast.MapNode); !ok {
		return p.errAt(at, "want a mapping with the keys of an agent file (system_prompt, tools, memory, middleware, …), got %s", yamlx.Kind(raw.n))
	}
	af, err := p.s.Agent.Spec.Override(p.doc, at)
	if err != nil {
		return err
	}
	c.Agent = af
	return nil
}

// rawMessage is one message of a case's prior history.
type rawMessage struct {
	Role       string        `yaml:"role"`
	Content    node          `yaml:"content"`
	ToolCalls  []rawToolCall `yaml:"tool_calls"`
	ToolCallID string        `yaml:"tool_call_id"`
	Name       string        `yaml:"name"`
	IsError    bool          `yaml:"is_error"`
}

type rawToolCall struct {
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
	Args node   `yaml:"args"`
}

// history reads a case's messages: the conversation before its input.
func (p *parser) history(raw node, at string) ([]llm.Message, error) {
	switch raw.n.(type) {
	case nil, *ast.NullNode:
		return nil, nil
	case *ast.SequenceNode:
	default:
		return nil, p.errAt(at, "want a list of messages ({role, content}), got %s", yamlx.Kind(raw.n))
	}
	var raws []rawMessage
	if err := p.doc.DecodeNode(raw.n, &raws); err != nil {
		return nil, err
	}
	var out []llm.Message
	open := map[string]string{} // tool call id → tool name, until answered
	for i, rm := range raws {
		k := fmt.Sprintf("%s[%d]", at, i)
		text := ""
		switch n := rm.Content.n.(type) {
		case nil, *ast.NullNode:
		case *ast.StringNode:
			text = n.Value
		case *ast.LiteralNode:
			text = n.Value.Value
		default:
			return nil, p.errAt(k+".content", "want the message's text, got %s", yamlx.Kind(n))
		}
		if rest, ok := strings.CutPrefix(text, rubrics.IncludePrefix); ok {
			content, err := p.include(rest)
			if err != nil {
				return nil, p.errAt(k+".content", "%v", err)
			}
			text = content
		}
		switch rm.Role {
		case "user":
			if len(rm.ToolCalls) > 0 || rm.ToolCallID != "" {
				return nil, p.errAt(k, "a user message has no tool_calls or tool_call_id")
			}
			if strings.TrimSpace(text) == "" {
				return nil, p.errAt(k, "a user message needs content")
			}
			out = append(out, llm.User(text))
		case "assistant":
			if rm.ToolCallID != "" {
				return nil, p.errAt(k+".tool_call_id", "an assistant message has tool_calls, not a tool_call_id")
			}
			var calls []llm.ToolCall
			for j, tc := range rm.ToolCalls {
				ck := fmt.Sprintf("%s.tool_calls[%d]", k, j)
				if tc.ID == "" || tc.Name == "" {
					return nil, p.errAt(ck, "a tool call needs an id and a name")
				}
				if _, dup := open[tc.ID]; dup {
					return nil, p.errAt(ck+".id", "tool call id %q is used twice", tc.ID)
				}
				args := json.RawMessage("{}")
				if tc.Args.present() {
					if _, ok := tc.Args.n.(ast.MapNode); !ok {
						return nil, p.errAt(ck+".args", "want a mapping of argument names to values, got %s", yamlx.Kind(tc.Args.n))
					}
					a, err := nodeJSON(tc.Args.n)
					if err != nil {
						return nil, p.errAt(ck+".args", "%v", err)
					}
					args = a
				}
				open[tc.ID] = tc.Name
				calls = append(calls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Args: args})
			}
			if strings.TrimSpace(text) == "" && len(calls) == 0 {
				return nil, p.errAt(k, "an assistant message needs content or tool_calls")
			}
			out = append(out, llm.Assistant(text, calls...))
		case "tool":
			name, ok := open[rm.ToolCallID]
			switch {
			case rm.ToolCallID == "":
				return nil, p.errAt(k, "a tool message needs the tool_call_id of the call it answers")
			case !ok:
				return nil, p.errAt(k+".tool_call_id", "no earlier assistant message made a tool call %q that is still unanswered", rm.ToolCallID)
			}
			if rm.Name != "" && rm.Name != name {
				return nil, p.errAt(k+".name", "tool call %q is a call of %s, not %s", rm.ToolCallID, name, rm.Name)
			}
			delete(open, rm.ToolCallID)
			out = append(out, llm.ToolResult(rm.ToolCallID, name, text, rm.IsError))
		case "":
			return nil, p.errAt(k, "a message needs a role (user, assistant or tool)")
		default:
			return nil, p.errAt(k+".role", "unknown role %q (want user, assistant or tool)", rm.Role)
		}
	}
	if len(open) > 0 {
		return nil, p.errAt(at, "%d tool call(s) of the history have no tool message answering them", len(open))
	}
	if n := len(out); n > 0 && out[n-1].Role == llm.RoleUser {
		return nil, p.errAt(fmt.Sprintf("%s[%d]", at, n-1), "the history ends with a user message; put the case's own turn in input")
	}
	return out, nil
}
