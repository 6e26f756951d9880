package checkpoint_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/checkpoint"
	"github.com/dageval/dageval/harness/llm"
)

func openSQLite(t testing.TB, path string, cfg checkpoint.SQLiteConfig) *checkpoint.SQLite {
	t.Helper()
	s, err := checkpoint.OpenSQLite(path, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// evolver produces a random but realistic sequence of states: like the
// runtime it never modifies a state in place, copies messages by value from
// one state to the next and gives fresh messages fresh ids.
type evolver struct {
	r     *rand.Rand
	seq   int
	state *agent.State
}

func (e *evolver) text() string {
	words := []string{"alpha", "beta", "gamma", "<tag>", "ünïcode", "a \"quote\"", "line\nbreak", "&amp;"}
	n := 1 + e.r.IntN(4)
	s := ""
	for i := range n {
		if i > 0 {
			s += " "
		}
		s += words[e.r.IntN(len(words))]
	}
	return s
}

func (e *evolver) message() llm.Message {
	e.seq++
	id := fmt.Sprintf("msg-%d", e.seq)
	switch e.r.IntN(4) {
	case 0:
		return llm.Message{ID: id, Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(e.text())}}
	case 1:
		args, _ := json.Marshal(map[string]any{"file_path": "/" + e.text(), "n": e.r.IntN(100)})
		m := llm.Assistant(e.text(), llm.ToolCall{ID: "call-" + id, Name: "write_file", Args: args})
		m.ID = id
		m.Usage = &llm.Usage{InputTokens: e.r.IntN(1000), OutputTokens: e.r.IntN(100)}
		if e.r.IntN(3) == 0 {
			m.InvalidToolCalls = []llm.InvalidToolCall{{ID: "bad-" + id, Name: "edit_file", Args: `{"x": `, Error: "truncated"}}
			m.Content = append(m.Content, llm.Block{Type: llm.BlockThinking, Thinking: e.text(), Signature: "sig"})
		}
		return m
	case 2:
		m := llm.ToolResult("call-x", "write_file", e.text(), e.r.IntN(2) == 0)
		m.ID = id
		m.Artifact = json.RawMessage(`{"exit_code":0}`)
		return m
	default:
		m := llm.Message{ID: id, Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(e.text())}, Metadata: map[string]string{llm.MetaSource: "summarization"}}
		return m
	}
}

// step returns the next state and a label of what changed.
func (e *evolver) step() (*agent.State, string) {
	s := e.state
	n := *s
	msgs := s.Messages
	var what string
	switch op := e.r.IntN(20); {
	case op < 6 || len(msgs) < 3:
		what = "append"
		out := slices.Clone(msgs)
		for range 1 + e.r.IntN(3) {
			out = append(out, e.message())
		}
		n.Messages = out
		n.Seq = e.seq
	case op < 8:
		what = "replace by id"
		out := slices.Clone(msgs)
		i := e.r.IntN(len(out))
		out[i].Content = []llm.Block{llm.TextBlock("edited " + e.text())}
		n.Messages = out
	case op < 9:
		what = "replace tool-call args in place"
		out := slices.Clone(msgs)
		for i := len(out) - 1; i >= 0; i-- {
			if len(out[i].ToolCalls) > 0 {
				calls := slices.Clone(out[i].ToolCalls)
				calls[0].Args = json.RawMessage(`{"edited":true}`)
				out[i].ToolCalls = calls
				break
			}
		}
		n.Messages = out
	case op < 10:
		what = "remove by id"
		out := slices.Clone(msgs)
		i := e.r.IntN(len(out))
		out = slices.Delete(out, i, i+1+e.r.IntN(min(2, len(out)-i)))
		n.Messages = out[:len(out):len(out)]
	case op < 11:
		what = "insert in the middle"
		i := e.r.IntN(len(msgs))
		out := append(slices.Clone(msgs[:i]), e.message())
		n.Messages = append(out, msgs[i:]...)
	case op < 12:
		what = "replace all"
		keep := msgs[len(msgs)-1]
		n.Messages = []llm.Message{e.message(), keep, e.message()}
	case op < 13:
		what = "message without id and duplicate ids"
		out := slices.Clone(msgs)
		out = append(out, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(e.text())}}, msgs[0])
		n.Messages = out
	case op < 15:
		what = "write files"
		files := maps.Clone(s.Files)
		if files == nil {
			files = map[string]agent.FileData{}
		}
		for range 1 + e.r.IntN(2) {
			files[fmt.Sprintf("/f%d.txt", e.r.IntN(6))] = agent.FileData{Content: e.text(), Encoding: "utf-8", ModifiedAt: "2026-01-02T03:04:05Z"}
		}
		n.Files = files
	case op < 16:
		what = "delete a file"
		files := maps.Clone(s.Files)
		for _, p := range slices.Sorted(maps.Keys(files)) {
			delete(files, p)
			break
		}
		n.Files = files
	case op < 17:
		what = "values"
		vals := maps.Clone(s.Values)
		if vals == nil {
			vals = map[string]json.RawMessage{}
		}
		// Values come back byte for byte, whitespace included.
		vals[fmt.Sprintf("key%d", e.r.IntN(3))] = json.RawMessage(fmt.Sprintf(`{ "n" : %d, "s": %q }`, e.r.IntN(9), e.text()))
		if e.r.IntN(3) == 0 {
			delete(vals, "key0")
		}
		n.Values = vals
	case op < 18:
		what = "todos"
		if e.r.IntN(3) == 0 {
			n.Todos = nil
		} else {
			n.Todos = []agent.Todo{{Content: e.text(), Status: "pending"}, {Content: e.text(), Status: "completed"}}
		}
	case op < 19:
		what = "structured response"
		if e.r.IntN(3) == 0 {
			n.StructuredResponse = nil
		} else {
			n.StructuredResponse = json.RawMessage(fmt.Sprintf(`{"answer": %q}`, e.text()))
		}
	default:
		what = "unchanged state, new position"
	}
	e.state = &n
	return &n, what
}

var equateEmpty = cmpopts.EquateEmpty()

const propertySeeds = uint64(8)

// TestRoundTripProperty puts random sequences of states and checks that Get
// returns each one, both from the writer's cache and replayed from the file
// by a fresh checkpointer.
func TestRoundTripProperty(t *testing.T) {
	for seed := range propertySeeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "cp.db")
			w := openSQLite(t, path, checkpoint.SQLiteConfig{})
			e := &evolver{r: rand.New(rand.NewPCG(seed, 99)), state: &agent.State{}}
			for i := range 80 {
				st, what := e.step()
				cp := &agent.Checkpoint{State: st, Next: agent.Position{Phase: agent.PhaseModel, Index: i % 3}, Steps: i}
				if i%7 == 3 {
					cp.Interrupts = []agent.PendingInterrupt{{ID: "after_model:HumanInTheLoopMiddleware#0", Value: json.RawMessage(`{"action_requests":[]}`)}}
					cp.ToolResults = map[string]*agent.ToolResponse{
						"c1": {Message: llm.ToolResult("c1", "write_file", "ok", false), Update: &agent.Update{
							Files:  map[string]*agent.FileData{"/a": {Content: "x"}, "/gone": nil},
							Values: map[string]json.RawMessage{"kept": json.RawMessage(`1`), "dropped": nil},
							Todos:  []agent.Todo{},
						}},
					}
				}
				require.NoError(t, w.Put(t.Context(), "thread", cp), "step %d (%s)", i, what)
				got, err := w.Get(t.Context(), "thread")
				require.NoError(t, err)
				if d := cmp.Diff(cp, got, equateEmpty); d != "" {
					t.Fatalf("step %d (%s): Get from the writer differs (-put +got):\n%s", i, what, d)
				}
				if i%10 == 9 {
					r := openSQLite(t, path, checkpoint.SQLiteConfig{})
					got, err := r.Get(t.Context(), "thread")
					require.NoError(t, err)
					if d := cmp.Diff(cp, got, equateEmpty); d != "" {
						t.Fatalf("step %d (%s): replay from the file differs (-put +got):\n%s", i, what, d)
					}
					require.NoError(t, r.Close())
				}
			}
		})
	}
}

// Every random operation above is drawn at least once across the seeds, so
// the property covers each kind of change.
func TestRoundTripPropertyCoversEveryOperation(t *testing.T) {
	seen := map[string]bool{}
	for seed := range propertySeeds {
		e := &evolver{r: rand.New(rand.NewPCG(seed, 99)), state: &agent.State{}}
		for range 80 {
			_, what := e.step()
			seen[what] = true
		}
	}
	require.Len(t, seen, 13, "operations drawn: %v", slices.Sorted(maps.Keys(seen)))
}
