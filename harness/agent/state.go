package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unsafe"

	"github.com/dageval/dageval/harness/llm"
)

// State is the agent's working memory, saved by the checkpointer between
// steps. Treat a *State handed to a hook or tool as read-only: changes are
// returned as an Update and applied by the runtime.
//
// The runtime never writes to the messages a State holds: a step appends
// beyond the end of its predecessor's Messages (whose capacity ends at its
// length), so the states of a run share one backing array, and a message at
// a given index of a Messages slice never changes. Middleware rely on this
// to carry work over from one model call to the next (see RunMemo).
type State struct {
	Messages           []llm.Message              `json:"messages"`
	Files              map[string]FileData        `json:"files,omitempty"`
	Todos              []Todo                     `json:"todos,omitempty"`
	StructuredResponse json.RawMessage            `json:"structured_response,omitempty"`
	Values             map[string]json.RawMessage `json:"values,omitempty"`
	// Seq numbers the messages this thread has seen; message ids derive from
	// it so they are stable across runs.
	Seq int `json:"seq,omitempty"`
}

// FileData is one file held in agent state (the State backend's storage).
type FileData struct {
	Content    string `json:"content"`
	Encoding   string `json:"encoding,omitempty"` // "utf-8" (default) or "base64"
	CreatedAt  string `json:"created_at,omitempty"`
	ModifiedAt string `json:"modified_at,omitempty"`
}

// Todo is one entry of the agent's todo list.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"` // pending, in_progress or completed
}

// Jump redirects the loop after a hook.
type Jump string

// Jump targets.
const (
	JumpNone  Jump = ""
	JumpModel Jump = "model" // call the model again
	JumpTools Jump = "tools" // run the pending tool calls
	JumpEnd   Jump = "end"   // finish (after-agent hooks still run)
)

// Update is a change to State returned by a hook, a model wrapper or a tool.
type Update struct {
	// ReplaceMessages discards the whole history before Messages are applied.
	ReplaceMessages bool `json:"replace_messages,omitempty"`
	// Messages are appended; a message whose ID is already present replaces
	// that message in place. Messages without an ID get a fresh one.
	Messages []llm.Message `json:"messages,omitempty"`
	// RemoveMessages deletes messages by ID.
	RemoveMessages []string `json:"remove_messages,omitempty"`
	// Files are merged into State.Files; a nil value deletes the path.
	Files map[string]*FileData `json:"files,omitempty"`
	// Todos, when non-nil, replaces the todo list.
	Todos []Todo `json:"todos,omitempty"`
	// StructuredResponse, when non-nil, replaces the structured response.
	StructuredResponse json.RawMessage `json:"structured_response,omitempty"`
	// Values are merged into State.Values through each key's reducer; a nil
	// value deletes the key.
	Values map[string]json.RawMessage `json:"values,omitempty"`
	// JumpTo redirects the loop.
	JumpTo Jump `json:"jump_to,omitempty"`
}

// IsEmpty reports whether the update changes nothing.
func (u *Update) IsEmpty() bool {
	return u == nil || (!u.ReplaceMessages && len(u.Messages) == 0 && len(u.RemoveMessages) == 0 &&
		len(u.Files) == 0 && u.Todos == nil && u.StructuredResponse == nil && len(u.Values) == 0 && u.JumpTo == JumpNone)
}

// StateKey declares an extension key a middleware keeps in State.Values.
type StateKey struct {
	Name string
	// Private keys are never copied into subagents or into Result.State.
	Private bool
	// Reduce merges an update into the current value; nil means replace.
	Reduce func(current, update json.RawMessage) (json.RawMessage, error)
}

// Value decodes State.Values[key] into a T. It reports false when the key is
// absent or does not decode.
func Value[T any](s *State, key string) (T, bool) {
	var v T
	if s == nil {
		return v, false
	}
	raw, ok := s.Values[key]
	if !ok || raw == nil {
		return v, false
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false
	}
	return v, true
}

// SetValue encodes v into the update's Values under key.
func (u *Update) SetValue(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state key %s: %w", key, err)
	}
	if u.Values == nil {
		u.Values = map[string]json.RawMessage{}
	}
	u.Values[key] = raw
	return nil
}

// MustValue is SetValue for values that always encode (plain data); it returns the update.
func (u *Update) MustValue(key string, v any) *Update {
	if err := u.SetValue(key, v); err != nil {
		panic(err)
	}
	return u
}

// Merge returns a new update holding u's changes followed by o's, as if both
// were applied in order. Neither u nor o is modified. For a Values key with a
// reducer, only the later write survives; apply such updates one at a time.
func (u *Update) Merge(o *Update) *Update {
	var n Update
	if u != nil {
		n = *u
		n.Messages = slices.Clone(u.Messages)
		n.RemoveMessages = slices.Clone(u.RemoveMessages)
		n.Files = maps.Clone(u.Files)
		n.Values = maps.Clone(u.Values)
	}
	if o == nil {
		return &n
	}
	if o.ReplaceMessages {
		n.ReplaceMessages = true
		n.Messages = nil
		n.RemoveMessages = nil
	}
	n.Messages = append(n.Messages, o.Messages...)
	n.RemoveMessages = append(n.RemoveMessages, o.RemoveMessages...)
	if len(o.Files) > 0 {
		if n.Files == nil {
			n.Files = map[string]*FileData{}
		}
		maps.Copy(n.Files, o.Files)
	}
	if o.Todos != nil {
		n.Todos = o.Todos
	}
	if o.StructuredResponse != nil {
		n.StructuredResponse = o.StructuredResponse
	}
	if len(o.Values) > 0 {
		if n.Values == nil {
			n.Values = map[string]json.RawMessage{}
		}
		maps.Copy(n.Values, o.Values)
	}
	if o.JumpTo != JumpNone {
		n.JumpTo = o.JumpTo
	}
	return &n
}

// Clone returns a copy of the state that shares no slices or maps with s.
func (s *State) Clone() *State {
	if s == nil {
		return &State{}
	}
	c := *s
	c.Messages = slices.Clone(s.Messages)
	c.Files = maps.Clone(s.Files)
	c.Todos = slices.Clone(s.Todos)
	c.Values = maps.Clone(s.Values)
	return &c
}

// Message returns the message with the given id.
func (s *State) Message(id string) (llm.Message, bool) {
	for _, m := range s.Messages {
		if m.ID == id {
			return m, true
		}
	}
	return llm.Message{}, false
}

// LastAssistant returns the last assistant message, if any.
func (s *State) LastAssistant() (llm.Message, bool) {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == llm.RoleAssistant {
			return s.Messages[i], true
		}
	}
	return llm.Message{}, false
}

// apply returns a new state with u applied; s is not modified. With h, the
// messages go to the invocation's history (see history), so that a step
// appends to the history instead of copying it.
func apply(s *State, u *Update, keys map[string]StateKey, h *history) (*State, error) {
	if u.IsEmpty() {
		return s, nil
	}
	n := *s
	if u.ReplaceMessages || len(u.Messages) > 0 || len(u.RemoveMessages) > 0 {
		n.Messages = applyMessages(s.Messages, u, &n.Seq, h)
	}
	if len(u.Files) > 0 {
		// Cloned rather than copied entry by entry: a clone copies the
		// map's tables as they are, without hashing every path again.
		files := maps.Clone(s.Files)
		if files == nil {
			files = make(map[string]FileData, len(u.Files))
		}
		for p, fd := range u.Files {
			if fd == nil {
				delete(files, p)
			} else {
				files[p] = *fd
			}
		}
		n.Files = files
	}
	if u.Todos != nil {
		n.Todos = slices.Clone(u.Todos)
	}
	if u.StructuredResponse != nil {
		n.StructuredResponse = u.StructuredResponse
	}
	if len(u.Values) > 0 {
		vals := make(map[string]json.RawMessage, len(s.Values)+len(u.Values))
		maps.Copy(vals, s.Values)
		for _, k := range slices.Sorted(maps.Keys(u.Values)) {
			v := u.Values[k]
			if v == nil {
				delete(vals, k)
				continue
			}
			if key, ok := keys[k]; ok && key.Reduce != nil {
				merged, err := key.Reduce(vals[k], v)
				if err != nil {
					return nil, fmt.Errorf("state key %s: %w", k, err)
				}
				v = merged
			}
			vals[k] = v
		}
		n.Values = vals
	}
	return &n, nil
}

// applyMessages returns msgs with the update's message changes applied,
// numbering messages without an id from *seq.
func applyMessages(msgs []llm.Message, u *Update, seq *int, h *history) []llm.Message {
	var out []llm.Message
	// inPlace: out is h.arr, whose elements from len(msgs) on no state sees.
	inPlace := h != nil && !u.ReplaceMessages && len(u.RemoveMessages) == 0 && h.holds(msgs)
	switch {
	case inPlace:
		out = h.arr
		if cap(out)-len(out) < len(u.Messages) {
			// Double, so that a run of n messages moves its history
			// O(log n) times in all.
			out = slices.Grow(out, max(len(out), len(u.Messages)))
		}
	case !u.ReplaceMessages:
		out = make([]llm.Message, len(msgs), len(msgs)+len(u.Messages))
		copy(out, msgs)
	}
	for _, id := range u.RemoveMessages {
		out = slices.DeleteFunc(out, func(m llm.Message) bool { return m.ID == id })
	}
	for _, m := range u.Messages {
		if m.ID == "" {
			*seq++
			m.ID = messageID(*seq)
			out = append(out, m)
			continue
		}
		if i := slices.IndexFunc(out, func(x llm.Message) bool { return x.ID == m.ID }); i >= 0 {
			if inPlace && i < len(msgs) {
				// Replacing a message that states hold: leave the
				// history to them and continue on a copy.
				out, inPlace = slices.Clone(out), false
			}
			out[i] = m
			continue
		}
		out = append(out, m)
	}
	if h == nil {
		return out
	}
	h.arr = out
	// Capped at its length, so that an append by anyone holding the state
	// reallocates instead of writing into the history's spare capacity.
	return out[:len(out):len(out)]
}

// messageID is "msg-<seq>", built in one allocation.
func messageID(seq int) string {
	var buf [24]byte
	return string(strconv.AppendInt(append(buf[:0], "msg-"...), int64(seq), 10))
}

// history is the backing array one invocation appends its messages to.
// Every state of the invocation views a prefix of arr, capped at its
// length; arr's spare capacity holds nothing any state can see, so
// appending there leaves every message a state holds untouched. A state
// that no longer ends where arr does (a replaced or removed message, a
// state loaded from a checkpoint) starts a new array.
type history struct {
	arr []llm.Message
}

// holds reports whether msgs is the whole of the history so far.
func (h *history) holds(msgs []llm.Message) bool {
	return len(msgs) == len(h.arr) && unsafe.SliceData(msgs) == unsafe.SliceData(h.arr)
}

// Public returns a copy of the state without the private keys.
func (s *State) Public(private map[string]bool) *State {
	c := *s
	if len(private) > 0 && len(s.Values) > 0 {
		c.Values = make(map[string]json.RawMessage, len(s.Values))
		for k, v := range s.Values {
			if !private[k] {
				c.Values[k] = v
			}
		}
		if len(c.Values) == 0 {
			c.Values = nil
		}
	}
	return &c
}

// LastText returns the text of the last assistant message with non-empty
// text, which is what a caller usually treats as the agent's answer.
func (s *State) LastText() string {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		m := s.Messages[i]
		if m.Role != llm.RoleAssistant {
			continue
		}
		if t := m.Text(); t != "" {
			return t
		}
	}
	return ""
}
