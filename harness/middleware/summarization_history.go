package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"path"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
)

// SummarySource is the llm.MetaSource value of summary messages.
const SummarySource = "summarization"

// historyDir is where offloaded conversations go, under the artifacts root.
const historyDir = "conversation_history"

// summaryOutcome is one finished summarization, not yet applied.
type summaryOutcome struct {
	event  SummarizationEvent
	update *agent.Update
	// summarized counts the state messages this summary newly covers.
	summarized int
}

// summarize writes the summary of v.msgs[:cut], saves the messages it covers
// to the history file, and returns the event recording it. ctx is the run's
// context; sctx additionally stages State-backend writes. An error means no
// summary could be generated.
func (m *SummarizationMiddleware) summarize(ctx, sctx context.Context, model llm.ChatModel, s *agent.State, v *view, cut int, p policy) (*summaryOutcome, error) {
	if model == nil {
		return nil, errors.New("no model to write the summary with")
	}
	from := v.firstNew()
	fresh := v.msgs[from:cut]
	sid := m.sessionID(ctx, s, fresh)
	rewritten := make([]llm.Message, 0, cut)
	rewritten = append(rewritten, v.msgs[:from]...)
	rewritten = append(rewritten, m.offloadMedia(sctx, fresh)...)

	// The summariser and the history file show mostly the same messages
	// (the fresh ones), so they are rendered once for both.
	omitted := m.omittedFromSummary(rewritten, p)
	rendered := renderSuffixes(rewritten, min(omitted, from))
	text, err := m.generate(ctx, model, rendered.from(omitted), omitted, p)
	if err != nil {
		return nil, err
	}
	file, err := m.appendHistory(sctx, sid, rewritten[from:], rendered.from(from))
	if err != nil {
		m.log.Warn("SummarizationMiddleware: offloading conversation history to backend failed; the summary replaces the older messages without a saved copy",
			"path", file, "error", err)
		file = ""
	}
	stateLen := v.stateLen
	if s != nil {
		stateLen = len(s.Messages)
	}
	out := &summaryOutcome{
		event: SummarizationEvent{
			CutoffIndex:    v.newCutoff(cut),
			SummaryMessage: summaryMessage(text, file),
			FilePath:       file,
			StateLen:       stateLen,
		},
		summarized: len(fresh),
	}
	u := &agent.Update{}
	if err := u.SetValue(SummarizationEventKey, out.event); err != nil {
		return nil, err
	}
	if err := u.SetValue(SummarizationSessionKey, sid); err != nil {
		return nil, err
	}
	out.update = u
	return out, nil
}

// summaryMessage is what the model sees in place of the summarized messages.
func summaryMessage(summary, file string) llm.Message {
	var intro string
	if file != "" {
		intro = "You are in the middle of a conversation whose earlier part has been summarized to save context. " +
			"The complete earlier messages are saved at " + file + "; read that file with read_file if you need details the summary leaves out."
	} else {
		intro = "You are in the middle of a conversation whose earlier part has been summarized to save context. " +
			"The earlier messages could not be saved to a file, so this summary is all that remains of them."
	}
	msg := llm.User(intro + "\n\n<summary>\n" + summary + "\n</summary>")
	msg.Metadata = map[string]string{llm.MetaSource: SummarySource}
	return msg
}

func isSummary(msg *llm.Message) bool { return msg.Metadata[llm.MetaSource] == SummarySource }

// omittedFromSummary is how many of msgs, oldest first, the summariser is
// not shown because they do not fit the trim budget.
func (m *SummarizationMiddleware) omittedFromSummary(msgs []llm.Message, p policy) int {
	budget := m.opts.TrimTokensToSummarize
	if budget == 0 && p.known {
		budget = p.fractionTokens(summaryTrimFraction)
	}
	omitted := 0
	if budget > 0 {
		omitted = m.suffixWithin(msgs, budget, nil)
		if omitted >= len(msgs) {
			omitted = len(msgs) - 1
		}
	}
	return omitted
}

// generate asks the summariser for a summary of the rendered messages, the
// first omitted of which are left out.
func (m *SummarizationMiddleware) generate(ctx context.Context, model llm.ChatModel, rendered string, omitted int, p policy) (string, error) {
	if omitted > 0 {
		rendered = fmt.Sprintf("(%d earlier messages are omitted here because they do not fit; they are in the saved history.)\n%s", omitted, rendered)
	}
	prompt := strings.Replace(m.opts.SummaryPrompt, "{messages}", rendered, 1)
	resp, err := model.Generate(ctx, &llm.Request{Messages: []llm.Message{llm.User(prompt)}})
	if err != nil {
		return "", err
	}
	if resp == nil {
		return "", errors.New("the summary model returned no response")
	}
	text := strings.TrimSpace(resp.Message.Text())
	if text == "" {
		return "", errors.New("the summary model returned an empty summary")
	}
	return text, nil
}

// suffixWithin returns the smallest i such that msgs[i:] fits budget tokens
// (len(msgs) when even the last message alone does not). suffix, when set,
// counts msgs[i:].
func (m *SummarizationMiddleware) suffixWithin(msgs []llm.Message, budget int, suffix func(i int) int) int {
	if suffix == nil {
		suffix = func(i int) int { return m.count(nil, msgs[i:], nil) }
	}
	lo, hi := 0, len(msgs)
	for lo < hi {
		mid := (lo + hi) / 2
		if suffix(mid) <= budget {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// historyPath is the history file of a session.
func (m *SummarizationMiddleware) historyPath(sid string) string {
	return path.Join(backend.ArtifactsRoot(m.backend), historyDir, sid+".md")
}

// appendHistory appends msgs as a new section of the session's history file
// and returns its path; rendered is renderMessages(msgs). The file grows
// with the run, so the section is appended (backend.AppendFile) rather
// than the file read and rewritten whole by each summarization.
func (m *SummarizationMiddleware) appendHistory(ctx context.Context, sid string, msgs []llm.Message, rendered string) (string, error) {
	file := m.historyPath(sid)
	for i := range msgs {
		if isSummary(&msgs[i]) {
			// Earlier summaries are not history: render the rest alone.
			kept := make([]llm.Message, 0, len(msgs))
			for j := range msgs {
				if !isSummary(&msgs[j]) {
					kept = append(kept, msgs[j])
				}
			}
			rendered = renderMessages(kept)
			break
		}
	}
	section := "## Summarized at " + backend.FormatTime(agent.Now(ctx)) + "\n\n" + rendered + "\n\n"
	return file, backend.AppendFile(ctx, m.backend, file, section)
}

// renderedSuffixes is renderMessages(msgs[lo:]) with where each message
// starts, so that renderMessages(msgs[i:]) for any i >= lo is a substring.
type renderedSuffixes struct {
	text  string
	lo    int
	start []int // start[i-lo] is where msgs[i] starts; start[len(msgs)-lo] = len(text)
}

func renderSuffixes(msgs []llm.Message, lo int) renderedSuffixes {
	lo = max(lo, 0)
	r := renderedSuffixes{lo: lo, start: make([]int, 0, len(msgs)-lo+1)}
	var b strings.Builder
	for i := lo; i < len(msgs); i++ {
		if i > lo {
			b.WriteByte('\n')
		}
		r.start = append(r.start, b.Len())
		renderHistoryMessage(&b, &msgs[i])
	}
	r.text = b.String()
	r.start = append(r.start, len(r.text))
	return r
}

// from returns renderMessages(msgs[i:]).
func (r renderedSuffixes) from(i int) string {
	return r.text[r.start[max(i, 0)-r.lo]:]
}

// renderMessages writes messages as tagged text, for the history file and
// the summariser. It is meant to be read, not parsed: attribute values are
// escaped, message text is not.
func renderMessages(msgs []llm.Message) string {
	var b strings.Builder
	for i := range msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		renderHistoryMessage(&b, &msgs[i])
	}
	return b.String()
}

func renderHistoryMessage(b *strings.Builder, msg *llm.Message) {
	b.WriteString(`<message role="` + string(msg.Role) + `"`)
	attr := func(k, v string) {
		if v != "" {
			b.WriteString(" " + k + `="` + html.EscapeString(v) + `"`)
		}
	}
	attr("id", msg.ID)
	attr("name", msg.Name)
	attr("tool_call_id", msg.ToolCallID)
	if msg.IsError {
		attr("status", "error")
	}
	b.WriteString(">\n")
	for _, blk := range msg.Content {
		switch blk.Type {
		case llm.BlockText:
			b.WriteString(blk.Text)
		case llm.BlockThinking:
			b.WriteString("<thinking>" + blk.Thinking + "</thinking>")
		case llm.BlockRedactedThinking:
			continue
		default:
			b.WriteString(mediaTag(blk))
		}
		b.WriteByte('\n')
	}
	for _, tc := range msg.ToolCalls {
		b.WriteString(`<tool_call id="` + html.EscapeString(tc.ID) + `" name="` + html.EscapeString(tc.Name) + `">` + string(tc.Args) + "</tool_call>\n")
	}
	for _, tc := range msg.InvalidToolCalls {
		b.WriteString(`<invalid_tool_call id="` + html.EscapeString(tc.ID) + `" name="` + html.EscapeString(tc.Name) + `">` + tc.Args + "</invalid_tool_call>\n")
	}
	b.WriteString("</message>")
}

func mediaTag(blk llm.Block) string {
	switch {
	case blk.URL != "":
		return "<" + string(blk.Type) + ` url="` + html.EscapeString(blk.URL) + `" />`
	case blk.MediaType != "":
		return "<" + string(blk.Type) + ` media_type="` + html.EscapeString(blk.MediaType) + `" />`
	}
	return "<" + string(blk.Type) + " />"
}

// sessionCounter tells apart conversations that would get the same session
// id: identical histories summarized by the same middleware.
type sessionCounter struct {
	mu   sync.Mutex
	seen map[[16]byte]int
}

// maxSessionDigests bounds the counter's memory; past it the counter starts
// over, after which a repeated identical conversation may share a file.
const maxSessionDigests = 1 << 16

func (c *sessionCounter) next(key [16]byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil || len(c.seen) >= maxSessionDigests {
		c.seen = map[[16]byte]int{}
	}
	n := c.seen[key]
	c.seen[key] = n + 1
	return n
}

// sessionID returns the persisted session id, or derives a new one from the
// agent path and the first messages being summarized. It is never the
// thread id, so history files cannot collide across agents sharing a thread
// (a parent and its subagents) or reveal the thread; it is derived rather
// than random so that replayed runs write the same files.
func (m *SummarizationMiddleware) sessionID(ctx context.Context, s *agent.State, fresh []llm.Message) string {
	if sid, ok := agent.Value[string](s, SummarizationSessionKey); ok && sid != "" {
		return sid
	}
	h := sha256.New()
	h.Write([]byte(agent.AgentPath(ctx)))
	h.Write([]byte{0})
	for i := range fresh {
		raw, _ := json.Marshal(&fresh[i])
		h.Write(raw)
		h.Write([]byte{0})
	}
	var key [16]byte
	copy(key[:], h.Sum(nil))
	if n := m.sessions.next(key); n > 0 {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
		copy(key[:], h.Sum(nil))
	}
	return "session_" + hex.EncodeToString(key[:])
}

// mediaExt names offloaded media files. A fixed table, not the system's
// MIME database, so file names do not depend on the machine.
var mediaExt = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
	"audio/mpeg": ".mp3", "audio/wav": ".wav", "audio/ogg": ".ogg",
	"video/mp4": ".mp4", "video/webm": ".webm", "application/pdf": ".pdf", "text/plain": ".txt",
}

// offloadMedia returns msgs with inline media (base64 data or data: URLs)
// saved to <root>/conversation_history/media/<sha256[:16]><ext> and replaced
// by references, so that neither the history file nor the summariser
// receives the raw bytes. Messages without inline media are returned as is.
func (m *SummarizationMiddleware) offloadMedia(ctx context.Context, msgs []llm.Message) []llm.Message {
	var out []llm.Message
	saved := map[string]error{}
	failures := 0
	for i := range msgs {
		if !hasInlineMedia(&msgs[i]) {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		msg := msgs[i].Clone()
		for k, blk := range msg.Content {
			mt, data, ok := inlineMedia(blk)
			if !ok {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(data)
			var file string
			if err == nil {
				sum := sha256.Sum256(raw)
				ext, known := mediaExt[mt]
				if !known {
					ext = ".bin"
				}
				file = path.Join(backend.ArtifactsRoot(m.backend), historyDir, "media", hex.EncodeToString(sum[:8])+ext)
				serr, done := saved[file]
				if !done {
					res := m.backend.Upload(ctx, []backend.UploadFile{{Path: file, Content: raw}})
					if len(res) != 1 {
						serr = fmt.Errorf("upload of %s returned %d results", file, len(res))
					} else {
						serr = res[0].Err
					}
					saved[file] = serr
				}
				err = serr
			}
			if err != nil {
				failures++
				m.log.Warn("SummarizationMiddleware: could not offload inline media before summarizing", "message", msg.ID, "path", file, "error", err)
				msg.Content[k] = llm.TextBlock("<" + string(blk.Type) + ` error="failed_to_offload" />`)
				continue
			}
			switch blk.Type {
			case llm.BlockImage, llm.BlockAudio, llm.BlockVideo:
				msg.Content[k] = llm.Block{Type: blk.Type, URL: file, MediaType: mt}
			default:
				msg.Content[k] = llm.TextBlock(`<file url="` + file + `" />`)
			}
		}
		out[i] = msg
	}
	if out == nil {
		return msgs
	}
	return out
}

func hasInlineMedia(msg *llm.Message) bool {
	for _, blk := range msg.Content {
		if _, _, ok := inlineMedia(blk); ok {
			return true
		}
	}
	return false
}

// inlineMedia returns the MIME type and base64 payload of a media block that
// carries its bytes inline.
func inlineMedia(blk llm.Block) (mediaType, data string, ok bool) {
	switch blk.Type {
	case llm.BlockImage, llm.BlockAudio, llm.BlockVideo, llm.BlockFile:
	default:
		return "", "", false
	}
	if blk.Data != "" {
		return blk.MediaType, blk.Data, true
	}
	if rest, found := strings.CutPrefix(blk.URL, "data:"); found {
		meta, payload, found := strings.Cut(rest, ",")
		if found && strings.HasSuffix(meta, ";base64") {
			return strings.TrimSuffix(meta, ";base64"), payload, true
		}
	}
	return "", "", false
}
