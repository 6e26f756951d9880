package middleware

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
)

// Preview shape of offloaded content.
const (
	previewHeadLines = 5
	previewTailLines = 5
	previewLineChars = 1000
)

// contentPreview shows the first and last lines of text, numbered, each
// clipped to previewLineChars characters.
func contentPreview(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = cutChars(l, previewLineChars)
	}
	if len(lines) <= previewHeadLines+previewTailLines {
		return renderRows(rowsOf(lines, 1))
	}
	n := len(lines)
	head := renderRows(rowsOf(lines[:previewHeadLines], 1))
	tail := renderRows(rowsOf(lines[n-previewTailLines:], n-previewTailLines+1))
	return fmt.Sprintf("%s\n... [%d lines truncated] ...\n%s", head, n-previewHeadLines-previewTailLines, tail)
}

func rowsOf(lines []string, start int) []row {
	rows := make([]row, len(lines))
	for i, l := range lines {
		rows[i] = row{line: start + i, text: l}
	}
	return rows
}

// writeArtifact writes text through the backend. base is the state the
// State backend should see; its writes come back as an update.
func (m *Filesystem) writeArtifact(ctx context.Context, base *agent.State, p, text string) (*agent.Update, error) {
	sctx, stage := backend.WithStateStage(ctx, base)
	if err := m.b.Write(sctx, p, text); err != nil {
		return nil, err
	}
	return stage.Update(), nil
}

// offloadToolResult replaces oversized tool messages of a response by a
// preview after saving their text under large_tool_results. Failures leave
// the message as it was.
func (m *Filesystem) offloadToolResult(ctx context.Context, req *agent.ToolRequest, resp *agent.ToolResponse) *agent.ToolResponse {
	base := agent.ToolState(ctx)
	if base == nil {
		base = req.State
	}
	var staged *agent.Update
	evict := func(msg llm.Message) (llm.Message, bool) {
		if msg.Role != llm.RoleTool {
			return msg, false
		}
		text := msg.Text()
		if len(text) <= m.evictChars {
			return msg, false
		}
		chars := utf8.RuneCountInString(text)
		if chars <= m.evictChars {
			return msg, false
		}
		p := m.artifactPath("large_tool_results/" + sanitizeToolCallID(msg.ToolCallID))
		view := base
		if staged != nil {
			view = viewWith(base, staged)
		}
		u, err := m.writeArtifact(ctx, view, p, text)
		if err != nil {
			return msg, false
		}
		staged = staged.Merge(u)
		c := msg.Clone()
		c.Content = []llm.Block{llm.TextBlock(toolResultTooLarge(msg.ToolCallID, p, chars, contentPreview(text)))}
		for _, b := range msg.Content {
			if b.Type != llm.BlockText {
				c.Content = append(c.Content, b)
			}
		}
		return c, true
	}
	out := *resp
	changed := false
	if nm, ok := evict(resp.Message); ok {
		out.Message, changed = nm, true
	}
	if resp.Update != nil && len(resp.Update.Messages) > 0 {
		u := *resp.Update
		u.Messages = make([]llm.Message, len(resp.Update.Messages))
		for i, msg := range resp.Update.Messages {
			nm, ok := evict(msg)
			u.Messages[i] = nm
			changed = changed || ok
		}
		out.Update = &u
	}
	if !changed {
		return resp
	}
	if staged != nil {
		out.Update = out.Update.Merge(staged)
	}
	return &out
}

// viewWith returns base with the files of u applied (for a second write in
// the same stage).
func viewWith(base *agent.State, u *agent.Update) *agent.State {
	c := base.Clone()
	if c.Files == nil {
		c.Files = map[string]agent.FileData{}
	}
	for p, fd := range u.Files {
		if fd == nil {
			delete(c.Files, p)
		} else {
			c.Files[p] = *fd
		}
	}
	return c
}

// offloadHumanMessage saves an oversized last user message to
// conversation_history and returns the state update that tags it, plus the
// request messages with every tagged user message replaced by a preview
// (nil when nothing changes).
func (m *Filesystem) offloadHumanMessage(ctx context.Context, req *agent.ModelRequest) (*agent.Update, []llm.Message) {
	if m.humanChars == 0 || len(req.Messages) == 0 {
		return nil, nil
	}
	msgs := req.Messages
	var update *agent.Update
	last := msgs[len(msgs)-1]
	if last.Role == llm.RoleUser && last.Metadata[llm.MetaEvictedTo] == "" {
		if text := last.Text(); len(text) > m.humanChars && utf8.RuneCountInString(text) > m.humanChars {
			name := sanitizeToolCallID(last.ID)
			if last.ID == "" {
				name = fmt.Sprintf("message-%d", len(msgs))
			}
			p := m.artifactPath("conversation_history/" + name + ".md")
			if u, err := m.writeArtifact(ctx, req.State, p, text); err == nil {
				tagged := last.Clone()
				if tagged.Metadata == nil {
					tagged.Metadata = map[string]string{}
				}
				tagged.Metadata[llm.MetaEvictedTo] = p
				update = u.Merge(&agent.Update{Messages: []llm.Message{tagged}})
				msgs = append(msgs[:len(msgs)-1:len(msgs)-1], tagged)
			}
		}
	}
	if update == nil && !m.anyOffloaded(ctx, req) {
		return nil, nil
	}
	var out []llm.Message
	for i, msg := range msgs {
		p := msg.Metadata[llm.MetaEvictedTo]
		if msg.Role != llm.RoleUser || p == "" {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		text := msg.Text()
		c := msg.Clone()
		c.Content = []llm.Block{llm.TextBlock(humanMessageTooLarge(p, utf8.RuneCountInString(text), contentPreview(text)))}
		for _, b := range msg.Content {
			if b.Type != llm.BlockText {
				c.Content = append(c.Content, b)
			}
		}
		out[i] = c
	}
	return update, out
}

// offloadScan remembers how much of a run's history anyOffloaded searched.
type offloadScan struct {
	mu      sync.Mutex
	hist    []llm.Message
	scanned int
	found   bool
}

type offloadScanKey struct{ m *Filesystem }

// anyOffloaded reports whether the request may hold a user message that
// was offloaded. The run's history only grows, so each model call searches
// only the messages that are new since the previous one.
func (m *Filesystem) anyOffloaded(ctx context.Context, req *agent.ModelRequest) bool {
	if req.State == nil || !sameMessages(req.Messages, req.State.Messages) {
		return true
	}
	sc := agent.RunMemo(ctx, offloadScanKey{m}, func() *offloadScan { return &offloadScan{} })
	sc.mu.Lock()
	defer sc.mu.Unlock()
	msgs := req.Messages
	if len(msgs) < len(sc.hist) || len(sc.hist) > 0 && unsafe.SliceData(msgs) != unsafe.SliceData(sc.hist) {
		sc.scanned, sc.found = 0, false
	}
	sc.hist = msgs
	for ; sc.scanned < len(msgs) && !sc.found; sc.scanned++ {
		msg := &msgs[sc.scanned]
		sc.found = msg.Role == llm.RoleUser && msg.Metadata[llm.MetaEvictedTo] != ""
	}
	return sc.found
}

// scrubMedia replaces media blocks the model does not accept with a note,
// in the request only.
func (m *Filesystem) scrubMedia(model llm.ChatModel, msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for i, msg := range msgs {
		if msg.Role != llm.RoleTool && msg.Role != llm.RoleUser {
			continue
		}
		var blocks []llm.Block
		for k, b := range msg.Content {
			switch b.Type {
			case llm.BlockImage, llm.BlockAudio, llm.BlockVideo, llm.BlockFile:
			default:
				continue
			}
			if b.Data == "" || m.opts.MediaSupport(model, b.Type, b.MediaType, msg.Role == llm.RoleTool) {
				continue
			}
			if blocks == nil {
				blocks = append([]llm.Block(nil), msg.Content...)
			}
			blocks[k] = llm.TextBlock(mediaNotAttached(msg.Metadata[MetaReadFilePath], string(b.Type), b.MediaType))
		}
		if blocks == nil {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		c := msg.Clone()
		c.Content = blocks
		out[i] = c
	}
	if out == nil {
		return msgs
	}
	return out
}
