package agent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dageval/dageval/harness/llm"
)

// structuredSource tags feedback messages the runtime adds for the provider strategy.
const structuredSource = "structured_output"

// structuredAnswer checks a fresh assistant message against the response
// format. With the tool strategy, a call to the format tool is answered here
// (valid → structured response; invalid → an error the model can fix). With
// the provider strategy, a final text answer is parsed and validated.
func (ex *exec) structuredAnswer(msg llm.Message) *Update {
	f := ex.a.format
	if f == nil {
		return nil // no format: nothing to answer, and no allocation per model call
	}
	u := &Update{}
	if f.Strategy == StrategyProvider {
		if len(msg.ToolCalls) > 0 {
			return u
		}
		text := bytes.TrimSpace([]byte(msg.Text()))
		if err := ex.a.schema.Validate(text); err != nil {
			u.Messages = append(u.Messages, llm.Message{
				Role:     llm.RoleUser,
				Content:  []llm.Block{llm.TextBlock(fmt.Sprintf("Your answer must be a single JSON value matching the %s schema, but it was not: %v. Answer again with only the JSON value.", f.Name, err))},
				Metadata: map[string]string{llm.MetaSource: structuredSource},
			})
			return u
		}
		u.StructuredResponse = compactJSON(text)
		return u
	}
	var formatCalls []llm.ToolCall
	for _, tc := range msg.ToolCalls {
		if tc.Name == f.Name {
			formatCalls = append(formatCalls, tc)
		}
	}
	if len(formatCalls) == 0 {
		return u
	}
	others := len(msg.ToolCalls) - len(formatCalls)
	for i, tc := range formatCalls {
		var text string
		isErr := true
		switch {
		case others > 0:
			text = fmt.Sprintf("Error: %s must be called alone, after your other tool calls have returned. Call it again once you have their results.", f.Name)
		case i > 0:
			text = fmt.Sprintf("Error: %s was called more than once; only the first call counts.", f.Name)
		default:
			if err := ex.a.schema.Validate(tc.Args); err != nil {
				text = fmt.Sprintf("Error: the arguments of %s do not match its schema: %v. Call %s again with corrected arguments.", f.Name, err, f.Name)
			} else {
				args := compactJSON(tc.Args)
				u.StructuredResponse = args
				text = "Returning structured response: " + string(args)
				isErr = false
			}
		}
		u.Messages = append(u.Messages, llm.ToolResult(tc.ID, f.Name, text, isErr))
	}
	return u
}

// structuredDone reports whether the last assistant turn produced a valid
// structured answer, which ends the run.
func (ex *exec) structuredDone() bool {
	f := ex.a.format
	if f == nil {
		return false
	}
	msgs := ex.st.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == llm.RoleAssistant {
			if f.Strategy == StrategyProvider {
				return len(m.ToolCalls) == 0 && i == len(msgs)-1 && ex.st.StructuredResponse != nil && ex.providerValid(m)
			}
			for _, tc := range m.ToolCalls {
				if tc.Name != f.Name {
					continue
				}
				for _, r := range msgs[i+1:] {
					if r.Role == llm.RoleTool && r.ToolCallID == tc.ID && !r.IsError {
						return true
					}
				}
			}
			return false
		}
	}
	return false
}

// structuredRetry reports whether the runtime just asked the model to fix a
// provider-strategy answer.
func (ex *exec) structuredRetry() bool {
	msgs := ex.st.Messages
	if len(msgs) == 0 {
		return false
	}
	last := msgs[len(msgs)-1]
	return last.Role == llm.RoleUser && last.Metadata[llm.MetaSource] == structuredSource
}

func (ex *exec) providerValid(m llm.Message) bool {
	return ex.a.schema.Validate(bytes.TrimSpace([]byte(m.Text()))) == nil
}

func compactJSON(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return buf.Bytes()
}
