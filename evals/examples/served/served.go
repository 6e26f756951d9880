package served

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/internal/recording"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/agentserver"
	"github.com/dageval/dageval/harness/llm"
)

// URLEnv is the variable the lead agent file reads the researcher's
// address from.
const URLEnv = "RESEARCHER_URL"

// LeadModel plays the lead agent the cassettes were recorded against: the
// case's input picks a plan of async tool calls, one per turn, each built
// from what the earlier ones answered, and the final answer reports the
// last results.
func LeadModel() llm.ChatModel { return lead{} }

type lead struct{}

var launched = regexp.MustCompile(`^Launched async subagent\. task_id: (\S+)$`)

// step is one turn of a plan: the tool to call and its arguments, given
// the ids of the tasks started so far.
type step struct {
	tool string
	args func(ids []string) map[string]any
}

func start(description string) step {
	return step{"start_async_task", func([]string) map[string]any {
		return map[string]any{"description": description, "subagent_type": "researcher"}
	}}
}

func onTask(tool string, i int, extra map[string]any) step {
	return step{tool, func(ids []string) map[string]any {
		args := map[string]any{"task_id": ids[i]}
		for k, v := range extra {
			args[k] = v
		}
		return args
	}}
}

var plans = []struct {
	when  string
	steps []step
}{
	{"fastest", []step{
		start("Survey the Go HTTP routers' published benchmarks and say which router is fastest."),
		onTask("check_async_task", 0, nil),
	}},
	{"narrow it", []step{
		start("Exhaustive survey of every Go HTTP router: features, benchmarks, maintenance."),
		onTask("check_async_task", 0, nil),
		onTask("update_async_task", 0, map[string]any{"message": "Narrow it down: compare net/http and chi only."}),
		onTask("check_async_task", 0, nil),
	}},
	{"drop the review", []step{
		start("Exhaustive literature review of Go HTTP router designs."),
		start("Summarise the chi benchmark."),
		{"list_async_tasks", func([]string) map[string]any { return map[string]any{} }},
		onTask("cancel_async_task", 0, nil),
		{"list_async_tasks", func([]string) map[string]any { return map[string]any{"status_filter": "cancelled"} }},
	}},
}

func (lead) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	var input string
	var results, ids []string
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			if input == "" {
				input = m.Text()
			}
		case llm.RoleTool:
			results = append(results, m.Text())
			if sub := launched.FindStringSubmatch(m.Text()); sub != nil {
				ids = append(ids, sub[1])
			}
		}
	}
	for _, p := range plans {
		if !strings.Contains(input, p.when) {
			continue
		}
		if n := len(results); n < len(p.steps) {
			s := p.steps[n]
			args, _ := json.Marshal(s.args(ids))
			return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: fmt.Sprintf("call_%d", n+1), Name: s.tool, Args: args}), StopReason: llm.StopToolUse}, nil
		}
		return &llm.Response{Message: llm.Assistant(report(results)), StopReason: llm.StopEndTurn}, nil
	}
	return nil, fmt.Errorf("scripted lead model: no plan for %q", input)
}

// report is the final answer: what the last check found, or the task lists.
func report(results []string) string {
	last := results[len(results)-1]
	var checked struct {
		Status string `json:"status"`
		Result string `json:"result"`
	}
	if json.Unmarshal([]byte(last), &checked) == nil && checked.Status != "" {
		return "The researcher's task ended with " + checked.Status + ": " + checked.Result
	}
	var lists []string
	for _, r := range results {
		if strings.Contains(r, "tracked task(s):") {
			lists = append(lists, r)
		}
	}
	return "I dropped the literature review (its task is cancelled) and kept the chi benchmark summary.\n\n" + strings.Join(lists, "\n\n") + "\n\nThe chi summary: " + chiFindings
}

const chiFindings = "chi serves 1.2M requests/s in its own benchmark."

// Researcher is the scripted model of the served researcher. It runs in
// the serving process, not through a cassette: it answers at once from the
// task, except that an exhaustive task never finishes on its own — it
// waits until its run is cancelled or interrupted (by update_async_task).
// It knows which threads are waiting so, which is what makes the statuses
// the lead reads deterministic (see Serve).
type Researcher struct {
	mu      sync.Mutex
	waiting map[string]bool
}

// NewResearcher returns the researcher's model.
func NewResearcher() *Researcher { return &Researcher{waiting: map[string]bool{}} }

// Generate implements llm.ChatModel.
func (r *Researcher) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	var task string
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			task = m.Text()
		}
	}
	var answer string
	switch {
	case strings.Contains(task, "Exhaustive"):
		thread := agent.ThreadID(ctx)
		r.set(thread, true)
		<-ctx.Done()
		r.set(thread, false)
		return nil, ctx.Err()
	case strings.Contains(task, "net/http and chi"):
		answer = "net/http and chi are within 5% of each other on the routing benchmarks; chi adds middleware and URL parameters."
	case strings.Contains(task, "chi benchmark"):
		answer = chiFindings
	case strings.Contains(task, "fastest"):
		answer = "httprouter is the fastest in the published Go HTTP routing benchmarks."
	default:
		answer = "No findings for: " + task
	}
	return &llm.Response{Message: llm.Assistant(answer), StopReason: llm.StopEndTurn}, nil
}

// Identity implements llm.Identified.
func (r *Researcher) Identity() llm.Identity {
	return llm.Identity{Provider: "scripted", Model: "researcher"}
}

func (r *Researcher) set(thread string, waiting bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting[thread] = waiting
}

func (r *Researcher) isWaiting(thread string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting[thread]
}

// Server is the served side of the example: the researcher agent file
// assembled on the Researcher model and served over the Agent Protocol on
// a loopback port.
type Server struct {
	URL  string
	srv  *agentserver.Server
	http *http.Server
}

// Serve serves dir/agents/researcher.yaml on 127.0.0.1 (a free port).
//
// A run's status is read when it has settled: a task the researcher
// answers at once is reported once it has finished, and an exhaustive one
// once the researcher waits on it. A real deployment answers with the
// status of the moment, which depends on timing; the settling makes the
// status the lead's model reads, and so the cassettes, the same on every
// run, and it stands for a researcher that does quick tasks in no time.
func Serve(dir string) (*Server, error) {
	af, err := agentfile.Load(filepath.Join(dir, "agents", "researcher.yaml"))
	if err != nil {
		return nil, err
	}
	cfg, err := af.Config(agentfile.Options{})
	if err != nil {
		return nil, err
	}
	model := NewResearcher()
	cfg.Model = model
	a, err := harness.New(cfg)
	if err != nil {
		return nil, err
	}
	srv := agentserver.New(agentserver.Options{Clock: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err := srv.Add(af.Name, a.Agent); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, err
	}
	hs := &http.Server{Handler: settled{srv, model}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return &Server{URL: "http://" + ln.Addr().String(), srv: srv, http: hs}, nil
}

// Close stops the researcher's runs, then the server.
func (s *Server) Close() {
	s.srv.Close()
	_ = s.http.Close()
}

// settled answers a run's status once it has settled (see Serve).
type settled struct {
	h http.Handler
	r *Researcher
}

func (s settled) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if req.Method != http.MethodGet || len(parts) != 4 || parts[0] != "threads" || parts[2] != "runs" {
		s.h.ServeHTTP(w, req)
		return
	}
	for {
		b := &buffered{header: http.Header{}, code: http.StatusOK}
		s.h.ServeHTTP(b, req)
		var run struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(b.body.Bytes(), &run)
		open := run.Status == "pending" || run.Status == "running"
		if b.code != http.StatusOK || !open || (run.Status == "running" && s.r.isWaiting(parts[1])) || req.Context().Err() != nil {
			for k, v := range b.header {
				w.Header()[k] = v
			}
			w.WriteHeader(b.code)
			_, _ = w.Write(b.body.Bytes())
			return
		}
		select {
		case <-req.Context().Done():
		case <-time.After(time.Millisecond):
		}
	}
}

type buffered struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *buffered) Header() http.Header         { return b.header }
func (b *buffered) WriteHeader(code int)        { b.code = code }
func (b *buffered) Write(p []byte) (int, error) { return b.body.Write(p) }

// Cases lists the suite's case ids.
func Cases(suitePath string) ([]string, error) {
	s, err := evals.Load(suitePath)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range s.Cases {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// Record re-records the suite's cassettes: for each case, a researcher
// served afresh (its ids then start from one, whatever was recorded
// before) and the lead against LeadModel on a local server (see
// recording.Recording.Run). The result holds every case's cells; its
// summary is the last case's, passed only when every case passed.
func Record(ctx context.Context, suitePath string, progress io.Writer) (*evals.RunResult, error) {
	ids, err := Cases(suitePath)
	if err != nil {
		return nil, err
	}
	all := &evals.RunResult{}
	passed := true
	var reasons []string
	for _, id := range ids {
		oc, err := RunCase(ctx, suitePath, id, func(url string) (*evals.RunResult, error) {
			return recording.Recording{
				Suite: suitePath, Model: LeadModel(), KeyEnvs: []string{"ANTHROPIC_API_KEY"},
				Env: map[string]string{URLEnv: url}, Filter: "case=" + id,
			}.Run(ctx, progress)
		})
		if err != nil {
			return nil, err
		}
		all.Results = append(all.Results, oc.Results...)
		all.Cells = append(all.Cells, oc.Cells...)
		passed = passed && oc.Summary.Passed
		reasons = append(reasons, oc.Summary.Reasons...)
		all.Summary, all.Mode, all.ModeReason = oc.Summary, oc.Mode, oc.ModeReason
	}
	all.Summary.Passed, all.Summary.Reasons = passed, reasons
	return all, nil
}

// RunCase serves the researcher afresh for one case and runs it with run,
// which gets the researcher's URL.
func RunCase(_ context.Context, suitePath, id string, run func(url string) (*evals.RunResult, error)) (*evals.RunResult, error) {
	srv, err := Serve(filepath.Dir(suitePath))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	oc, err := run(srv.URL)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	if oc == nil {
		return nil, errors.New("case " + id + ": no result")
	}
	return oc, nil
}
