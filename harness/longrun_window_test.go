package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
)

// A windowed long run is a long run whose old write_file arguments are
// truncated on every call, and, with a small declared context window, one
// that SummarizationMiddleware summarizes every few dozen steps: what the
// model sees is then not the state's history but a view of it, which prompt
// caching marks.

// smallWindow is the context window declared for the summarizing runs: a
// few dozen steps of midNote fit in it.
const smallWindow = 40_000

// midNote is what a windowed step writes: a little over the 2000
// characters past which old write_file arguments are truncated.
func midNote(step int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Notes of step %d\n\n", step)
	for line := 0; b.Len() < 2400; line++ {
		fmt.Fprintf(&b, "- finding %d.%d: the component <%d> behaves as documented.\n", step, line, (step*31+line*7)%97)
	}
	return b.String()
}

// windowCatalog declares the scripted Anthropic model with a context window
// of window tokens.
func windowCatalog(tb testing.TB, window int) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.Default().With(catalog.Declaration{Spec: anthropicIdentity.String(), ContextWindow: window})
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// newWindowAgent is newLongRunAgent with a catalog and caller middleware.
func newWindowAgent(tb testing.TB, model llm.ChatModel, cat *catalog.Catalog, mws ...agent.Middleware) *harness.Agent {
	tb.Helper()
	a, err := harness.New(harness.Config{Model: model, Profiles: profile.NewRegistry(profile.WithPlugins()), Catalog: cat, Middleware: mws})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// truncatingModel plays a long run on an Anthropic model whose window is
// unknown: old write_file arguments are truncated from the twentieth
// message on, and the reported usage keeps the run below the 170 000-token
// summarization trigger.
func truncatingModel(steps int) *longRunModel {
	m := newLongRunModel(anthropicIdentity, steps, midNote)
	m.usage = linearUsage
	return m
}

// summarizingModel plays a long run for an agent whose catalog gives the
// model smallWindow tokens: the run is truncated and summarized over and
// over, on estimated token counts.
func summarizingModel(steps int) *longRunModel {
	return newLongRunModel(anthropicIdentity, steps, midNote)
}

// recomputing is the default SummarizationMiddleware handed a copy of the
// history on every call: nothing then vouches that the messages never
// change, so it, prompt caching and memory compute every call from scratch
// (the straightforward recomputation) instead of extending the previous
// call's work.
type recomputing struct {
	*middleware.SummarizationMiddleware
}

func (r recomputing) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	c := req.Clone()
	c.Messages = slices.Clone(req.Messages)
	return r.SummarizationMiddleware.WrapModelCall(ctx, c, next)
}

// TestWindowedRunRequestsUnchanged runs windowed long runs through the
// default stack (with memory, whose cache breakpoint counts the request's
// breakpoints) twice: as assembled, where summarization, prompt caching and
// memory extend the previous call's lists, and with every call recomputed
// from scratch; the model must receive byte-identical requests.
func TestWindowedRunRequestsUnchanged(t *testing.T) {
	const steps = 150
	cases := []struct {
		name   string
		window int // 0: unknown
		model  func() *longRunModel
	}{
		{"truncating", 0, func() *longRunModel { return truncatingModel(steps) }},
		{"summarizing", smallWindow, func() *longRunModel { return summarizingModel(steps) }},
		{"summarizing-usage", smallWindow, func() *longRunModel {
			m := summarizingModel(steps)
			m.usage = approxUsage
			return m
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cat := catalog.Default()
			if tc.window > 0 {
				cat = windowCatalog(t, tc.window)
			}
			run := func(recompute bool) [][]byte {
				m := tc.model()
				var reqs [][]byte
				m.record = func(req *llm.Request) {
					raw, err := json.Marshal(req)
					if err != nil {
						t.Fatal(err)
					}
					reqs = append(reqs, raw)
				}
				cfg := harness.Config{Model: m, Profiles: profile.NewRegistry(profile.WithPlugins()), Catalog: cat, Memory: []string{"/AGENTS.md"}}
				if recompute {
					s, err := middleware.NewSummarization(middleware.SummarizationOptions{Backend: backend.NewState(), Model: m, ContextWindow: cat.ContextWindow})
					if err != nil {
						t.Fatal(err)
					}
					cfg.Middleware = []agent.Middleware{recomputing{s}}
				}
				a, err := harness.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				runLongRun(t, a, steps)
				return reqs
			}
			got, want := run(false), run(true)
			summaries, truncated, marked := 0, 0, 0
			for i := range max(len(got), len(want)) {
				if i >= len(got) || i >= len(want) {
					t.Fatalf("%d model calls, want %d", len(got), len(want))
				}
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("call %d differs:\n got: %.600s\nwant: %.600s", i+1, got[i], want[i])
				}
				var req llm.Request
				if err := json.Unmarshal(got[i], &req); err != nil {
					t.Fatal(err)
				}
				if len(req.Tools) == 0 {
					summaries++
					continue
				}
				if bytes.Contains(got[i], []byte("(argument truncated)")) {
					truncated++
				}
				if last := req.Messages[len(req.Messages)-1].Content; last[len(last)-1].CacheControl != nil {
					marked++
				}
			}
			if tc.window > 0 && summaries < 2 {
				t.Errorf("%d summaries; the run should summarize more than once", summaries)
			}
			if truncated < 5 {
				t.Errorf("%d of %d calls carry truncated arguments", truncated, len(got))
			}
			if marked < len(got)-summaries {
				t.Errorf("prompt caching marked the latest message of %d of %d agent calls", marked, len(got)-summaries)
			}
			t.Logf("%d calls, %d summaries, %d with truncated arguments", len(got), summaries, truncated)
		})
	}
}
