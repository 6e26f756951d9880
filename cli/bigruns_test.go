package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/reports"
)

// childEnv makes the test binary the dageval command (see TestMain).
const childEnv = "DAGEVAL_CLI_CHILD"

// shardModel answers the cells of shardSuite — a lookup, then the answer —
// and counts the calls of each cell ("m1|c07"). hook, when set, is called
// at every call with the cell and how many calls its shard has made.
type shardModel struct {
	mu      sync.Mutex
	counts  map[string]int
	byShard map[int]int
	shardOf map[string]int
	hook    func(shard, n int)
}

func newShardModel(shardOf map[string]int) *shardModel {
	return &shardModel{counts: map[string]int{}, byShard: map[int]int{}, shardOf: shardOf}
}

func (m *shardModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	served, _ := llmserver.ServedCallFrom(ctx)
	id := ""
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			id = strings.TrimPrefix(msg.Text(), "question ")
			break
		}
	}
	cell := served.Model + "|" + id
	m.mu.Lock()
	m.counts[cell]++
	sh := m.shardOf[cell]
	m.byShard[sh]++
	n, hook := m.byShard[sh], m.hook
	m.mu.Unlock()
	if hook != nil {
		hook(sh, n)
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
		return &llm.Response{Message: llm.Assistant("The answer to " + id + " is " + last.Text() + ".")}, nil
	}
	return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "call_" + id, Name: "lookup", Args: json.RawMessage(`{"q":"` + id + `"}`)})}, nil
}

func shardSuite(n int) string {
	var b strings.Builder
	b.WriteString(`version: 1
name: sharded
providers: {local: {kind: openai-compatible, base_url: "${DAGEVAL_TEST_URL}/v1", api_key_env: TEST_KEY}}
mode: live
concurrency: 4
models: [local:m1, local:m2]
agent:
  system_prompt: You look answers up.
  tools: [{name: lookup, description: Looks an answer up., parameters: {type: object, properties: {q: {type: string}}, required: [q]}}]
tools: {lookup: {mock: {result: "42"}}}
cases:
`)
	for i := range n {
		fmt.Fprintf(&b, "  - {id: c%02d, input: \"question c%02d\", checks: [{final_answer: {contains: \"42\"}}, {tool_called: lookup}]}\n", i, i)
	}
	return b.String()
}

// dagevalProc is `dageval ARGS` as a process of its own (the test binary),
// in dir, against the local server at url.
func dagevalProc(t *testing.T, dir, url string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"=1", "TEST_KEY=test-key", "DAGEVAL_TEST_URL="+url, "CI=")
	return cmd
}

// dageval runs `dageval ARGS` to its end and returns its exit code and output.
func dageval(t *testing.T, dir, url string, args ...string) (int, string, string) {
	t.Helper()
	cmd := dagevalProc(t, dir, url, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errb.String()
}

// TestShardsOnFourProcesses runs a suite as four `dageval run --shard I/4`
// processes at once; one is killed with SIGKILL and one stopped with
// SIGTERM (as CI cancellation and Kubernetes stop it), and both are
// resumed. `dageval merge` then writes the run one process writes —
// results, summary, reports — which compare accepts; merge refuses a shard
// of another suite and overlapping shards, and compare a lone shard.
func TestShardsOnFourProcesses(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte(shardSuite(10)), 0o644))
	s, err := evals.Load(filepath.Join(dir, "suite.yaml"))
	require.NoError(t, err)
	cells, err := s.Cells("", 0)
	require.NoError(t, err)
	shardOf := map[string]int{}
	size := map[int]int{}
	for i := 1; i <= 4; i++ {
		for _, c := range s.Shard(cells, evals.Shard{Index: i, Count: 4}) {
			shardOf[strings.TrimPrefix(c.Model, "local:")+"|"+c.Case] = i
			size[i]++
		}
	}
	rng := rand.New(rand.NewPCG(19, 4))
	// Early enough that the stopped shard cannot finish its cells before
	// the signal lands: it has made at most a quarter of its calls.
	killAt := map[int]int{2: 1 + rng.IntN(max(1, size[2]/2)), 3: 1 + rng.IntN(size[3])}
	t.Logf("SIGTERM to shard 2 at its call %d, SIGKILL to shard 3 at its call %d", killAt[2], killAt[3])

	m := newShardModel(shardOf)
	procs := map[int]*exec.Cmd{}
	started := make(chan struct{})
	var once [5]sync.Once
	dead := map[int]chan struct{}{2: make(chan struct{}), 3: make(chan struct{})}
	m.hook = func(sh, n int) {
		if n != killAt[sh] {
			return
		}
		once[sh].Do(func() {
			<-started
			sig := map[int]os.Signal{2: syscall.SIGTERM, 3: syscall.SIGKILL}[sh]
			_ = procs[sh].Process.Signal(sig)
			if sh == 3 {
				<-dead[3] // no answer before it is gone
			}
		})
	}
	srv := llmserver.NewServer(m)
	logs := map[int]*bytes.Buffer{}
	for i := 1; i <= 4; i++ {
		cmd := dagevalProc(t, dir, srv.URL, "run", "suite.yaml", "--shard", fmt.Sprintf("%d/4", i), "--out", fmt.Sprintf("shard-%d", i), "--format", "none")
		logs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = logs[i], logs[i]
		require.NoError(t, cmd.Start())
		procs[i] = cmd
	}
	close(started)
	codes := map[int]int{}
	for i := 1; i <= 4; i++ {
		err := procs[i].Wait()
		if ch, ok := dead[i]; ok {
			close(ch)
		}
		codes[i] = procs[i].ProcessState.ExitCode()
		if i != 3 {
			assert.NoError(t, ignoreExit(err), "shard %d", i)
		}
	}
	srv.Close()
	assert.Equal(t, map[int]int{1: 0, 2: 2, 3: -1, 4: 0}, codes, "shards 1 and 4 pass, 2 was stopped, 3 killed:\n%s\n%s", logs[2], logs[3])
	assert.Contains(t, logs[2].String(), "dageval run: interrupted: ", "SIGTERM stops a run as SIGINT does")
	assert.Contains(t, logs[2].String(), "(dageval run --resume shard-2 continues the run)")
	_, err = os.Stat(filepath.Join(dir, "shard-2", evals.SummaryFile))
	assert.NoError(t, err, "a stopped run writes its summary")
	_, err = os.Stat(filepath.Join(dir, "shard-3", evals.SummaryFile))
	assert.True(t, os.IsNotExist(err), "a killed one does not")

	// The two resume against a fresh server; the finished cells make no call.
	finished := map[string]bool{}
	for _, f := range []string{"shard-2/" + evals.ResultsFile, "shard-3/" + evals.PartialResultsFile} {
		for _, line := range strings.SplitAfter(readString(t, filepath.Join(dir, f)), "\n") {
			var k evals.CellKey
			if strings.HasSuffix(line, "\n") && json.Unmarshal([]byte(line), &k) == nil {
				finished[strings.TrimPrefix(k.Model, "local:")+"|"+k.Case] = true
			}
		}
	}
	m2 := newShardModel(shardOf)
	srv2 := llmserver.NewServer(m2)
	defer srv2.Close()
	for _, i := range []int{2, 3} {
		code, _, errOut := dageval(t, dir, srv2.URL, "run", "--resume", fmt.Sprintf("shard-%d", i), "--format", "none")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, "resuming: ")
	}
	for cell, n := range m2.counts {
		assert.Contains(t, []int{2, 3}, shardOf[cell], "only the resumed shards call")
		assert.Equal(t, 2, n, "cell %s ran once more, whole", cell)
		assert.False(t, finished[cell], "cell %s had finished before, yet ran again", cell)
	}
	assert.Len(t, m2.counts, size[2]+size[3]-len(finished), "every cell that had not finished ran")

	code, out, errOut := dageval(t, dir, srv2.URL, "merge", "merged", "shard-1", "shard-2", "shard-3", "shard-4")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "sharded")

	// One process, the whole matrix.
	srv3 := llmserver.NewServer(newShardModel(shardOf))
	defer srv3.Close()
	code, _, errOut = dageval(t, dir, srv3.URL, "run", "suite.yaml", "--out", "one", "--format", "none")
	require.Equal(t, 0, code, errOut)
	sameRunFiles(t, filepath.Join(dir, "one"), filepath.Join(dir, "merged"))
	for _, f := range []reports.Format{reports.FormatJSON, reports.FormatMD, reports.FormatTable} {
		assert.Equal(t, withoutLatency(rendered(t, filepath.Join(dir, "one"), f)), withoutLatency(rendered(t, filepath.Join(dir, "merged"), f)), "the %s report", f)
	}
	assert.Equal(t, withoutLatency(readString(t, filepath.Join(dir, "one", evals.SummaryMarkdownFile))), withoutLatency(readString(t, filepath.Join(dir, "merged", evals.SummaryMarkdownFile))))

	code, _, errOut = dageval(t, dir, "", "compare", "one", "merged")
	assert.Equal(t, 0, code, "compare accepts a merged run: %s", errOut)
	code, _, errOut = dageval(t, dir, "", "compare", "one", "shard-1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "head: shard-1 is shard 1/4 of a run; merge its shards first")

	// Refusals.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(strings.Replace(shardSuite(11), "name: sharded", "name: other", 1)), 0o644))
	srv4 := llmserver.NewServer(newShardModel(nil))
	defer srv4.Close()
	code, _, errOut = dageval(t, dir, srv4.URL, "run", "other.yaml", "--shard", "1/4", "--out", "other-1", "--format", "none")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = dageval(t, dir, "", "merge", "bad", "shard-1", "other-1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `dageval merge: other-1/run.json: field suite_digest: other-1 is a shard of suite "other"`)
	code, _, errOut = dageval(t, dir, "", "merge", "bad", "shard-1", "shard-2", "one")
	assert.Equal(t, 2, code)
	assert.Regexp(t, `dageval merge: one/results.jsonl:\d+: cell c\d\d/local:m\d/default/e1 is also in shard-[12]/results.jsonl:\d+: the shards overlap`, errOut)
	code, _, errOut = dageval(t, dir, "", "merge", "part", "shard-1", "shard-2")
	assert.Equal(t, 2, code, "missing cells make the merged run errored")
	assert.Regexp(t, `dageval merge: \d+ of 20 cells are in no shard given: `, errOut)
}

// ignoreExit treats a non-zero exit as no error: the codes are checked apart.
func ignoreExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

// rendered is the report dageval report renders of the run in dir.
func rendered(t *testing.T, dir string, f reports.Format) string {
	t.Helper()
	run, err := reports.Load(dir)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, reports.Render(&b, run, f))
	return b.String()
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// latencyText matches what live calls measure in a report, durations and
// latencies, which differ from one run to the next.
var latencyText = regexp.MustCompile(`"(duration_ms|mean_ms|p50_ms|p95_ms|model_ms|first_event_ms)": ?\d+|\d+(\.\d+)? ?(ms|s)\b`)

// withoutLatency replaces them, and the padding their widths give a table.
func withoutLatency(s string) string {
	s = latencyText.ReplaceAllString(s, "…")
	return rules.ReplaceAllString(spaces.ReplaceAllString(s, " "), "-")
}

var spaces, rules = regexp.MustCompile(` +`), regexp.MustCompile(`-+`)

// sameRunFiles checks that two output directories hold the same run, apart
// from durations and latencies.
func sameRunFiles(t *testing.T, want, got string) {
	t.Helper()
	for _, name := range []string{evals.ResultsFile, evals.SummaryFile} {
		assert.Equal(t, withoutTimesJSON(t, filepath.Join(want, name)), withoutTimesJSON(t, filepath.Join(got, name)), name)
	}
	list := func(dir string) []string {
		es, err := os.ReadDir(filepath.Join(dir, evals.CellsDir))
		require.NoError(t, err)
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	require.Equal(t, list(want), list(got))
	for _, n := range list(want) {
		assert.Equal(t, withoutTimesJSON(t, filepath.Join(want, evals.CellsDir, n)), withoutTimesJSON(t, filepath.Join(got, evals.CellsDir, n)), n)
	}
}

func withoutTimesJSON(t *testing.T, path string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(readString(t, path)))
	var b strings.Builder
	for dec.More() {
		var v any
		require.NoError(t, dec.Decode(&v), path)
		line, err := json.Marshal(dropTimes(v))
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func dropTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "duration_ms" || k == "latency" || k == "wait_ms" {
				delete(x, k)
				continue
			}
			x[k] = dropTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropTimes(e)
		}
	}
	return v
}
