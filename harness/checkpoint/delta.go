package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// delta is what one Put changed relative to the thread's previous state. It
// mirrors how state evolves (Deep Agents' DeltaChannel idea): messages are
// appended, occasionally replaced in place or removed by id, rarely rewritten
// wholesale; files change by path; the small fields change as a whole.
//
// Applying a delta to the previous state: Reset empties the history, Remove
// deletes messages by id, Keep truncates to that many leading messages,
// Replace overwrites messages by position, Append adds messages at the end.
type delta struct {
	Reset   bool          `json:"reset,omitempty"`
	Remove  []string      `json:"remove,omitempty"`
	Keep    *int          `json:"keep,omitempty"`
	Replace []replaced    `json:"replace,omitempty"`
	Append  []llm.Message `json:"append,omitempty"`

	Files        map[string]agent.FileData `json:"files,omitempty"`
	DeletedFiles []string                  `json:"deleted_files,omitempty"`

	// Values and the structured response are stored as strings so that their
	// raw JSON comes back byte for byte.
	Values        map[string]string `json:"values,omitempty"`
	DeletedValues []string          `json:"deleted_values,omitempty"`

	TodosSet           bool         `json:"todos_set,omitempty"`
	Todos              []agent.Todo `json:"todos,omitempty"`
	StructuredResponse *string      `json:"structured_response,omitempty"`
	Seq                *int         `json:"seq,omitempty"`
}

type replaced struct {
	Index   int         `json:"i"`
	Message llm.Message `json:"m"`
}

func (d *delta) empty() bool {
	return !d.Reset && len(d.Remove) == 0 && d.Keep == nil && len(d.Replace) == 0 && len(d.Append) == 0 &&
		len(d.Files) == 0 && len(d.DeletedFiles) == 0 && len(d.Values) == 0 && len(d.DeletedValues) == 0 &&
		!d.TodosSet && d.StructuredResponse == nil && d.Seq == nil
}

// diff returns the delta that turns prev into cur. Neither is modified.
func diff(prev, cur *agent.State) (*delta, error) {
	if prev == nil {
		prev = &agent.State{}
	}
	if cur == nil {
		cur = &agent.State{}
	}
	d := &delta{}
	if err := diffMessages(d, prev.Messages, cur.Messages); err != nil {
		return nil, err
	}
	if !sameMap(prev.Files, cur.Files) {
		for p, f := range cur.Files {
			if old, ok := prev.Files[p]; !ok || old != f {
				if d.Files == nil {
					d.Files = map[string]agent.FileData{}
				}
				d.Files[p] = f
			}
		}
		for p := range prev.Files {
			if _, ok := cur.Files[p]; !ok {
				d.DeletedFiles = append(d.DeletedFiles, p)
			}
		}
		slices.Sort(d.DeletedFiles)
	}
	if !sameMap(prev.Values, cur.Values) {
		for k, v := range cur.Values {
			if old, ok := prev.Values[k]; !ok || !bytes.Equal(old, v) {
				if d.Values == nil {
					d.Values = map[string]string{}
				}
				d.Values[k] = string(v)
			}
		}
		for k := range prev.Values {
			if _, ok := cur.Values[k]; !ok {
				d.DeletedValues = append(d.DeletedValues, k)
			}
		}
		slices.Sort(d.DeletedValues)
	}
	if !slices.Equal(prev.Todos, cur.Todos) {
		d.TodosSet, d.Todos = true, cur.Todos
	}
	if !bytes.Equal(prev.StructuredResponse, cur.StructuredResponse) {
		sr := string(cur.StructuredResponse)
		d.StructuredResponse = &sr
	}
	if prev.Seq != cur.Seq {
		seq := cur.Seq
		d.Seq = &seq
	}
	return d, nil
}

func diffMessages(d *delta, prev, cur []llm.Message) error {
	base := prev
	p := commonIDPrefix(prev, cur)
	if p < len(prev) && uniqueIDs(prev) && uniqueIDs(cur) {
		// Some messages left or moved: drop the ones that are gone by id so
		// that a removal near the start does not rewrite everything after it.
		inCur := make(map[string]bool, len(cur))
		for _, m := range cur {
			inCur[m.ID] = true
		}
		var kept []llm.Message
		for _, m := range prev {
			if inCur[m.ID] {
				kept = append(kept, m)
			} else {
				d.Remove = append(d.Remove, m.ID)
			}
		}
		if len(d.Remove) > 0 {
			base = kept
			p = commonIDPrefix(base, cur)
		}
	}
	if p == 0 && len(prev) > 0 {
		d.Reset, d.Remove = true, nil
		d.Append = cur
		return nil
	}
	if p < len(base) {
		d.Keep = &p
	}
	for i := range p {
		same, err := sameMessage(&base[i], &cur[i])
		if err != nil {
			return err
		}
		if !same {
			d.Replace = append(d.Replace, replaced{Index: i, Message: cur[i]})
		}
	}
	if p < len(cur) {
		d.Append = cur[p:]
	}
	return nil
}

func commonIDPrefix(a, b []llm.Message) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i].ID != b[i].ID {
			return i
		}
	}
	return n
}

func uniqueIDs(msgs []llm.Message) bool {
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if m.ID == "" || seen[m.ID] {
			return false
		}
		seen[m.ID] = true
	}
	return true
}

// messageFields is the number of fields shallowSame compares; a test fails
// when llm.Message changes so that shallowSame is updated with it.
const messageFields = 11

// shallowSame reports whether two messages share all their contents. The
// runtime copies messages by value from step to step without modifying them,
// so an unchanged message shares its slices with its predecessor and this
// answers in a few nanoseconds; anything else falls back to comparing JSON.
func shallowSame(a, b *llm.Message) bool {
	return a.ID == b.ID && a.Role == b.Role && a.Name == b.Name && a.ToolCallID == b.ToolCallID && a.IsError == b.IsError &&
		sameSlice(a.Content, b.Content) && sameSlice(a.ToolCalls, b.ToolCalls) && sameSlice(a.InvalidToolCalls, b.InvalidToolCalls) &&
		sameSlice(a.Artifact, b.Artifact) && a.Usage == b.Usage && sameMap(a.Metadata, b.Metadata)
}

func sameMessage(a, b *llm.Message) (bool, error) {
	if shallowSame(a, b) {
		return true, nil
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("message %s: %w", a.ID, err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("message %s: %w", b.ID, err)
	}
	return bytes.Equal(ja, jb), nil
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return len(a) == len(b) && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// applyTo applies the delta to s in place; s must be owned by the caller.
func (d *delta) applyTo(s *agent.State) error {
	if d.Reset {
		s.Messages = nil
	}
	if len(d.Remove) > 0 {
		gone := make(map[string]bool, len(d.Remove))
		for _, id := range d.Remove {
			gone[id] = true
		}
		s.Messages = slices.DeleteFunc(s.Messages, func(m llm.Message) bool { return gone[m.ID] })
	}
	if d.Keep != nil {
		if *d.Keep > len(s.Messages) || *d.Keep < 0 {
			return fmt.Errorf("delta keeps %d messages of %d", *d.Keep, len(s.Messages))
		}
		s.Messages = s.Messages[:*d.Keep:*d.Keep]
	}
	for _, r := range d.Replace {
		if r.Index < 0 || r.Index >= len(s.Messages) {
			return fmt.Errorf("delta replaces message %d of %d", r.Index, len(s.Messages))
		}
		s.Messages[r.Index] = normalizeMessage(r.Message)
	}
	for _, m := range d.Append {
		s.Messages = append(s.Messages, normalizeMessage(m))
	}
	if len(d.Files) > 0 || len(d.DeletedFiles) > 0 {
		if s.Files == nil {
			s.Files = make(map[string]agent.FileData, len(d.Files))
		}
		maps.Copy(s.Files, d.Files)
		for _, p := range d.DeletedFiles {
			delete(s.Files, p)
		}
		if len(s.Files) == 0 {
			s.Files = nil
		}
	}
	if len(d.Values) > 0 || len(d.DeletedValues) > 0 {
		if s.Values == nil {
			s.Values = make(map[string]json.RawMessage, len(d.Values))
		}
		for k, v := range d.Values {
			s.Values[k] = nil
			if v != "" {
				s.Values[k] = json.RawMessage(v)
			}
		}
		for _, k := range d.DeletedValues {
			delete(s.Values, k)
		}
		if len(s.Values) == 0 {
			s.Values = nil
		}
	}
	if d.TodosSet {
		s.Todos = d.Todos
	}
	if d.StructuredResponse != nil {
		s.StructuredResponse = nil
		if *d.StructuredResponse != "" {
			s.StructuredResponse = json.RawMessage(*d.StructuredResponse)
		}
	}
	if d.Seq != nil {
		s.Seq = *d.Seq
	}
	return nil
}

// normalizeMessage undoes what a JSON round trip adds: tool-call arguments
// that were nil come back as the literal null, which is never valid tool
// input, so null means "no arguments" again.
func normalizeMessage(m llm.Message) llm.Message {
	for i := range m.ToolCalls {
		if string(m.ToolCalls[i].Args) == "null" {
			m.ToolCalls[i].Args = nil
		}
	}
	return m
}

// head is the part of a checkpoint besides the state: where the loop stands.
type head struct {
	Next        agent.Position                 `json:"next"`
	Steps       int                            `json:"steps"`
	Interrupts  []agent.PendingInterrupt       `json:"interrupts,omitempty"`
	ToolResults map[string]*agent.ToolResponse `json:"tool_results,omitempty"`
	// UpdateFixes records what JSON cannot say about a tool result's update:
	// an empty (clearing) todo list and values set to nil (deletions).
	UpdateFixes map[string]updateFix `json:"update_fixes,omitempty"`
}

type updateFix struct {
	ClearTodos    bool     `json:"clear_todos,omitempty"`
	DeletedValues []string `json:"deleted_values,omitempty"`
}

func headOf(cp *agent.Checkpoint) head {
	h := head{Next: cp.Next, Steps: cp.Steps, Interrupts: cp.Interrupts, ToolResults: cp.ToolResults}
	for id, tr := range cp.ToolResults {
		if tr == nil || tr.Update == nil {
			continue
		}
		var fix updateFix
		fix.ClearTodos = tr.Update.Todos != nil && len(tr.Update.Todos) == 0
		for k, v := range tr.Update.Values {
			if v == nil {
				fix.DeletedValues = append(fix.DeletedValues, k)
			}
		}
		slices.Sort(fix.DeletedValues)
		if fix.ClearTodos || len(fix.DeletedValues) > 0 {
			if h.UpdateFixes == nil {
				h.UpdateFixes = map[string]updateFix{}
			}
			h.UpdateFixes[id] = fix
		}
	}
	return h
}

// restore fills the checkpoint fields the head holds.
func (h *head) restore(cp *agent.Checkpoint) {
	cp.Next, cp.Steps, cp.Interrupts, cp.ToolResults = h.Next, h.Steps, h.Interrupts, h.ToolResults
	for id, tr := range cp.ToolResults {
		if tr == nil {
			continue
		}
		tr.Message = normalizeMessage(tr.Message)
		if tr.Update == nil {
			continue
		}
		for i, m := range tr.Update.Messages {
			tr.Update.Messages[i] = normalizeMessage(m)
		}
		fix := h.UpdateFixes[id]
		if fix.ClearTodos {
			tr.Update.Todos = []agent.Todo{}
		}
		if len(fix.DeletedValues) > 0 && tr.Update.Values == nil {
			tr.Update.Values = map[string]json.RawMessage{}
		}
		for _, k := range fix.DeletedValues {
			tr.Update.Values[k] = nil
		}
	}
}
