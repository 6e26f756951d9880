// Package cassettediff tells what changed between two cassettes in model terms: the system prompt, tools, messages, tool calls and answers of each interaction.
package cassettediff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/replay"
	"github.com/dageval/dageval/harness/llm"
)

// Side is one of the two cassettes compared: the name it is shown by and
// its bytes; nil Data means the cassette does not exist on that side (it
// was added or deleted), so every interaction of the other side counts.
type Side struct {
	Name string
	Data []byte
}

// Sections of an interaction, in the order they are shown.
const (
	SectionRequest  = "request"       // model, max tokens, temperature, tool choice, response format
	SectionSystem   = "system prompt" // the system blocks, with their cache-control markers
	SectionTools    = "tools"         // name, description and schema of each tool
	SectionMessages = "messages"      // the conversation sent: text, tool calls, tool results
	SectionAnswer   = "answer"        // what the model answered: text, tool calls, stop reason, usage
)

var sectionOrder = []string{SectionRequest, SectionSystem, SectionTools, SectionMessages, SectionAnswer}

// Report is what changed between two cassettes.
type Report struct {
	Old      string `json:"old"`
	New      string `json:"new"`
	OldCount int    `json:"old_interactions"`
	NewCount int    `json:"new_interactions"`
	// Same counts the interactions identical in model terms (they may
	// still differ in bytes: ids, headers, layout).
	Same int `json:"same"`
	// Interactions lists the interactions that changed, were added or were
	// removed, in the new cassette's order (removed ones where they were).
	Interactions []Interaction `json:"interactions"`
}

// Changed reports whether the cassettes differ in model terms.
func (r *Report) Changed() bool { return len(r.Interactions) > 0 }

// Interaction is one interaction that differs.
type Interaction struct {
	// Index and OldIndex are 1-based positions in the new and the old
	// cassette (0 on the side that lacks it).
	Index    int    `json:"index"`
	OldIndex int    `json:"old_index"`
	Change   string `json:"change"` // changed, added or removed
	Method   string `json:"method"`
	Path     string `json:"path"`
	// Lane is the lane the interaction was recorded in (the agent, a
	// subagent, the grader), when the recorder noted one.
	Lane     string    `json:"lane,omitempty"`
	Sections []Section `json:"sections"`
}

// Section is one part of an interaction that differs.
type Section struct {
	Name string `json:"name"`
	// Summary says briefly what changed, e.g. "+search_docs ~get_weather"
	// for tools, "2 messages → 4" for messages.
	Summary string `json:"summary,omitempty"`
	// SameAs is the Index of an earlier interaction with this very change
	// (0 when there is none); Diff is then left out, since requests repeat
	// the system prompt and the tools on every call.
	SameAs int `json:"same_as,omitempty"`
	// Diff is a unified diff of the section's rendering (for an added or
	// removed interaction, every line with + or -).
	Diff string `json:"diff,omitempty"`
}

// view is an interaction rendered section by section.
type view struct {
	index        int
	method, path string
	lane         string
	sections     map[string]string
	tools        map[string]string // tool name → its rendering, for the summary
	messages     int
}

// Compare reads both cassettes and reports their differences in model
// terms. Requests are read as the local provider server reads them and
// answers as a replayed run reads them, so two cassettes that differ only
// in ids, headers or layout compare equal.
func Compare(ctx context.Context, old, new Side) (*Report, error) {
	ov, err := views(ctx, old)
	if err != nil {
		return nil, err
	}
	nv, err := views(ctx, new)
	if err != nil {
		return nil, err
	}
	r := &Report{Old: old.Name, New: new.Name, OldCount: len(ov), NewCount: len(nv), Interactions: []Interaction{}}
	shown := map[[3]string]int{} // section, old text, new text → the interaction that showed it
	for _, p := range pair(ov, nv) {
		switch {
		case p.old == nil:
			r.Interactions = append(r.Interactions, whole(p.new, "added", "+", shown))
		case p.new == nil:
			r.Interactions = append(r.Interactions, whole(p.old, "removed", "-", shown))
		default:
			in := Interaction{Index: p.new.index, OldIndex: p.old.index, Change: "changed", Method: p.new.method, Path: p.new.path, Lane: p.new.lane}
			for _, name := range sectionOrder {
				a, b := p.old.sections[name], p.new.sections[name]
				if a == b {
					continue
				}
				s := Section{Name: name, Summary: summary(name, p.old, p.new)}
				key := [3]string{name, a, b}
				if first, ok := shown[key]; ok {
					s.SameAs = first
				} else {
					shown[key] = in.Index
					s.Diff = unified(a, b)
				}
				in.Sections = append(in.Sections, s)
			}
			if len(in.Sections) == 0 {
				r.Same++
				continue
			}
			r.Interactions = append(r.Interactions, in)
		}
	}
	return r, nil
}

// whole describes an interaction only one side has: every section, each
// line marked, except sections that repeat an earlier interaction's.
func whole(v *view, change, mark string, shown map[[3]string]int) Interaction {
	in := Interaction{Change: change, Method: v.method, Path: v.path, Lane: v.lane}
	if change == "added" {
		in.Index = v.index
	} else {
		in.OldIndex = v.index
	}
	for _, name := range sectionOrder {
		text := v.sections[name]
		if text == "" {
			continue
		}
		s := Section{Name: name}
		key := [3]string{name, mark, text}
		if first, ok := shown[key]; ok && name != SectionAnswer {
			s.SameAs = first
		} else {
			shown[key] = max(in.Index, in.OldIndex)
			s.Diff = marked(text, mark)
		}
		in.Sections = append(in.Sections, s)
	}
	return in
}

type pairing struct{ old, new *view }

// pair matches interactions lane by lane, in recorded order: the n-th call
// of the agent's lane with the n-th of the other side's.
func pair(old, new []*view) []pairing {
	byLane := func(vs []*view) map[string][]*view {
		m := map[string][]*view{}
		for _, v := range vs {
			m[v.lane] = append(m[v.lane], v)
		}
		return m
	}
	ol, nl := byLane(old), byLane(new)
	var out []pairing
	used := map[*view]bool{}
	for _, v := range new {
		lane := nl[v.lane]
		i := slices.Index(lane, v)
		p := pairing{new: v}
		if i < len(ol[v.lane]) {
			p.old = ol[v.lane][i]
			used[p.old] = true
		}
		out = append(out, p)
	}
	// Removed interactions go after the last kept one before them.
	for _, v := range old {
		if used[v] {
			continue
		}
		at := len(out)
		for j, p := range out {
			if p.old != nil && p.old.index > v.index {
				at = j
				break
			}
		}
		out = slices.Insert(out, at, pairing{old: v})
	}
	return out
}

// views reads a cassette and renders each interaction.
func views(ctx context.Context, s Side) ([]*view, error) {
	if s.Data == nil {
		return nil, nil
	}
	c, err := cassette.Parse(s.Name, s.Data)
	if err != nil {
		return nil, err
	}
	out := make([]*view, len(c.Interactions))
	for i, it := range c.Interactions {
		out[i] = render(ctx, i+1, it)
	}
	normalizeLanes(out)
	return out, nil
}

// normalizeLanes replaces the tool call ids in lane names
// ("assistant/task:researcher#call_tOCo…") by their order of appearance
// ("assistant/task:researcher#1"): ids change with every recording, and
// the lanes of two recordings pair by what the agent did.
func normalizeLanes(vs []*view) {
	seen := map[string]string{} // lane prefix as recorded → normalized
	count := map[string]int{}   // normalized prefix and subagent → calls so far
	for _, v := range vs {
		orig, norm := "", ""
		for i, seg := range strings.Split(v.lane, "/") {
			if i > 0 {
				orig += "/"
			}
			orig += seg
			if n, ok := seen[orig]; ok {
				norm = n
				continue
			}
			if base, _, hasID := strings.Cut(seg, "#"); hasID {
				k := norm + "/" + base
				count[k]++
				seg = fmt.Sprintf("%s#%d", base, count[k])
			}
			if i > 0 {
				norm += "/"
			}
			norm += seg
			seen[orig] = norm
		}
		v.lane = norm
	}
}

// render renders one interaction in model terms.
func render(ctx context.Context, index int, it *vcr.Interaction) *view {
	v := &view{index: index, method: it.Request.Method, lane: it.Request.Headers.Get(cassette.LaneHeader), sections: map[string]string{}, tools: map[string]string{}}
	path := it.Request.URL
	if u, err := url.Parse(it.Request.URL); err == nil {
		path = u.Path
	}
	v.path = path
	req, model, stream, err := llmserver.DecodeRequest(it.Request.URL, []byte(it.Request.Body))
	if err != nil {
		// Not a request the local server reads: show its body as it is.
		v.sections[SectionRequest] = "(not read as a model request: " + err.Error() + ")\n" + indentJSON(it.Request.Body)
	} else {
		v.sections[SectionRequest] = renderParams(req, model, stream)
		v.sections[SectionSystem] = renderBlocks(req.System, "")
		var tools strings.Builder
		for _, t := range req.Tools {
			one := renderTool(t)
			v.tools[t.Name] = one
			tools.WriteString(one)
		}
		v.sections[SectionTools] = tools.String()
		v.sections[SectionMessages] = renderMessages(req.Messages)
		v.messages = len(req.Messages)
	}
	v.sections[SectionAnswer] = renderAnswer(ctx, it)
	return v
}

func renderParams(req *llm.Request, model string, stream bool) string {
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "%s: %v\n", k, v) }
	line("model", model)
	if stream {
		line("stream", true)
	}
	if req.MaxTokens > 0 {
		line("max_tokens", req.MaxTokens)
	}
	if req.Temperature != nil {
		line("temperature", *req.Temperature)
	}
	if req.TopP != nil {
		line("top_p", *req.TopP)
	}
	if req.Seed != nil {
		line("seed", *req.Seed)
	}
	if len(req.StopSequences) > 0 {
		line("stop_sequences", strings.Join(req.StopSequences, ", "))
	}
	if req.Thinking != nil {
		line("thinking budget", req.Thinking.BudgetTokens)
	}
	if tc := req.ToolChoice; tc != nil {
		line("tool_choice", strings.TrimSpace(string(tc.Mode)+" "+tc.Name))
	}
	if rf := req.ResponseFormat; rf != nil {
		line("response_format", rf.Name)
		b.WriteString(indent(indentJSON(string(rf.Schema)), "  "))
	}
	return b.String()
}

// renderBlocks renders content blocks: text as it is, other blocks by
// kind, each cache-control marker on a line of its own.
func renderBlocks(blocks []llm.Block, prefix string) string {
	var b strings.Builder
	for i, bl := range blocks {
		if len(blocks) > 1 {
			fmt.Fprintf(&b, "%s[block %d]\n", prefix, i+1)
		}
		switch bl.Type {
		case llm.BlockText, "":
			b.WriteString(indent(bl.Text, prefix))
		case llm.BlockThinking:
			b.WriteString(indent("(thinking) "+bl.Thinking, prefix))
		default:
			fmt.Fprintf(&b, "%s(%s %s %s)\n", prefix, bl.Type, bl.MediaType, bl.URL)
		}
		if cc := bl.CacheControl; cc != nil {
			fmt.Fprintf(&b, "%s(cache_control %s%s)\n", prefix, cc.Type, strings.TrimSuffix(" "+cc.TTL, " "))
		}
	}
	return b.String()
}

func renderTool(t llm.ToolSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", t.Name)
	b.WriteString(indent(t.Description, "  "))
	if len(t.Parameters) > 0 {
		b.WriteString(indent(indentJSON(string(t.Parameters)), "  "))
	}
	if cc := t.CacheControl; cc != nil {
		fmt.Fprintf(&b, "  (cache_control %s%s)\n", cc.Type, strings.TrimSuffix(" "+cc.TTL, " "))
	}
	return b.String()
}

// renderMessages renders the conversation. Tool call ids are left out:
// they change from one recording to the next without meaning anything;
// a tool result names the tool it answers instead.
func renderMessages(msgs []llm.Message) string {
	var b strings.Builder
	names := map[string]string{}
	for i, m := range msgs {
		head := string(m.Role)
		if m.Role == llm.RoleTool {
			name := m.Name
			if name == "" {
				name = names[m.ToolCallID]
			}
			head = "tool " + name
			if m.IsError {
				head += " (error)"
			}
		}
		fmt.Fprintf(&b, "[%d] %s\n", i+1, head)
		b.WriteString(renderBlocks(m.Content, "    "))
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Name
			fmt.Fprintf(&b, "    → %s %s\n", tc.Name, compactJSON(tc.Args))
		}
	}
	return b.String()
}

func renderAnswer(ctx context.Context, it *vcr.Interaction) string {
	resp, err := replay.Decode(ctx, it)
	if err != nil {
		return fmt.Sprintf("status %d\nerror: %v\n", it.Response.Code, err)
	}
	var b strings.Builder
	if resp.StopReason != "" {
		fmt.Fprintf(&b, "stop: %s\n", resp.StopReason)
	}
	b.WriteString(renderBlocks(resp.Message.Content, ""))
	for _, tc := range resp.Message.ToolCalls {
		fmt.Fprintf(&b, "→ %s %s\n", tc.Name, compactJSON(tc.Args))
	}
	for _, tc := range resp.Message.InvalidToolCalls {
		fmt.Fprintf(&b, "→ %s %q (invalid: %s)\n", tc.Name, tc.Args, tc.Error)
	}
	u := resp.Usage
	fmt.Fprintf(&b, "usage: %d in, %d out, %d cache read, %d cache write\n", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	return b.String()
}

// summary says in a few words what changed in a section.
func summary(name string, old, new *view) string {
	switch name {
	case SectionTools:
		var parts []string
		for _, n := range sortedKeys(new.tools) {
			if o, ok := old.tools[n]; !ok {
				parts = append(parts, "+"+n)
			} else if o != new.tools[n] {
				parts = append(parts, "~"+n)
			}
		}
		for _, n := range sortedKeys(old.tools) {
			if _, ok := new.tools[n]; !ok {
				parts = append(parts, "-"+n)
			}
		}
		if len(parts) == 0 {
			return "reordered"
		}
		return strings.Join(parts, " ")
	case SectionMessages:
		if old.messages != new.messages {
			return fmt.Sprintf("%d messages → %d", old.messages, new.messages)
		}
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// unified diffs two renderings, without the file header lines.
func unified(a, b string) string {
	d := udiff.Unified("old", "new", a, b)
	if i := strings.Index(d, "@@"); i >= 0 {
		d = d[i:]
	}
	return d
}

func marked(text, mark string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		b.WriteString(mark + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	s = strings.TrimRight(s, "\n")
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// WriteText renders the report for a terminal or a pull-request comment:
// a line for the cassettes, then each interaction that differs with the
// diff of each section that changed.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	name := r.New
	if r.Old != r.New {
		name = r.Old + " → " + r.New
	}
	switch {
	case r.OldCount == 0 && r.NewCount > 0:
		fmt.Fprintf(&b, "%s: added, %d interactions\n", name, r.NewCount)
	case r.NewCount == 0 && r.OldCount > 0:
		fmt.Fprintf(&b, "%s: removed, %d interactions\n", name, r.OldCount)
	case !r.Changed():
		fmt.Fprintf(&b, "%s: no change in model terms (%d interactions)\n", name, r.NewCount)
	default:
		counts := map[string]int{}
		for _, in := range r.Interactions {
			counts[in.Change]++
		}
		var parts []string
		for _, c := range []string{"changed", "added", "removed"} {
			if counts[c] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
			}
		}
		if r.Same > 0 {
			parts = append(parts, fmt.Sprintf("%d the same", r.Same))
		}
		fmt.Fprintf(&b, "%s: %d interactions → %d: %s\n", name, r.OldCount, r.NewCount, strings.Join(parts, ", "))
	}
	for _, in := range r.Interactions {
		at := fmt.Sprintf("[%d]", in.Index)
		switch in.Change {
		case "removed":
			at = fmt.Sprintf("[was %d]", in.OldIndex)
		case "changed":
			if in.OldIndex != in.Index {
				at = fmt.Sprintf("[%d, was %d]", in.Index, in.OldIndex)
			}
		}
		lane := ""
		if in.Lane != "" {
			lane = " lane " + in.Lane
		}
		fmt.Fprintf(&b, "\n%s %s %s%s: %s\n", at, in.Method, in.Path, lane, in.Change)
		for _, s := range in.Sections {
			head := s.Name
			if s.Summary != "" {
				head += " (" + s.Summary + ")"
			}
			if s.SameAs > 0 {
				fmt.Fprintf(&b, "  %s: as in [%d]\n", head, s.SameAs)
				continue
			}
			fmt.Fprintf(&b, "  %s:\n", head)
			b.WriteString(indent(s.Diff, "    "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
