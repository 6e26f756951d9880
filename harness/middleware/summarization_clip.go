package middleware

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
)

// Constants of the overflow tail clip.
const (
	// clipThresholdTokens is the size of the trailing tool results above
	// which they are clipped after an overflow, unless the keep policy
	// gives a token budget.
	clipThresholdTokens = 5000
	// clipReadChars of a read_file result survive the clip.
	clipReadChars = 4000
	// largeResultsDir holds evicted tool results, under the artifacts root.
	largeResultsDir = "large_tool_results"
)

// isContextOverflow reports whether err says the prompt did not fit the
// model's context window: a classified provider error (llm.ErrContextOverflow),
// or any error in the chain that declares it with ContextOverflow() bool.
func isContextOverflow(err error) bool {
	if llm.IsContextOverflow(err) {
		return true
	}
	var co interface{ ContextOverflow() bool }
	return errors.As(err, &co) && co.ContextOverflow()
}

// clipTail shrinks the tool results that end the preserved messages
// msgs[cut:] after a context overflow, when together they are at least the
// clip threshold: a long read_file result keeps its first characters and a
// pointer back to the file; any other long result is saved to
// <root>/large_tool_results/<call id> and replaced by a preview. It returns
// the preserved messages and the replaced ones, which keep their ids so the
// state's copies are replaced too.
func (m *SummarizationMiddleware) clipTail(ctx context.Context, msgs []llm.Message, cut int, p policy) (preserved, replaced []llm.Message) {
	tail := msgs[cut:]
	start := len(tail)
	for start > 0 && tail[start-1].Role == llm.RoleTool {
		start--
	}
	if start == len(tail) {
		return tail, nil
	}
	threshold := clipThresholdTokens
	switch {
	case p.keep.Tokens > 0:
		threshold = p.keep.Tokens
	case p.keep.Fraction > 0 && p.known:
		threshold = p.fractionTokens(p.keep.Fraction)
	}
	if m.count(nil, tail[start:], nil) < threshold {
		return tail, nil
	}
	out := append([]llm.Message(nil), tail...)
	for i := start; i < len(out); i++ {
		msg := out[i]
		text := msg.Text()
		if utf8.RuneCountInString(text) <= clipReadChars {
			continue
		}
		var (
			repl llm.Message
			ok   bool
		)
		if msg.Name == "read_file" {
			if file := issuingArg(msgs[:cut+i], msg.ToolCallID, "file_path"); file != "" {
				repl, ok = clipRead(msg, text, file), true
			}
		}
		if !ok {
			repl, ok = m.evict(ctx, msg, text)
		}
		if ok {
			out[i] = repl
			replaced = append(replaced, repl)
		}
	}
	return out, replaced
}

// issuingArg returns an argument of the tool call with the given id, looked
// up in the assistant messages of msgs.
func issuingArg(msgs []llm.Message, callID, arg string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != llm.RoleAssistant {
			continue
		}
		for _, tc := range msgs[i].ToolCalls {
			if tc.ID == callID {
				return toolArg(tc, arg)
			}
		}
	}
	return ""
}

// clipRead keeps the head of a read_file result; the file itself is the full copy.
func clipRead(msg llm.Message, text, file string) llm.Message {
	c := msg.Clone()
	body := cutChars(text, clipReadChars) + fmt.Sprintf(
		"\n\n[Only the first %d characters of this read_file result are kept, to fit the context window. "+
			"The full content is still in %s; read it with read_file, using offset and limit for the part you need.]", clipReadChars, file)
	c.Content = replaceText(msg.Content, body)
	return c
}

// evict saves a tool result's text to the backend and replaces it by a
// preview; it reports false (keep the original) when the write fails.
func (m *SummarizationMiddleware) evict(ctx context.Context, msg llm.Message, text string) (llm.Message, bool) {
	file := path.Join(backend.ArtifactsRoot(m.backend), largeResultsDir, sanitizeID(msg.ToolCallID))
	if err := m.backend.Write(ctx, file, text); err != nil {
		m.log.Warn("SummarizationMiddleware: could not save a large tool result; keeping it in context", "path", file, "error", err)
		return msg, false
	}
	c := msg.Clone()
	c.Content = replaceText(msg.Content, fmt.Sprintf(
		"The result of tool call %s was too large to keep in context, so it was saved to %s. "+
			"Read it with read_file, using offset and limit to page through it. Its first and last lines:\n\n%s",
		msg.ToolCallID, file, contentPreview(text)))
	return c, true
}

// replaceText returns blocks with every text block replaced by one text
// block holding text; other blocks (images) are kept after it.
func replaceText(blocks []llm.Block, text string) []llm.Block {
	out := []llm.Block{llm.TextBlock(text)}
	for _, b := range blocks {
		if b.Type != llm.BlockText {
			out = append(out, b)
		}
	}
	return out
}

// sanitizeID makes a tool call id safe as a file name (no dots, so never "..").
func sanitizeID(id string) string {
	if id == "" {
		return "unknown"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
}
