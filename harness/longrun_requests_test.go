package harness_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dageval/dageval/harness/llm"
)

var updateLongRun = flag.Bool("update-longrun", false, "rewrite testdata/longrun/*.golden from the current code")

// The long-run goldens pin what the model receives over a whole long run:
// one line per model call with the size and digest of the request, and the
// digest of the final state. They were captured before the per-step costs
// were made independent of the run's length, so they prove that caching and
// structure sharing changed no request. Regenerate only for an intended
// change in what the model sees: go test ./harness/ -run LongRun -update-longrun.

// longRunSteps is the length of the golden runs in process. Over the wire
// (where the local server decodes every request strictly, which is slow
// under the race detector) wireRunSteps cover argument truncation and
// every kind of message; the summaries are pinned in process.
const (
	longRunSteps = 300
	wireRunSteps = 60
)

// longNote is what a golden step writes: a few thousand characters, so that
// old write_file arguments are truncated and the conversation crosses the
// summarization trigger (170 000 tokens without a known window) twice.
func longNote(step int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Notes of step %d\n\n", step)
	for line := 0; b.Len() < 5000; line++ {
		fmt.Fprintf(&b, "- finding %d.%d: the component <%d> & its neighbour behave as documented; nothing to change here yet.\n", step, line, (step*31+line*7)%97)
	}
	return b.String()
}

// approxUsage reports usage the way a provider would, from the request's size.
func approxUsage(req *llm.Request, _ int) llm.Usage {
	raw, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return llm.Usage{InputTokens: len(raw) / 4, OutputTokens: 60}
}

// longRunCases are the golden runs: with and without reported usage (the
// summarization trigger then runs on the calibrated or the estimated
// count) for a model whose window is unknown, and a catalogued model (a
// 1M-token window: nothing is truncated or summarized, every request is
// marked for prompt caching).
var longRunCases = []struct {
	name    string
	id      llm.Identity
	content func(int) string
	usage   func(*llm.Request, int) llm.Usage
}{
	{"uncatalogued-usage", anthropicIdentity, longNote, approxUsage},
	{"uncatalogued-no-usage", anthropicIdentity, longNote, nil},
	{"catalogued", llm.Identity{Provider: "anthropic", Model: "claude-sonnet-4-6"}, shortNote, linearUsage},
}

// TestLongRunRequestsUnchanged runs each golden run in process and compares
// the requests the model saw, call by call, with the golden.
func TestLongRunRequestsUnchanged(t *testing.T) {
	for _, tc := range longRunCases {
		t.Run(tc.name, func(t *testing.T) {
			m := newLongRunModel(tc.id, longRunSteps, tc.content)
			m.usage = tc.usage
			var got bytes.Buffer
			call := 0
			m.record = func(req *llm.Request) {
				raw, err := json.Marshal(req)
				if err != nil {
					t.Fatal(err)
				}
				call++
				digestLine(&got, fmt.Sprintf("call %d", call), raw)
			}
			res := runLongRun(t, newLongRunAgent(t, m, nil), longRunSteps)
			raw, err := json.Marshal(res.State)
			if err != nil {
				t.Fatal(err)
			}
			digestLine(&got, "state", raw)
			checkGolden(t, filepath.Join("testdata", "longrun", tc.name+".golden"), got.Bytes())
		})
	}
}

// TestSummarizingRunRequestsUnchanged is TestLongRunRequestsUnchanged for
// the summarizing run of BenchmarkDeepAgentLoop (a small declared window,
// so the run is summarized every few dozen steps), with one more line per
// history file: the golden pins what the model sees and what the
// summarizations saved across changes to how the history file is written.
func TestSummarizingRunRequestsUnchanged(t *testing.T) {
	m := summarizingModel(longRunSteps)
	var got bytes.Buffer
	call := 0
	m.record = func(req *llm.Request) {
		raw, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		call++
		digestLine(&got, fmt.Sprintf("call %d", call), raw)
	}
	res := runLongRun(t, newWindowAgent(t, m, windowCatalog(t, smallWindow)), longRunSteps)
	histories := 0
	for _, p := range slices.Sorted(maps.Keys(res.State.Files)) {
		if strings.Contains(p, "/conversation_history/") {
			histories++
			digestLine(&got, "file "+p, []byte(res.State.Files[p].Content))
		}
	}
	if histories == 0 {
		t.Fatal("the run saved no conversation history")
	}
	raw, err := json.Marshal(res.State)
	if err != nil {
		t.Fatal(err)
	}
	digestLine(&got, "state", raw)
	checkGolden(t, filepath.Join("testdata", "longrun", "summarizing.golden"), got.Bytes())
}

// TestLongRunWireBodiesUnchanged runs the first golden run, shortened to
// wireRunSteps, over each wire format against the local provider server and compares the request bodies
// the server received with the golden.
func TestLongRunWireBodiesUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("a few hundred HTTP round trips with long histories")
	}
	tc := longRunCases[0]
	for _, api := range wireAPIs {
		t.Run(api.name, func(t *testing.T) {
			m := newLongRunModel(tc.id, wireRunSteps, tc.content)
			m.usage = tc.usage
			srv := localProvider(t, m)
			runLongRun(t, newLongRunAgent(t, api.model(t, srv, tc.id.Model), nil), wireRunSteps)
			var got bytes.Buffer
			for _, r := range srv.Requests() {
				digestLine(&got, fmt.Sprintf("call %d %s", r.Call, r.Path), r.Body)
			}
			checkGolden(t, filepath.Join("testdata", "longrun", "wire-"+api.name+".golden"), got.Bytes())
		})
	}
}

func digestLine(w *bytes.Buffer, label string, raw []byte) {
	sum := sha256.Sum256(raw)
	fmt.Fprintf(w, "%s %d %s\n", label, len(raw), hex.EncodeToString(sum[:12]))
}

// checkGolden compares got with the golden file line by line and names the
// first line that differs.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateLongRun {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with -update-longrun)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		g, w := "", ""
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s: line %d differs:\n got: %s\nwant: %s", path, i+1, g, w)
		}
	}
}
