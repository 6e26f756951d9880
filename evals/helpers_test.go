package evals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

// convModel is a scripted model for a local llmserver.Server: conversations are
// told apart by their first user message (a case's input, or the task a
// subagent was given), and the n-th call of a conversation gets the n-th
// reply. The rubric grader (a request offering GraderResponse) is answered
// by grade, which passes every criterion unless told otherwise.
type convModel struct {
	mu    sync.Mutex
	convs map[string][]llm.Message
	// grade decides a criterion from the transcript; nil passes it.
	grade func(criterion, transcript string) (passed bool, gap string)
	calls int
}

func (m *convModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	for _, s := range req.Tools {
		if s.Name == "GraderResponse" {
			return m.grader(req)
		}
	}
	first, n := "", 0
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleUser && first == "" {
			first = msg.Text()
		}
		if msg.Role == llm.RoleAssistant {
			n++
		}
	}
	replies, ok := m.convs[first]
	if !ok {
		return nil, fmt.Errorf("convModel: no conversation starts with %q", first)
	}
	if n >= len(replies) {
		return nil, fmt.Errorf("convModel: conversation %q has %d replies, call %d asked", first, len(replies), n+1)
	}
	return &llm.Response{Message: replies[n]}, nil
}

// callCount is how many calls the model answered.
func (m *convModel) callCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

var (
	rubricBlock     = regexp.MustCompile(`(?s)<rubric-[0-9a-f]+>\n(.*?)\n</rubric-`)
	transcriptBlock = regexp.MustCompile(`(?s)<transcript-[0-9a-f]+>\n(.*?)\n</transcript-`)
	criterionLine   = regexp.MustCompile(`(?m)^- ([^:(]+?)(?: \(weight [^)]*\))?: `)
)

func (m *convModel) grader(req *llm.Request) (*llm.Response, error) {
	payload := req.Messages[0].Text()
	rb, tb := rubricBlock.FindStringSubmatch(payload), transcriptBlock.FindStringSubmatch(payload)
	if rb == nil || tb == nil {
		return nil, fmt.Errorf("convModel: not a grader payload")
	}
	type verdict struct {
		Name   string `json:"name"`
		Passed bool   `json:"passed"`
		Gap    string `json:"gap,omitempty"`
	}
	var vs []verdict
	result := "satisfied"
	for _, c := range criterionLine.FindAllStringSubmatch(rb[1], -1) {
		v := verdict{Name: c[1], Passed: true}
		if m.grade != nil {
			v.Passed, v.Gap = m.grade(c[1], tb[1])
		}
		if !v.Passed {
			result = "needs_revision"
		}
		vs = append(vs, v)
	}
	args, _ := json.Marshal(map[string]any{"result": result, "explanation": "graded by rule", "criteria": vs})
	return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "GraderResponse", Args: args})}, nil
}

// say is an assistant reply with text and optional tool calls.
func say(text string, calls ...llm.ToolCall) llm.Message { return llm.Assistant(text, calls...) }

// call is a tool call with JSON arguments.
func call(name, args string) llm.ToolCall {
	return llm.ToolCall{Name: name, Args: json.RawMessage(args)}
}

// server starts a local provider answering with m.
func server(t *testing.T, m llm.ChatModel) *llmserver.Server {
	t.Helper()
	s := llmserver.NewServer(m)
	t.Cleanup(s.Close)
	return s
}

// liveHeader is the top of a suite that runs live against a local
// OpenAI-compatible server as provider "local".
func liveHeader(url string) string {
	return fmt.Sprintf("version: 1\nname: test\nproviders: {local: {kind: openai-compatible, base_url: %q, api_key_env: TEST_KEY}}\nmode: live\n", url+"/v1")
}

// writeSuite writes files (relative paths) into a new directory and returns
// the path of its suite.yaml.
func writeSuite(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// testEnv is the environment of test runs: a key for the local server
// (which wants one) and nothing else, so CI=true around the tests changes
// nothing.
func testEnv(name string) string {
	if name == "TEST_KEY" {
		return "test-key"
	}
	return ""
}

// runSuite loads and runs a suite, failing the test on a run error.
func runSuite(t *testing.T, path string, o evals.Options) *evals.RunResult {
	t.Helper()
	s, err := evals.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if o.Getenv == nil {
		o.Getenv = testEnv
	}
	oc, err := s.Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return oc
}

// resultOf finds a case's first result.
func resultOf(t *testing.T, oc *evals.RunResult, caseID string) evals.CellResult {
	t.Helper()
	for _, r := range oc.Results {
		if r.Case == caseID {
			return r
		}
	}
	t.Fatalf("no result for case %s", caseID)
	return evals.CellResult{}
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// faultBadRequest is an error answer that is not retried.
var faultBadRequest = llmserver.Fault{Status: 400}
