package evals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/llm"
)

var durationField = regexp.MustCompile(`"duration_ms":\d+`)

// TestRecordThenReplay records a suite against a local provider, replays it
// offline, and shows what a changed request does to a replay: the cell
// errors with the request's diff, and record-missing records only the new
// cell's cassette.
func TestRecordThenReplay(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{
		"first":  {say("", call("lookup", `{"q":"x"}`)), say("answer one")},
		"second": {say("answer two")},
		"third":  {say("answer three")},
	}}
	srv := server(t, m)
	suite := func(mode string, cases string) string {
		return "version: 1\nname: rec\nproviders: {local: {kind: openai-compatible, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: TEST_KEY}}\n" +
			"mode: " + mode + "\nmodels: [local:m]\nagent: {tools: [{name: lookup}]}\ntools: {lookup: {mock: {result: found}}}\ncases:\n" + cases
	}
	two := "  - {id: one, input: first, checks: [{final_answer: {contains: one}}]}\n  - {id: two, input: second}\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "suite.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o644)) }

	write(suite("record", two))
	recOut := t.TempDir()
	rec := runSuite(t, path, evals.Options{OutDir: recOut})
	assert.Equal(t, "record", rec.Summary.Mode)
	require.Equal(t, 2, rec.Summary.Totals.Passed)
	cassette := filepath.Join(dir, "cassettes", "one--local-m--default--e1.yaml")
	recorded, err := os.ReadFile(cassette)
	require.NoError(t, err)
	assert.NotContains(t, string(recorded), "test-key", "the API key never reaches a cassette")

	// Replay: no server needed, same results.
	srv.Close()
	write(suite("replay", two))
	repOut := t.TempDir()
	rep := runSuite(t, path, evals.Options{OutDir: repOut})
	assert.Equal(t, "replay", rep.Summary.Mode)
	assert.Equal(t, durationField.ReplaceAllString(string(readFile(t, filepath.Join(recOut, evals.ResultsFile))), ""),
		durationField.ReplaceAllString(string(readFile(t, filepath.Join(repOut, evals.ResultsFile))), ""))

	// A changed input changes the first request: a miss, with the diff.
	write(suite("replay", strings.Replace(two, "input: first", "input: \"first, please\"", 1)))
	oc := runSuite(t, path, evals.Options{})
	r := resultOf(t, oc, "one")
	assert.Equal(t, evals.StatusError, r.Status)
	assert.Contains(t, r.Error, "replay miss")
	assert.Contains(t, r.Error, `+`)
	assert.Contains(t, r.Error, "please")
	assert.Equal(t, evals.StatusPass, resultOf(t, oc, "two").Status)
	assert.False(t, oc.Summary.Passed)

	// record-missing records the new case and leaves the others alone.
	srv2 := server(t, m)
	three := two + "  - {id: three, input: third}\n"
	write(strings.Replace(suite("record-missing", three), srv.OpenAIBaseURL(), srv2.OpenAIBaseURL(), 1))
	before := m.callCount()
	oc = runSuite(t, path, evals.Options{})
	require.Equal(t, 3, oc.Summary.Totals.Passed)
	assert.Equal(t, 1, m.callCount()-before, "only the new cell reached the provider")
	after, err := os.ReadFile(cassette)
	require.NoError(t, err)
	assert.Equal(t, string(recorded), string(after))
	assert.FileExists(t, filepath.Join(dir, "cassettes", "three--local-m--default--e1.yaml"))

	// CI=true replays whatever was asked for, except live.
	oc = runSuite(t, path, evals.Options{Mode: recorder.ModeRecord, Getenv: func(k string) string {
		if k == "CI" {
			return "true"
		}
		return testEnv(k)
	}})
	assert.Equal(t, "replay", oc.Summary.Mode)
	assert.Equal(t, "CI=true forces replay (record was requested)", oc.ModeReason)
}

// TestStaleCellFilesArePruned runs into a directory an earlier, larger run
// wrote: its cell files are replaced or removed, other files are kept.
func TestStaleCellFilesArePruned(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{"a": {say("ok")}, "b": {say("ok")}}}
	srv := server(t, m)
	out := t.TempDir()
	base := liveHeader(srv.URL) + "models: [local:m]\nagent: {name: a}\ncases:\n  - {id: a, input: a}\n"
	runSuite(t, writeSuite(t, map[string]string{"suite.yaml": base + "  - {id: b, input: b}\n"}), evals.Options{OutDir: out})
	require.NoError(t, os.WriteFile(filepath.Join(out, "cells", "notes.txt"), []byte("mine"), 0o644))
	runSuite(t, writeSuite(t, map[string]string{"suite.yaml": base}), evals.Options{OutDir: out})
	entries, err := os.ReadDir(filepath.Join(out, "cells"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"a--local-m--default--e1.json", "notes.txt"}, names)
	assert.NoFileExists(t, filepath.Join(out, evals.PartialResultsFile))
	lines := strings.Count(string(readFile(t, filepath.Join(out, evals.ResultsFile))), "\n")
	assert.Equal(t, 1, lines)
}

// gateModel holds every call until want calls are in flight at once, then
// lets every call through, and records the most calls it saw in flight. A
// run that never reaches want concurrent calls fails after a generous wait
// instead of hanging.
type gateModel struct {
	want int
	open chan struct{}

	mu             sync.Mutex
	inFlight, peak int
	opened         bool
}

func newGateModel(want int) *gateModel { return &gateModel{want: want, open: make(chan struct{})} }

func (g *gateModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	g.mu.Lock()
	g.inFlight++
	g.peak = max(g.peak, g.inFlight)
	if g.inFlight == g.want && !g.opened {
		g.opened = true
		close(g.open)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.open:
		return &llm.Response{Message: llm.Assistant("ok")}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("%d calls were never in flight at once", g.want)
	}
}

func (g *gateModel) maxInFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

func TestProviderConcurrencyLimit(t *testing.T) {
	// The gate opens at 2 calls in flight; with the limit no third joins them.
	m := newGateModel(2)
	srv := server(t, m)
	suite := liveHeader(srv.URL) + "models: [local:m]\nagent: {name: a}\nconcurrency: 8\nprovider_concurrency: {local: 2}\nepochs: 8\ncases: [{id: a, input: go}]\n"
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	require.Equal(t, 8, oc.Summary.Totals.Passed)
	assert.Equal(t, 2, m.maxInFlight(), "8 cells in flight, 2 calls at a time")

	// Without a limit the gate opens only once 3 calls overlap.
	m2 := newGateModel(3)
	srv2 := server(t, m2)
	suite = liveHeader(srv2.URL) + "models: [local:m]\nagent: {name: a}\nconcurrency: 8\nepochs: 8\ncases: [{id: a, input: go}]\n"
	oc = runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	require.Equal(t, 8, oc.Summary.Totals.Passed, "without a provider limit the cells' calls overlap")
	assert.GreaterOrEqual(t, m2.maxInFlight(), 3)
}
