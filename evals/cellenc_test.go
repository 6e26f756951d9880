package evals

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/internal/scrub"
	"github.com/dageval/dageval/rubrics"
)

// oldCellBytes is what a cell's file and journal line were before they
// came from one encoding: the detail encoded whole and indented by
// encoding/json's Encoder, the result encoded again on its own, compact.
func oldCellBytes(t *testing.T, d *CellDetail, res *CellResult) (file, line []byte) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(d))
	file = bytes.Clone(b.Bytes())
	b.Reset()
	enc = json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(res))
	return file, appendJournalLine(nil, b.Bytes(), sumOf(file))
}

// tricky are the pieces the strings of the test cells are made of: what
// JSON escapes or could confuse finding the result member (quotes,
// backslashes before quotes, braces, a "result" key), HTML-ish text,
// unicode (U+2028 is escaped, invalid UTF-8 replaced), control characters.
var tricky = []string{
	"a", "Z", " ", "0", "<", ">", "&", "<b>&amp;</b>", `"`, `\`, `\\`, `\"`, `\\"`, "{", "}", "[", "]", ",", ":",
	`"result":{`, `{"schema_version":1,"result":`, `,"cell_file":{`, "\n", "\t", "\r", "\x00", "\x1f", "\u2028", "\u2029",
	"é", "naïve", "日本語", "🙂", "\xff", "\xe2\x82", "sk-ant-not-a-key", "</script>",
}

func trickyString(r *rand.Rand) string {
	var sb strings.Builder
	for range r.IntN(12) {
		sb.WriteString(tricky[r.IntN(len(tricky))])
	}
	return sb.String()
}

// liveCell is a cell as a live run leaves it: a transcript with tool
// calls and their answers, a subagent, rubric evaluations, checks (one
// informational, whose verdict encodes itself), files, usage, latency,
// rate limits, an error and warnings; s makes its strings.
func liveCell(s func() string) (*CellDetail, *CellResult) {
	args, _ := json.Marshal(map[string]any{"path": "/notes/" + s() + ".md", "content": s(), "n": 3})
	rubric := &RubricOutcome{Result: "needs_revision", Iterations: 2, Explanation: s(), Score: 0.5,
		Criteria: []middleware.CriterionVerdict{{Name: s(), Passed: true}, {Name: "cites <sources> & dates", Gap: s()}}}
	res := CellResult{
		CellKey: CellKey{Case: "case-" + s(), Model: "openai:gpt-" + s(), Profile: "default", Epoch: 2},
		ID:      "case--m--p--e2", Tags: []string{s(), "smoke"}, Status: StatusFail, Score: 0.375, Rubric: rubric,
		Checks: []rubrics.CheckVerdict{
			{Name: "tool_called", Passed: true, Score: 1},
			{Name: "contains", Passed: false, Score: 0, Detail: "want <" + s() + "> & more", Informational: true},
		},
		Usage:   RoleUsage{Agent: llm.Usage{InputTokens: 1234, OutputTokens: 56, CacheReadTokens: 7}, Grader: llm.Usage{InputTokens: 90, UnknownCalls: 1}},
		CostUSD: 0.00123, CostKnown: true, Latency: &Latency{Calls: 3, Timed: 3, ModelMS: 812, FirstEventMS: 95},
		Steps: 4, ToolCalls: []string{"write_file", "task", s()}, DurationMS: 1523,
		Error: "provider: 429 " + s(), Warnings: []string{s(), "stream ended without a finish reason"},
		Cause: "provider_error", Alias: s(), RateLimits: []RateLimitCount{{Provider: "openai", Throttled: 1, Waits: 2, WaitMS: 300}},
	}
	msgs := []llm.Message{
		llm.User("Write notes about " + s()),
		{Role: llm.RoleAssistant, ID: "msg_1", Content: []llm.Block{llm.TextBlock(s())},
			ToolCalls:        []llm.ToolCall{{ID: "call_1", Name: "write_file", Args: args}, {ID: "call_2", Name: "task", Args: json.RawMessage(`{"subagent_type":"researcher","description":"<find> & \u00e9"}`)}},
			InvalidToolCalls: []llm.InvalidToolCall{{ID: "call_3", Name: "ls", Args: `{"path":` + s(), Error: "unexpected end of JSON input"}},
			Usage:            &llm.Usage{InputTokens: 1000, OutputTokens: 40}, Metadata: map[string]string{llm.MetaSource: s(), "z": "<&>"}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: []llm.Block{llm.TextBlock("Updated file " + s())}},
		{Role: llm.RoleTool, ToolCallID: "call_3", IsError: true, Content: []llm.Block{llm.TextBlock("Error: " + s())}, Artifact: json.RawMessage(`{"exit":1}`)},
		{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Thinking: s(), Signature: "sig=="}, llm.TextBlock("Done: " + s())}},
	}
	d := &CellDetail{
		SchemaVersion: SchemaVersion, Result: res, Input: "Write notes about " + s(), Messages: msgs,
		Subagents:   []SubagentRun{{Path: "main/task:researcher", ToolCallID: "call_2", Messages: []llm.Message{llm.User(s()), {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(s())}}}}},
		Evaluations: []RubricOutcome{{Result: "failed", Iterations: 1, Criteria: []middleware.CriterionVerdict{}}, *rubric},
		Files:       map[string]string{"/notes/" + s() + ".md": s(), "/b<&>.txt": "x"},
		Agent: &AgentGiven{SystemPrompt: "You are <helpful> & " + s(), Tools: []AgentTool{{Name: "write_file", Description: s()}, {Name: "task", Description: "Launch a subagent & wait"}},
			Middleware: []string{"FilesystemMiddleware", "SubAgentMiddleware"}},
	}
	return d, &res
}

// writtenCell writes d as a run does and reads back its cell file and
// journal line.
func writtenCell(t *testing.T, d *CellDetail) (file, line []byte) {
	t.Helper()
	dir := t.TempDir()
	o, err := openOutDir(dir, 1, false)
	require.NoError(t, err)
	require.NoError(t, o.cell(0, d))
	o.j.close()
	file, err = os.ReadFile(filepath.Join(dir, CellsDir, d.Result.ID+".json"))
	require.NoError(t, err)
	line, err = os.ReadFile(filepath.Join(dir, PartialResultsFile))
	require.NoError(t, err)
	return file, line
}

// A cell's file and journal line, now made from one compact encoding of
// the detail (its "result" member is the line, the file is the encoding
// indented), are the bytes the detail encoded indented by an Encoder and
// the result encoded on its own gave, for realistic and for random cells,
// with the agent's description the cell's own or shared.
func TestCellBytesAsEncoderWrote(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 7))
	plain := func() string { return "notes" }
	type cellCase struct {
		name string
		d    *CellDetail
		res  *CellResult
	}
	var cases []cellCase
	d, res := liveCell(plain)
	cases = append(cases, cellCase{"live", d, res})
	errored := CellResult{CellKey: CellKey{Case: "c", Model: "m", Profile: "p", Epoch: 1}, ID: "c--m--p--e1", Status: StatusError,
		Error: "replay miss: <no interaction> for \"POST /v1/chat\"\n\tdiff: é", Cause: "replay_miss", Checks: []rubrics.CheckVerdict{}, ToolCalls: []string{}, CostKnown: true}
	cases = append(cases, cellCase{"errored", &CellDetail{SchemaVersion: SchemaVersion, Result: errored, Input: "hi <there>", Messages: []llm.Message{}}, &errored})
	for range 300 {
		d, res := liveCell(func() string { return trickyString(r) })
		cases = append(cases, cellCase{"random", d, res})
	}
	sg := (&runner{scrub: scrub.New()}).share(&AgentGiven{SystemPrompt: "You answer <briefly> & \"well\"", Tools: []AgentTool{{Name: "ls", Description: "Lists\nfiles"}}})
	require.NotNil(t, sg)
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(cases[0].d))
	require.NotNil(t, resultMember(compact.Bytes()), "a detail's result member is found, not encoded again")
	for i, c := range cases {
		wantFile, wantLine := oldCellBytes(t, c.d, c.res)
		file, line := writtenCell(t, c.d)
		require.Equal(t, string(wantFile), string(file), "cell %d (%s): file", i, c.name)
		require.Equal(t, string(wantLine), string(line), "cell %d (%s): journal line", i, c.name)

		shared := *c.d
		cp := *sg.g
		shared.Agent, shared.shared = &cp, sg
		wantFile, wantLine = oldCellBytes(t, &shared, c.res)
		file, line = writtenCell(t, &shared)
		require.Equal(t, string(wantFile), string(file), "cell %d (%s), shared agent: file", i, c.name)
		require.Equal(t, string(wantLine), string(line), "cell %d (%s), shared agent: journal line", i, c.name)
	}
}

// objectEnd finds where an object ends whatever its strings hold: every
// run of backslashes before a quote, braces and brackets inside strings.
func TestObjectEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		v := map[string]any{trickyString(r): trickyString(r), "a": []any{trickyString(r), map[string]string{trickyString(r): trickyString(r)}}}
		obj, err := json.Marshal(v)
		require.NoError(t, err)
		tail := `,"next":"` + trickyString(r) + `"}`
		b := append(bytes.Clone(obj), tail...)
		assert.Equal(t, len(obj), objectEnd(b), "%s", b)
		assert.Equal(t, 0, objectEnd(obj[:len(obj)-1]), "an object not closed: %s", obj)
	}
	assert.Equal(t, 0, objectEnd([]byte(`"x"`)))
	assert.Equal(t, 0, objectEnd(nil))
}

// randomJSON is a random value of every JSON kind, nested up to depth
// levels: empty and full objects and arrays, numbers of every form,
// literals, and tricky strings as keys and values.
func randomJSON(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth == 0 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return trickyString(r)
	case 1:
		return []any{0, -1.5, 1e21, 3.25e-9, 12345678901234567890.0, -0.0}[r.IntN(6)]
	case 2:
		return r.IntN(2) == 0
	case 3:
		return nil
	case 4:
		return json.RawMessage(`{"raw" : [ 1, {} ,[] ] }`)
	case 5, 6:
		m := map[string]any{}
		for range r.IntN(4) {
			m[trickyString(r)] = randomJSON(r, depth-1)
		}
		return m
	default:
		a := []any{}
		for range r.IntN(4) {
			a = append(a, randomJSON(r, depth-1))
		}
		return a
	}
}

// appendIndented indents what the Encoder writes compact exactly as
// json.Indent does, and so as the Encoder indents: random values, and
// values nested deeper than its ready-made indentation.
func TestIndentedAsJSONIndent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := []any{map[string]any{}, []any{}, "", 0, nil}
	for range 3000 {
		values = append(values, randomJSON(r, 5))
	}
	deep := any("bottom")
	for i := range 45 {
		if i%2 == 0 {
			deep = []any{deep, map[string]any{}}
		} else {
			deep = map[string]any{"k": deep, "e": []any{}}
		}
	}
	values = append(values, deep)
	var compact, want bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	for _, v := range values {
		compact.Reset()
		require.NoError(t, enc.Encode(v))
		want.Reset()
		require.NoError(t, json.Indent(&want, compact.Bytes(), "", "  "))
		require.Equal(t, want.String(), string(appendIndented(nil, compact.Bytes())), "%s", compact.Bytes())
	}
}

// BenchmarkEncodeCell compares encoding a live cell's file and result line
// the way encoding/json's Encoder did it, twice (indented, then the
// result compact), with the one encoding the run uses.
func BenchmarkEncodeCell(b *testing.B) {
	d, res := liveCell(func() string { return "notes about <b>naïve</b> & \"quoted\" things" })
	b.Run("encoder", func(b *testing.B) {
		var buf bytes.Buffer
		indent, compact := json.NewEncoder(&buf), json.NewEncoder(&buf)
		indent.SetEscapeHTML(false)
		indent.SetIndent("", "  ")
		compact.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			if err := indent.Encode(d); err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			if err := compact.Encode(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("once", func(b *testing.B) {
		e := getCellEncoder()
		for b.Loop() {
			if _, _, err := e.encode(d, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
