package evals_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

// childEnv names the suite a child process of a test runs (see TestMain).
const childEnv = "DAGEVAL_EVALS_CHILD"

// childRun runs the suite a parent test names in the environment —
// DAGEVAL_EVALS_CHILD (the suite), DAGEVAL_EVALS_OUT, DAGEVAL_EVALS_RESUME
// — stopping on SIGINT or SIGTERM as dageval run does, so that the parent
// can kill it anywhere.
func childRun() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := evals.Load(os.Getenv(childEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	_, err = s.Run(ctx, evals.Options{
		OutDir: os.Getenv("DAGEVAL_EVALS_OUT"), Resume: os.Getenv("DAGEVAL_EVALS_RESUME") == "1",
		Getenv: childGetenv, ResultsOnDisk: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// childGetenv is testEnv with the local server's address, which changes
// from one process to the next.
func childGetenv(name string) string {
	if name == "DAGEVAL_TEST_URL" {
		return os.Getenv(name)
	}
	return testEnv(name)
}

// cellsModel answers the cells of cellsSuite: each makes two calls, a
// lookup and then the answer. It counts the calls of each cell ("m1|c07":
// the wire model and the case) and, at its killAt-th call, runs kill
// before giving no answer.
type cellsModel struct {
	mu     sync.Mutex
	counts map[string]int
	order  []string // the cell of each call, in arrival order
	calls  int
	killAt int
	kill   func()
	killed bool
}

func newCellsModel() *cellsModel { return &cellsModel{counts: map[string]int{}} }

func (m *cellsModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	served, _ := llmserver.ServedCallFrom(ctx)
	input := ""
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			input = msg.Text()
			break
		}
	}
	id := strings.TrimPrefix(input, "question ")
	m.mu.Lock()
	m.calls++
	m.counts[served.Model+"|"+id]++
	m.order = append(m.order, served.Model+"|"+id)
	kill := m.killAt > 0 && m.calls == m.killAt
	m.killed = m.killed || kill
	m.mu.Unlock()
	if kill {
		m.kill()
		return nil, errors.New("killed")
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
		return &llm.Response{Message: llm.Assistant("The answer to " + id + " is " + last.Text() + ".")}, nil
	}
	return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "call_" + id, Name: "lookup", Args: json.RawMessage(`{"q":"` + id + `"}`)})}, nil
}

func (m *cellsModel) snapshot() (map[string]int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := make(map[string]int, len(m.counts))
	for k, v := range m.counts {
		c[k] = v
	}
	return c, m.killed
}

const callsPerCell = 2

// cellsSuite is n cases × 2 models, live against the local server whose
// address is in DAGEVAL_TEST_URL, 4 cells at a time.
func cellsSuite(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`version: 1
name: big
providers: {local: {kind: openai-compatible, base_url: "${DAGEVAL_TEST_URL}/v1", api_key_env: TEST_KEY}}
mode: live
concurrency: 4
models: [local:m1, local:m2]
agent:
  system_prompt: You look answers up.
  tools: [{name: lookup, description: Looks an answer up., parameters: {type: object, properties: {q: {type: string}}, required: [q]}}]
tools: {lookup: {mock: {result: "42"}}}
` + extra + `cases:
`)
	for i := range n {
		fmt.Fprintf(&b, "  - {id: c%02d, input: \"question c%02d\", checks: [{final_answer: {contains: \"42\"}}, {tool_called: lookup}]}\n", i, i)
	}
	return b.String()
}

// journalCells lists the cells ("m1|c07") with a complete line in the run
// directory's journal, or in results.jsonl once it finished; a torn last
// line is not one.
func journalCells(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, name := range []string{evals.PartialResultsFile, evals.ResultsFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		lines := strings.SplitAfter(string(data), "\n")
		for _, l := range lines {
			if !strings.HasSuffix(l, "\n") {
				continue
			}
			var k evals.CellKey
			require.NoError(t, json.Unmarshal([]byte(l), &k), "%s: %q", name, l)
			key := strings.TrimPrefix(k.Model, "local:") + "|" + k.Case
			if !slices.Contains(out, key) {
				out = append(out, key)
			}
		}
	}
	return out
}

// TestKilledRunResumes kills a live run with SIGKILL at a random point
// (seeded) three times, resuming it each time: no cell is lost or
// repeated, the provider sees each finished cell's calls exactly once
// (only the cells in flight at a kill are asked again), and the output is
// that of a run nobody stopped, apart from durations.
func TestKilledRunResumes(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	const cases = 20
	suite := writeSuite(t, map[string]string{"suite.yaml": cellsSuite(cases, "")})
	out := t.TempDir()
	rng := rand.New(rand.NewPCG(19, 1))
	finishedIn := map[string]int{} // cell → the phase its result became durable in
	for phase := 0; ; phase++ {
		m := newCellsModel()
		if phase < 3 {
			left := (2*cases - len(finishedIn)) * callsPerCell
			m.killAt = 1 + rng.IntN(max(1, left/2))
		}
		// The process reaches the server's goroutines through a channel,
		// which orders its start before their reads.
		started, dead := make(chan *os.Process, 1), make(chan struct{})
		m.kill = func() {
			p := <-started
			_ = p.Signal(syscall.SIGKILL)
			<-dead // answer nothing until the run is gone
		}
		srv := llmserver.NewServer(m)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+suite, "DAGEVAL_EVALS_OUT="+out, "DAGEVAL_TEST_URL="+srv.URL)
		if phase > 0 {
			cmd.Env = append(cmd.Env, "DAGEVAL_EVALS_RESUME=1")
		}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		require.NoError(t, cmd.Start())
		started <- cmd.Process
		err := cmd.Wait()
		close(dead)
		srv.Close()
		counts, killed := m.snapshot()
		done := journalCells(t, out)
		t.Logf("phase %d: kill at call %d; %d calls; %d cells finished", phase, m.killAt, len(m.order), len(done))
		for cell, n := range counts {
			if p, ok := finishedIn[cell]; ok {
				t.Errorf("phase %d: cell %s finished in phase %d, yet the provider saw %d more calls for it", phase, cell, p, n)
			}
		}
		for _, cell := range done {
			if _, ok := finishedIn[cell]; !ok {
				finishedIn[cell] = phase
				assert.Equal(t, callsPerCell, counts[cell], "phase %d: cell %s finished with these calls in the run that finished it", phase, cell)
			}
		}
		if m.killAt == 0 {
			require.NoError(t, err, "the last run:\n%s", stderr.String())
			break
		}
		require.True(t, killed, "phase %d: the run ended before its kill point:\n%s", phase, stderr.String())
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, "signal: killed", ee.Error())
	}
	assert.Len(t, finishedIn, 2*cases, "every cell finished once")
	_, err = os.Stat(filepath.Join(out, evals.PartialResultsFile))
	assert.True(t, os.IsNotExist(err), "a finished run has no journal left")

	// The same suite, never stopped.
	m := newCellsModel()
	srv := llmserver.NewServer(m)
	defer srv.Close()
	s, err := evals.Load(suite)
	require.NoError(t, err)
	ref := t.TempDir()
	_, err = s.Run(t.Context(), evals.Options{OutDir: ref, Getenv: func(k string) string {
		if k == "DAGEVAL_TEST_URL" {
			return srv.URL
		}
		return testEnv(k)
	}})
	require.NoError(t, err)
	sameRun(t, ref, out)
}

// sameRun checks that two output directories hold the same run: the same
// results.jsonl, summary.json and cell files, apart from durations and
// latencies (which live calls measure).
func sameRun(t *testing.T, want, got string) {
	t.Helper()
	for _, name := range []string{evals.ResultsFile, evals.SummaryFile} {
		assert.Equal(t, normalized(t, filepath.Join(want, name)), normalized(t, filepath.Join(got, name)), name)
	}
	names := func(dir string) []string {
		es, err := os.ReadDir(filepath.Join(dir, evals.CellsDir))
		require.NoError(t, err)
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	require.Equal(t, names(want), names(got), "cell files")
	for _, n := range names(want) {
		assert.Equal(t, normalized(t, filepath.Join(want, evals.CellsDir, n)), normalized(t, filepath.Join(got, evals.CellsDir, n)), n)
	}
}

// normalized is a JSON or JSONL file with its durations and latencies
// left out, one value a line.
func normalized(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	var b strings.Builder
	for dec.More() {
		var v any
		require.NoError(t, dec.Decode(&v), path)
		line, err := json.Marshal(withoutTimes(v))
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func withoutTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "duration_ms", "latency", "wait_ms":
				delete(x, k)
			default:
				x[k] = withoutTimes(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = withoutTimes(e)
		}
	}
	return v
}

// urlEnv is testEnv with a local server's address for DAGEVAL_TEST_URL.
func urlEnv(url string) func(string) string {
	return func(k string) string {
		if k == "DAGEVAL_TEST_URL" {
			return url
		}
		return testEnv(k)
	}
}

// TestShardsMergeIntoOneRun runs a suite in four shards — one of them
// interrupted and resumed — and merges them into what one run writes;
// merge refuses a shard of another suite and shards that overlap, and
// reports the cells of a shard it was not given as missing.
func TestShardsMergeIntoOneRun(t *testing.T) {
	m := newCellsModel()
	srv := llmserver.NewServer(m)
	defer srv.Close()
	env := urlEnv(srv.URL)
	path := writeSuite(t, map[string]string{"suite.yaml": cellsSuite(10, "")})
	s, err := evals.Load(path)
	require.NoError(t, err)
	one := t.TempDir()
	whole, err := s.Run(t.Context(), evals.Options{OutDir: one, Getenv: env})
	require.NoError(t, err)
	require.True(t, whole.Summary.Passed)

	root := t.TempDir()
	var dirs []string
	var seen []evals.CellKey
	for i := 1; i <= 4; i++ {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i))
		dirs = append(dirs, dir)
		sh := evals.Shard{Index: i, Count: 4}
		o := evals.Options{OutDir: dir, Getenv: env, Shard: sh}
		if i == 2 {
			// Interrupted after two cells, as SIGTERM does, then resumed;
			// one cell at a time, so that no other cell finishes meanwhile.
			o.Concurrency = 1
			ctx, cancel := context.WithCancel(t.Context())
			n := 0
			o.OnCell = func(evals.CellResult) {
				if n++; n == 2 {
					cancel()
				}
			}
			rr, err := s.Run(ctx, o)
			require.ErrorIs(t, err, context.Canceled)
			require.NotNil(t, rr)
			assert.Equal(t, &sh, rr.Summary.Shard)
			assert.False(t, rr.Summary.Complete)
			o.OnCell, o.Resume, o.Concurrency = nil, true, 0
		}
		rr, err := s.Run(t.Context(), o)
		require.NoError(t, err)
		assert.Equal(t, &sh, rr.Summary.Shard, "a shard's summary says so")
		assert.True(t, rr.Summary.Complete)
		for _, r := range rr.Results {
			seen = append(seen, r.CellKey)
		}
	}
	assert.Len(t, seen, 20)
	assert.Len(t, slices.Compact(slices.SortedFunc(slices.Values(seen), func(a, b evals.CellKey) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })), 20, "the shards are disjoint")

	merged := t.TempDir()
	rr, err := s.Merge(merged, dirs, evals.MergeOptions{})
	require.NoError(t, err)
	assert.True(t, rr.Summary.Passed)
	assert.Nil(t, rr.Summary.Shard)
	sameRun(t, one, merged)

	t.Run("another suite", func(t *testing.T) {
		other, err := evals.Load(writeSuite(t, map[string]string{"suite.yaml": cellsSuite(11, "")}))
		require.NoError(t, err)
		_, err = other.Merge(t.TempDir(), dirs, evals.MergeOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), filepath.Join(dirs[0], evals.ManifestFile)+": field suite_digest: "+dirs[0]+` is a shard of suite "big"`)
	})
	t.Run("overlapping shards", func(t *testing.T) {
		_, err := s.Merge(t.TempDir(), []string{dirs[0], dirs[1], one}, evals.MergeOptions{})
		require.Error(t, err)
		assert.Regexp(t, `^`+regexpQuote(filepath.Join(one, evals.ResultsFile))+`:\d+: cell c\d\d/local:m\d/default/e1 is also in `+regexpQuote(root)+`/shard-[12]/results.jsonl:\d+: the shards overlap`, err.Error())
	})
	t.Run("a shard left out", func(t *testing.T) {
		rr, err := s.Merge(t.TempDir(), dirs[:3], evals.MergeOptions{})
		require.NoError(t, err)
		assert.Equal(t, evals.OutcomeErrored, rr.Summary.Outcome)
		assert.Len(t, rr.Summary.Missing, len(s.Shard(mustCells(t, s), evals.Shard{Index: 4, Count: 4})))
	})
	t.Run("into a shard", func(t *testing.T) {
		_, err := s.Merge(dirs[0], dirs, evals.MergeOptions{})
		assert.ErrorContains(t, err, "is one of the shards")
	})
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func mustCells(t *testing.T, s *evals.Suite) []evals.Cell {
	t.Helper()
	cells, err := s.Cells("", 0)
	require.NoError(t, err)
	return cells
}

// Shards are disjoint, cover the matrix, and are balanced by expected
// cost: every shard gets its share of the expensive model's cells, not
// the first cells of the matrix.
func TestShardsAreBalancedByCost(t *testing.T) {
	extra := `epochs: 3
models:
  - {spec: local:cheap, prices: {input_per_mtok: 0.1, output_per_mtok: 0.4}}
  - {spec: local:dear, prices: {input_per_mtok: 15, output_per_mtok: 75}}
`
	src := strings.Replace(cellsSuite(7, extra), "models: [local:m1, local:m2]\n", "", 1)
	s, err := evals.Load(writeSuite(t, map[string]string{"suite.yaml": src}))
	require.NoError(t, err)
	cells := mustCells(t, s)
	require.Len(t, cells, 42)
	pos := map[string]int{}
	for i, c := range cells {
		pos[c.ID] = i
	}
	var all []string
	var loads []float64
	for i := 1; i <= 4; i++ {
		part := s.Shard(cells, evals.Shard{Index: i, Count: 4})
		again := s.Shard(mustCells(t, s), evals.Shard{Index: i, Count: 4})
		require.Equal(t, part, again, "deterministic")
		dear := 0
		for _, c := range part {
			all = append(all, c.ID)
			if c.Model == "local:dear" {
				dear++
			}
		}
		assert.InDelta(t, 21.0/4, dear, 1, "shard %d has its share of the dear model's cells", i)
		// A cell weighs 1 plus a tenth of its model's price per million tokens.
		loads = append(loads, float64(dear)*10+float64(len(part)-dear)*1.05)
		assert.True(t, slices.IsSortedFunc(part, func(a, b evals.Cell) int { return pos[a.ID] - pos[b.ID] }), "in matrix order")
	}
	slices.Sort(all)
	assert.Len(t, slices.Compact(all), 42, "disjoint and complete")
	assert.LessOrEqual(t, slices.Max(loads)-slices.Min(loads), 10.0, "the loads differ by at most one cell: %v", loads)

	sh, err := evals.ParseShard("2/4")
	require.NoError(t, err)
	assert.Equal(t, evals.Shard{Index: 2, Count: 4}, sh)
	for _, bad := range []string{"0/4", "5/4", "2", "a/b", "1/0"} {
		_, err := evals.ParseShard(bad)
		assert.Error(t, err, bad)
	}
}

// --retry-errors runs only the errored cells again.
func TestRetryErrors(t *testing.T) {
	path := writeSuite(t, map[string]string{"suite.yaml": cellsSuite(5, "")})
	s, err := evals.Load(path)
	require.NoError(t, err)
	out := t.TempDir()
	m := newCellsModel()
	srv := llmserver.NewServer(m)
	srv.FailOn(3, faultBadRequest)
	rr, err := s.Run(t.Context(), evals.Options{OutDir: out, Getenv: urlEnv(srv.URL), Concurrency: 1})
	srv.Close()
	require.NoError(t, err)
	require.Equal(t, 1, rr.Summary.Totals.Errors)
	errored := ""
	for _, r := range rr.Results {
		if r.Status == evals.StatusError {
			errored = strings.TrimPrefix(r.Model, "local:") + "|" + r.Case
		}
	}

	m = newCellsModel()
	srv = llmserver.NewServer(m)
	defer srv.Close()
	var progress bytes.Buffer
	rr, err = s.Run(t.Context(), evals.Options{OutDir: out, Getenv: urlEnv(srv.URL), RetryErrors: true, Progress: &progress})
	require.NoError(t, err)
	assert.True(t, rr.Summary.Passed, "%v", rr.Summary.Reasons)
	counts, _ := m.snapshot()
	assert.Equal(t, map[string]int{errored: callsPerCell}, counts, "only the errored cell ran again")
	assert.Contains(t, progress.String(), "resuming: 9 of 10 cells finished earlier; running 1 (1 errored cells again)")
	assert.Len(t, rr.Results, 10, "the run's results include the earlier cells")
}

// Resuming drops a torn last line (its cell runs again) and refuses a run
// started with other options or from a changed suite.
func TestResumeChecks(t *testing.T) {
	path := writeSuite(t, map[string]string{"suite.yaml": cellsSuite(3, "")})
	s, err := evals.Load(path)
	require.NoError(t, err)
	m := newCellsModel()
	srv := llmserver.NewServer(m)
	defer srv.Close()
	env := urlEnv(srv.URL)
	out := t.TempDir()
	_, err = s.Run(t.Context(), evals.Options{OutDir: out, Getenv: env})
	require.NoError(t, err)

	// Make it a run killed while writing its fourth line.
	lines := strings.SplitAfter(string(readFile(t, filepath.Join(out, evals.ResultsFile))), "\n")
	torn := strings.Join(lines[:3], "") + lines[3][:len(lines[3])/2]
	require.NoError(t, os.WriteFile(filepath.Join(out, evals.PartialResultsFile), []byte(torn), 0o644))
	require.NoError(t, os.Remove(filepath.Join(out, evals.ResultsFile)))
	require.NoError(t, os.Remove(filepath.Join(out, evals.SummaryFile)))
	before, _ := m.snapshot()
	rr, err := s.Run(t.Context(), evals.Options{OutDir: out, Getenv: env, Resume: true})
	require.NoError(t, err)
	assert.True(t, rr.Summary.Complete)
	after, _ := m.snapshot()
	ran := 0
	for k, v := range after {
		ran += v - before[k]
	}
	assert.Equal(t, 3*callsPerCell, ran, "the torn line's cell and the two without a line ran again")

	_, err = s.Run(t.Context(), evals.Options{OutDir: out, Getenv: env, Resume: true, Filter: "c0*"})
	assert.ErrorContains(t, err, filepath.Join(out, evals.ManifestFile)+`: field filter: the run was started with "", this one has "c0*"`)
	_, err = s.Run(t.Context(), evals.Options{OutDir: out, Getenv: env, Resume: true, Shard: evals.Shard{Index: 1, Count: 2}})
	assert.ErrorContains(t, err, "field shard: the run was started with the whole matrix, this one has shard 1/2")
	changed, err := evals.Load(writeSuite(t, map[string]string{"suite.yaml": cellsSuite(4, "")}))
	require.NoError(t, err)
	_, err = changed.Run(t.Context(), evals.Options{OutDir: out, Getenv: env, Resume: true})
	assert.ErrorContains(t, err, "field suite_digest")
	_, err = s.Run(t.Context(), evals.Options{OutDir: t.TempDir(), Getenv: env, Resume: true})
	assert.ErrorContains(t, err, "holds no run that can be resumed")
}

// TestResumeChecksCellFiles: each journal line records the size and
// SHA-256 of its cell's file, since no cell waits for its file to reach
// the disk while a run goes on. Resuming a run whose machine crashed runs
// again the cells whose file is missing, truncated or changed and those
// whose line is torn or garbled — even when results.jsonl still names one of them — and keeps
// the others without a provider call; the finished run is that of a run
// nobody stopped, and its results.jsonl has no cell_file members.
func TestResumeChecksCellFiles(t *testing.T) {
	path := writeSuite(t, map[string]string{"suite.yaml": cellsSuite(6, "")})
	s, err := evals.Load(path)
	require.NoError(t, err)

	// The state of a run that lost its machine while its twelfth (last)
	// cell ran, one cell at a time.
	out, snap := t.TempDir(), filepath.Join(t.TempDir(), "crashed")
	m := newCellsModel()
	m.killAt = 11*callsPerCell + 1
	m.kill = func() { require.NoError(t, os.CopyFS(snap, os.DirFS(out))) }
	srv := llmserver.NewServer(m)
	_, err = s.Run(t.Context(), evals.Options{OutDir: out, Getenv: urlEnv(srv.URL), Concurrency: 1})
	srv.Close()
	require.NoError(t, err)

	type line struct {
		evals.CellKey
		ID       string `json:"id"`
		CellFile struct {
			Bytes  int64  `json:"bytes"`
			SHA256 string `json:"sha256"`
		} `json:"cell_file"`
		raw string
	}
	var lines []line
	byCell := map[string]*line{}
	for _, l := range strings.SplitAfter(string(readFile(t, filepath.Join(snap, evals.PartialResultsFile))), "\n") {
		if l == "" {
			continue
		}
		var ln line
		require.NoError(t, json.Unmarshal([]byte(l), &ln))
		ln.raw = l
		lines = append(lines, ln)
	}
	require.Len(t, lines, 11)
	for i := range lines {
		l := &lines[i]
		byCell[strings.TrimPrefix(l.Model, "local:")+"|"+l.Case] = l
		data := readFile(t, filepath.Join(snap, evals.CellsDir, l.ID+".json"))
		sum := sha256.Sum256(data)
		assert.Equal(t, int64(len(data)), l.CellFile.Bytes, l.ID)
		assert.Equal(t, hex.EncodeToString(sum[:]), l.CellFile.SHA256, l.ID)
	}
	cellFile := func(cell string) string { return filepath.Join(snap, evals.CellsDir, byCell[cell].ID+".json") }

	// m1|c00: one byte changed, the file still JSON of the same size.
	data := readFile(t, cellFile("m1|c00"))
	k := bytes.Index(data, []byte("The answer"))
	require.GreaterOrEqual(t, k, 0)
	data[k] = 't'
	require.NoError(t, os.WriteFile(cellFile("m1|c00"), data, 0o644))
	// m2|c00: truncated; m1|c01: missing.
	require.NoError(t, os.Truncate(cellFile("m2|c00"), byCell["m2|c00"].CellFile.Bytes/2))
	require.NoError(t, os.Remove(cellFile("m1|c01")))
	// m2|c01: its line torn, the last; m1|c02: its line zeroes.
	var journal strings.Builder
	for _, l := range lines {
		switch cell := strings.TrimPrefix(l.Model, "local:") + "|" + l.Case; cell {
		case "m2|c01":
		case "m1|c02":
			journal.WriteString(strings.Repeat("\x00", len(l.raw)-1) + "\n")
		default:
			journal.WriteString(l.raw)
		}
	}
	torn := byCell["m2|c01"].raw
	journal.WriteString(torn[:len(torn)/2])
	require.NoError(t, os.WriteFile(filepath.Join(snap, evals.PartialResultsFile), []byte(journal.String()), 0o644))
	// results.jsonl of a run interrupted after the crash still names m1|c00.
	a := byCell["m1|c00"].raw
	require.NoError(t, os.WriteFile(filepath.Join(snap, evals.ResultsFile), []byte(a[:strings.LastIndex(a, `,"cell_file":`)]+"}\n"), 0o644))

	m = newCellsModel()
	srv = llmserver.NewServer(m)
	defer srv.Close()
	var progress bytes.Buffer
	_, err = s.Run(t.Context(), evals.Options{OutDir: snap, Getenv: urlEnv(srv.URL), Resume: true, Progress: &progress})
	require.NoError(t, err)
	counts, _ := m.snapshot()
	want := map[string]int{}
	for _, cell := range []string{"m1|c00", "m2|c00", "m1|c01", "m2|c01", "m1|c02", "m2|c05"} {
		want[cell] = callsPerCell
	}
	assert.Equal(t, want, counts, "only the damaged cells and the one in flight ran again")
	assert.Contains(t, progress.String(), "resuming: 6 of 12 cells finished earlier; running 6 (3 whose cell files were missing or damaged) (1 garbled lines in the journal)")
	assert.NotContains(t, string(readFile(t, filepath.Join(snap, evals.ResultsFile))), "cell_file")

	ref := t.TempDir()
	_, err = s.Run(t.Context(), evals.Options{OutDir: ref, Getenv: urlEnv(srv.URL)})
	require.NoError(t, err)
	sameRun(t, ref, snap)
}

// throttler answers 429 with Retry-After: 2 to every request that arrives
// in the two seconds from its from-th request on, and records, for each
// request, its status and how many others were in flight when it came.
type throttler struct {
	next http.Handler
	from int

	mu       sync.Mutex
	n        int
	inflight int
	until    time.Time
	log      []throttled
}

type throttled struct {
	status   int
	inflight int
}

func (th *throttler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	th.mu.Lock()
	th.n++
	if th.n == th.from {
		th.until = time.Now().Add(2 * time.Second)
	}
	busy := time.Now().Before(th.until)
	th.log = append(th.log, throttled{status: map[bool]int{true: 429, false: 200}[busy], inflight: th.inflight})
	th.inflight++
	th.mu.Unlock()
	defer func() {
		th.mu.Lock()
		th.inflight--
		th.mu.Unlock()
	}()
	if busy {
		w.Header().Set("Retry-After", "2")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached; retry later.","type":"requests","code":"rate_limit_exceeded"}}`))
		return
	}
	th.next.ServeHTTP(w, r)
}

// TestRateLimitPausesEveryCell has the provider throttle the run for two
// seconds: the run's limiter pauses every cell's calls, not each cell
// retrying on its own, so only the calls already in flight are throttled,
// the first call after the pause goes alone, and every cell passes. No
// assertion is about time, only about counts and order.
func TestRateLimitPausesEveryCell(t *testing.T) {
	th := &throttler{next: llmserver.NewUnstartedServer(newCellsModel()), from: 6}
	srv := httptest.NewServer(th)
	defer srv.Close()
	const conc = 4
	path := writeSuite(t, map[string]string{"suite.yaml": cellsSuite(8, "rate_limits: {local: {requests_per_minute: 60000}}\n")})
	s, err := evals.Load(path)
	require.NoError(t, err)
	var progress bytes.Buffer
	rr, err := s.Run(t.Context(), evals.Options{OutDir: t.TempDir(), Getenv: urlEnv(srv.URL), Progress: &progress, Concurrency: conc})
	require.NoError(t, err)
	assert.True(t, rr.Summary.Passed, "every cell passes: %v", rr.Summary.Reasons)

	th.mu.Lock()
	log := slices.Clone(th.log)
	th.mu.Unlock()
	first, throttledN := -1, 0
	for i, r := range log {
		if r.status == 429 {
			throttledN++
			if first < 0 {
				first = i
			}
		}
	}
	require.GreaterOrEqual(t, first, 0, "the provider throttled")
	assert.LessOrEqual(t, throttledN, conc, "only the calls in flight when throttling began were throttled: %v", log)
	after := first + throttledN
	require.Less(t, after+1, len(log))
	for _, r := range log[first:after] {
		assert.Equal(t, 429, r.status, "the throttled calls came together: %v", log)
	}
	assert.Equal(t, throttled{status: 200, inflight: 0}, log[after], "after the pause one call goes alone: %v", log)
	assert.Zero(t, log[after+1].inflight, "and the others follow once it has its answer: %v", log)
	assert.Equal(t, callsPerCell*16+throttledN, len(log), "no call was repeated but the throttled ones")

	require.Len(t, rr.Summary.RateLimits, 1)
	rl := rr.Summary.RateLimits[0]
	assert.Equal(t, "local", rl.Provider)
	assert.Equal(t, throttledN, rl.Throttled, "the summary counts the throttling")
	assert.GreaterOrEqual(t, rl.Waits, conc, "every cell in flight waited for the pause")
	assert.Positive(t, rl.WaitMS)
	assert.Contains(t, progress.String(), "rate limit: local asked to retry after 2s; every call to local pauses for 2s")
	assert.Contains(t, progress.String(), "waiting for rate limits)")
}

func TestRateLimitsInTheSuite(t *testing.T) {
	s, err := evals.Load(writeSuite(t, map[string]string{"suite.yaml": cellsSuite(1, "rate_limits: {local: {requests_per_minute: 50, tokens_per_minute: 40000}}\n")}))
	require.NoError(t, err)
	assert.Equal(t, 50.0, s.RateLimits["local"].RequestsPerMinute)
	assert.Equal(t, 40000.0, s.RateLimits["local"].TokensPerMinute)
	for _, tt := range []struct{ yaml, err string }{
		{"rate_limits: {nope: {requests_per_minute: 1}}\n", `rate_limits.nope: unknown provider "nope"`},
		{"rate_limits: {local: {requests_per_minute: -1}}\n", "rate_limits.local.requests_per_minute: requests_per_minute must be a positive number, got -1"},
		{"rate_limits: {local: {}}\n", "rate_limits.local: give requests_per_minute, tokens_per_minute or both"},
		{"rate_limits: {local: {rpm: 3}}\n", "rpm"},
	} {
		_, err := evals.Load(writeSuite(t, map[string]string{"suite.yaml": cellsSuite(1, tt.yaml)}))
		require.Error(t, err, tt.yaml)
		assert.Contains(t, err.Error(), tt.err)
		assert.Regexp(t, `suite\.yaml:1[0-9]:\d+: `, err.Error(), "the error is at its line")
	}
}

// KeepResults fills a ResultsOnDisk run's Results with results.jsonl's
// lines decoded, a resumed run's earlier cells included, and leaves its
// Details empty.
func TestKeepResults(t *testing.T) {
	path := writeSuite(t, map[string]string{"suite.yaml": cellsSuite(5, "")})
	s, err := evals.Load(path)
	require.NoError(t, err)
	out := t.TempDir()
	srv := llmserver.NewServer(newCellsModel())
	srv.FailOn(3, faultBadRequest)
	o := evals.Options{OutDir: out, Getenv: urlEnv(srv.URL), Concurrency: 1, ResultsOnDisk: true, KeepResults: true}
	first, err := s.Run(t.Context(), o)
	srv.Close()
	require.NoError(t, err)
	require.Equal(t, 1, first.Summary.Totals.Errors)
	assertResultsAreTheLines(t, out, first)

	srv = llmserver.NewServer(newCellsModel())
	defer srv.Close()
	o.Getenv, o.RetryErrors = urlEnv(srv.URL), true
	again, err := s.Run(t.Context(), o)
	require.NoError(t, err)
	require.Zero(t, again.Summary.Totals.Errors)
	assertResultsAreTheLines(t, out, again)

	o.KeepResults, o.RetryErrors, o.OutDir = false, false, t.TempDir()
	onDisk, err := s.Run(t.Context(), o)
	require.NoError(t, err)
	assert.Empty(t, onDisk.Results, "ResultsOnDisk alone keeps no results")
}

func assertResultsAreTheLines(t *testing.T, out string, rr *evals.RunResult) {
	t.Helper()
	var lines []evals.CellResult
	for _, l := range bytes.SplitAfter(readFile(t, filepath.Join(out, evals.ResultsFile)), []byte("\n")) {
		if len(l) > 0 {
			var r evals.CellResult
			require.NoError(t, json.Unmarshal(l, &r))
			lines = append(lines, r)
		}
	}
	require.Len(t, lines, 10)
	assert.Equal(t, lines, rr.Results)
	assert.Empty(t, rr.Details, "the details stay on disk")
}
