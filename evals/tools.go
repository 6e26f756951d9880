package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/internal/procgroup"
	"github.com/dageval/dageval/internal/yamlx"
	"github.com/dageval/dageval/rubrics"
)

// ToolBehavior is what a declared tool does when the agent calls it during
// a suite run: a mock answer, a command, or a Go tool registered by name.
type ToolBehavior struct {
	Mock *Mock `json:"mock,omitempty"`
	Exec *Exec `json:"exec,omitempty"`
	// Go names a tool registered with RegisterTool (or Options.Tools).
	Go string `json:"go,omitempty"`

	at string // the suite key, for errors
}

// Mock answers without running anything.
type Mock struct {
	// Result is the fixed answer.
	Result *MockResult `json:"result,omitempty"`
	// Match answers with the first entry whose args are a subset of the
	// call's arguments; Default answers calls no entry matches.
	Match   []MockMatch `json:"match,omitempty"`
	Default *MockResult `json:"default,omitempty"`
	// Sequence answers the n-th call of the tool in an agent's transcript
	// with the n-th entry; calls beyond the list get an error result.
	Sequence []MockResult `json:"sequence,omitempty"`
}

// MockResult is one mock answer: text shown to the model (a YAML string as
// is, any other value as JSON), or an error result.
type MockResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
}

// MockMatch is one by-argument mock answer.
type MockMatch struct {
	Args   json.RawMessage `json:"args"`
	Result MockResult      `json:"result"`

	args any
}

// Exec runs a command for each call: the call's JSON arguments on stdin,
// its stdout the result. A non-zero exit or a timeout is an error result
// the model sees. The command runs in the suite's directory with a clean
// environment: PATH, HOME and LANG with fixed values, plus Env.
type Exec struct {
	// Argv is the command; a suite's command string runs as sh -c.
	Argv    []string          `json:"argv"`
	Timeout time.Duration     `json:"timeout"`
	Env     map[string]string `json:"env,omitempty"`
	// Dir is the suite's directory (machine-specific, so not in the digest).
	Dir string `json:"-"`
}

type rawTool struct {
	Mock *rawMock `yaml:"mock"`
	Exec *rawExec `yaml:"exec"`
	Go   string   `yaml:"go"`
}

type rawMock struct {
	Result   node       `yaml:"result"`
	Error    *string    `yaml:"error"`
	Match    []rawMatch `yaml:"match"`
	Default  node       `yaml:"default"`
	Sequence []node     `yaml:"sequence"`
}

type rawMatch struct {
	Args   node    `yaml:"args"`
	Result node    `yaml:"result"`
	Error  *string `yaml:"error"`
}

type rawExec struct {
	Command node              `yaml:"command"`
	Timeout string            `yaml:"timeout"`
	Env     map[string]string `yaml:"env"`
}

func (p *parser) tools(raws map[string]rawTool, at string) (map[string]*ToolBehavior, error) {
	if len(raws) == 0 {
		return nil, nil
	}
	out := map[string]*ToolBehavior{}
	for _, name := range slices.Sorted(maps.Keys(raws)) {
		if r, bad := yamlx.BidiControl(name); bad {
			return nil, p.errAt(at+"."+name, "tool name %q holds the bidirectional control character U+%04X, which makes it read differently from what it is", name, r)
		}
		b, err := p.tool(raws[name], at+"."+name)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

func (p *parser) tool(raw rawTool, at string) (*ToolBehavior, error) {
	b := &ToolBehavior{at: at, Go: raw.Go}
	kinds := 0
	if raw.Mock != nil {
		kinds++
	}
	if raw.Exec != nil {
		kinds++
	}
	if raw.Go != "" {
		kinds++
	}
	if kinds != 1 {
		return nil, p.errAt(at, "a tool behaviour is exactly one of mock, exec or go, got %d", kinds)
	}
	switch {
	case raw.Mock != nil:
		m, err := p.mock(raw.Mock, at+".mock")
		if err != nil {
			return nil, err
		}
		b.Mock = m
	case raw.Exec != nil:
		e, err := p.exec(raw.Exec, at+".exec")
		if err != nil {
			return nil, err
		}
		b.Exec = e
	}
	return b, nil
}

func (p *parser) mock(raw *rawMock, at string) (*Mock, error) {
	m := &Mock{}
	forms := 0
	if raw.Result.present() || raw.Error != nil {
		forms++
		if raw.Result.present() && raw.Error != nil {
			return nil, p.errAt(at, "give result or error, not both")
		}
		r, err := p.mockResult(raw.Result, raw.Error, at+".result")
		if err != nil {
			return nil, err
		}
		m.Result = &r
	}
	if raw.Match != nil {
		forms++
		if len(raw.Match) == 0 {
			return nil, p.errAt(at+".match", "match is empty: list {args, result} entries")
		}
		for i, rm := range raw.Match {
			ak := fmt.Sprintf("%s.match[%d]", at, i)
			if !rm.Args.present() {
				return nil, p.errAt(ak, "a match entry needs args (the arguments it answers)")
			}
			if _, ok := rm.Args.n.(ast.MapNode); !ok {
				return nil, p.errAt(ak+".args", "want a mapping of argument names to values, got %s", yamlx.Kind(rm.Args.n))
			}
			raw, err := nodeJSON(rm.Args.n)
			if err != nil {
				return nil, p.errAt(ak+".args", "%v", err)
			}
			if !rm.Result.present() && rm.Error == nil {
				return nil, p.errAt(ak, "a match entry needs a result or an error")
			}
			if rm.Result.present() && rm.Error != nil {
				return nil, p.errAt(ak, "give result or error, not both")
			}
			r, err := p.mockResult(rm.Result, rm.Error, ak+".result")
			if err != nil {
				return nil, err
			}
			mm := MockMatch{Args: raw, Result: r}
			_ = json.Unmarshal(raw, &mm.args)
			m.Match = append(m.Match, mm)
		}
		if raw.Default.present() {
			r, err := p.mockResult(raw.Default, nil, at+".default")
			if err != nil {
				return nil, err
			}
			m.Default = &r
		}
	} else if raw.Default.present() {
		return nil, p.errAt(at+".default", "default only applies with match")
	}
	if raw.Sequence != nil {
		forms++
		if len(raw.Sequence) == 0 {
			return nil, p.errAt(at+".sequence", "sequence is empty: list the answers in call order")
		}
		for i, n := range raw.Sequence {
			r, err := p.mockResult(n, nil, fmt.Sprintf("%s.sequence[%d]", at, i))
			if err != nil {
				return nil, err
			}
			m.Sequence = append(m.Sequence, r)
		}
	}
	if forms != 1 {
		return nil, p.errAt(at, "a mock is exactly one of result (or error), match or sequence, got %d", forms)
	}
	return m, nil
}

func (p *parser) mockResult(n node, errText *string, at string) (MockResult, error) {
	if errText != nil {
		if strings.TrimSpace(*errText) == "" {
			return MockResult{}, p.errAt(at, "the error message is empty")
		}
		return MockResult{Text: *errText, IsError: true}, nil
	}
	switch v := n.n.(type) {
	case *ast.StringNode:
		if rest, ok := strings.CutPrefix(v.Value, rubrics.IncludePrefix); ok {
			text, err := p.include(rest)
			if err != nil {
				return MockResult{}, p.errAt(at, "%v", err)
			}
			return MockResult{Text: text}, nil
		}
		return MockResult{Text: v.Value}, nil
	case *ast.LiteralNode:
		return MockResult{Text: v.Value.Value}, nil
	case nil, *ast.NullNode:
		return MockResult{}, p.errAt(at, "the result is empty: give the text (or value) the tool returns")
	}
	raw, err := nodeJSON(n.n)
	if err != nil {
		return MockResult{}, p.errAt(at, "%v", err)
	}
	return MockResult{Text: string(raw)}, nil
}

// nodeJSON converts a YAML value to compact JSON.
func nodeJSON(n ast.Node) (json.RawMessage, error) {
	var v any
	if err := yaml.NodeToValue(n, &v); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the value has no JSON form: %v", err)
	}
	return raw, nil
}

func (p *parser) exec(raw *rawExec, at string) (*Exec, error) {
	e := &Exec{Timeout: DefaultExecTimeout, Env: raw.Env, Dir: p.s.Dir}
	switch n := raw.Command.n.(type) {
	case *ast.StringNode:
		if strings.TrimSpace(n.Value) == "" {
			return nil, p.errAt(at+".command", "the command is empty")
		}
		e.Argv = []string{"/bin/sh", "-c", n.Value}
	case *ast.SequenceNode:
		for i, v := range n.Values {
			s, ok := v.(*ast.StringNode)
			if !ok {
				return nil, p.errAt(fmt.Sprintf("%s.command[%d]", at, i), "want a string, got %s", yamlx.Kind(v))
			}
			e.Argv = append(e.Argv, s.Value)
		}
		if len(e.Argv) == 0 || e.Argv[0] == "" {
			return nil, p.errAt(at+".command", "the command is empty")
		}
	case nil:
		return nil, p.errAt(at, "exec needs a command (a string run by sh -c, or a list of arguments)")
	default:
		return nil, p.errAt(at+".command", "want a string or a list of arguments, got %s", yamlx.Kind(n))
	}
	if raw.Timeout != "" {
		d, err := time.ParseDuration(raw.Timeout)
		if err != nil || d <= 0 {
			return nil, p.errAt(at+".timeout", "not a positive duration: %q (e.g. 10s)", raw.Timeout)
		}
		e.Timeout = d
	}
	for _, k := range slices.Sorted(maps.Keys(raw.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, p.errAt(at+".env", "invalid environment variable name %q", k)
		}
	}
	return e, nil
}

// RegisterTool makes a Go tool available to every suite under name: a
// suite gives it to a declared tool with {go: name}, and a declared tool of
// the same name with no other behaviour uses it. It panics when the name is
// taken or empty, like other registration functions, because that is a
// programming error. A Registry does the same without package state.
func RegisterTool(name string, t tool.Tool) { global.AddTool(name, t) }

// AgentFactory builds the agent under test for one cell. The runner then
// sets the model under test and the model resolver (so every call goes
// through the cell's cassette), merges the cell's profile over cfg.Profile,
// adds the rubric middleware, and gives tools the suite declares a
// behaviour for that behaviour instead of their own.
type AgentFactory func(ctx context.Context, req AgentRequest) (harness.Config, error)

// AgentRequest is what an AgentFactory is told about the cell.
type AgentRequest struct {
	Cell CellKey
	// Model is the model spec under test.
	Model string
}

// RegisterAgent makes an agent factory available to every suite under name
// (agent: {factory: name}). It panics when the name is taken or empty.
func RegisterAgent(name string, f AgentFactory) { global.AddAgent(name, f) }

// goTool finds a Go tool: the run's own, then the suite's registry's, then
// the ones registered with RegisterTool.
func (o *Options) goTool(name string) (tool.Tool, bool) {
	if t, ok := o.Tools[name]; ok {
		return t, true
	}
	if t, ok := o.reg.tool(name); ok {
		return t, true
	}
	return global.tool(name)
}

func (o *Options) agentFactory(name string) (AgentFactory, bool) {
	if f, ok := o.Agents[name]; ok {
		return f, true
	}
	if f, ok := o.reg.agent(name); ok {
		return f, true
	}
	return global.agent(name)
}

// registered lists what a suite run can name, for errors about a name that
// is not registered.
func (o *Options) registered(names func(*Registry) []string, own []string) string {
	all := append(append(slices.Clone(own), names(o.reg)...), names(global)...)
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) == 0 {
		return "none is registered"
	}
	return "registered: " + strings.Join(all, ", ")
}

// behaviour returns the case's behaviour for a tool: the case's own, else
// the suite's.
func (s *Suite) behaviour(c *Case, name string) *ToolBehavior {
	if b, ok := c.Tools[name]; ok {
		return b
	}
	return s.Tools[name]
}

// bind builds the run-time tool for a declaration in one case.
func (s *Suite) bind(c *Case, o *Options, d agentfile.Tool) (tool.Tool, error) {
	spec := llm.ToolSpec{Name: d.Name, Description: d.Description, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	if d.Parameters != nil {
		raw, err := json.Marshal(d.Parameters)
		if err != nil {
			return nil, err
		}
		spec.Parameters = raw
	}
	b := s.behaviour(c, d.Name)
	if b == nil && d.Impl() != nil {
		// The agent file names a Go tool and the suite does not replace it.
		return d.Impl(), nil
	}
	goName := d.Name
	if b != nil && b.Go != "" {
		goName = b.Go
	}
	if b == nil || b.Go != "" {
		gt, ok := o.goTool(goName)
		if !ok {
			if b != nil {
				return nil, fmt.Errorf("tool %s: no Go tool is registered as %q (%s)", d.Name, goName, o.registered((*Registry).Tools, slices.Sorted(maps.Keys(o.Tools))))
			}
			return nil, fmt.Errorf("tool %s is declared by the agent but has no behaviour: give it one under tools: (mock, exec or go) in the suite or the case", d.Name)
		}
		gs := gt.Spec()
		if d.Description == "" {
			spec.Description = gs.Description
		}
		if d.Parameters == nil && len(gs.Parameters) > 0 {
			spec.Parameters = gs.Parameters
		}
		return tool.Validated(&tool.Func{ToolSpec: spec, Fn: gt.Call})
	}
	return behaviourTool(spec, b)
}

// behaviourTool gives spec a mock or exec behaviour.
func behaviourTool(spec llm.ToolSpec, b *ToolBehavior) (tool.Tool, error) {
	var fn func(ctx context.Context, args json.RawMessage) (tool.Result, error)
	switch {
	case b.Mock != nil:
		m := b.Mock
		fn = func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			return m.answer(ctx, spec.Name, args), nil
		}
	case b.Exec != nil:
		e := b.Exec
		fn = func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			return e.run(ctx, spec.Name, args), nil
		}
	default:
		return nil, fmt.Errorf("tool %s has no behaviour", spec.Name)
	}
	return tool.Validated(&tool.Func{ToolSpec: spec, Fn: fn})
}

func (r MockResult) result() tool.Result {
	if r.IsError {
		return tool.Errorf("%s", r.Text)
	}
	return tool.Text(r.Text)
}

func (m *Mock) answer(ctx context.Context, name string, args json.RawMessage) tool.Result {
	switch {
	case m.Result != nil:
		return m.Result.result()
	case m.Match != nil:
		var got any
		if err := json.Unmarshal(args, &got); err != nil {
			return tool.Errorf("Error: the arguments are not JSON: %v", err)
		}
		for _, e := range m.Match {
			if jsonSubset(e.args, got) {
				return e.Result.result()
			}
		}
		if m.Default != nil {
			return m.Default.result()
		}
		return tool.Errorf("Error: %s has no answer for the arguments %s", name, compact(args))
	default:
		n := callIndex(ctx, name)
		if n < len(m.Sequence) {
			return m.Sequence[n].result()
		}
		return tool.Errorf("Error: %s was called %d times; its mock answers only %d calls", name, n+1, len(m.Sequence))
	}
}

// callIndex counts the calls of the tool that precede the current call in
// the agent's transcript, so a sequence is answered in call order even when
// the model calls the tool several times in parallel.
func callIndex(ctx context.Context, name string) int {
	st := agent.ToolState(ctx)
	current, ok := agent.ToolCall(ctx)
	if st == nil || !ok {
		return 0
	}
	n := 0
	for _, m := range st.Messages {
		for _, tc := range m.ToolCalls {
			if tc.ID == current.ID {
				return n
			}
			if tc.Name == name {
				n++
			}
		}
	}
	return n
}

// jsonSubset reports whether every key of want is in got with an equal
// value (recursively for objects); arrays and scalars must be equal.
func jsonSubset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !jsonSubset(wv, gv) {
			return false
		}
	}
	return true
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// execPath is the PATH of exec tools: the usual system directories, never
// the caller's (which may hold anything).
const execPath = "/usr/local/bin:/usr/bin:/bin"

// maxExecOutput bounds what an exec tool may print.
const maxExecOutput = 1 << 20

func (e *Exec) run(ctx context.Context, name string, args json.RawMessage) tool.Result {
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Argv[0], e.Argv[1:]...)
	cmd.Dir = e.Dir
	cmd.Env = []string{"PATH=" + execPath, "HOME=" + e.Dir, "LANG=C.UTF-8"}
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		cmd.Env = append(cmd.Env, k+"="+e.Env[k])
	}
	cmd.Stdin = bytes.NewReader(args)
	stdout := &limitedBuffer{max: maxExecOutput}
	stderr := &limitedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	procgroup.Set(cmd)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		// The command succeeded and only an I/O copy outlived it by
		// WaitDelay (a child holding a pipe, or a starved machine): its
		// output is complete, so the call is not a failure.
		err = nil
	}
	out := strings.TrimRight(stdout.String(), "\n")
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return tool.Errorf("Error: %s timed out after %s", name, e.Timeout)
	case err != nil:
		var ee *exec.ExitError
		msg := err.Error()
		if errors.As(err, &ee) {
			msg = fmt.Sprintf("exit status %d", ee.ExitCode())
		}
		detail := strings.TrimSpace(stderr.String())
		if detail == "" {
			detail = out
		}
		if detail != "" {
			return tool.Errorf("Error: %s failed (%s): %s", name, msg, detail)
		}
		return tool.Errorf("Error: %s failed (%s)", name, msg)
	case stdout.truncated:
		return tool.Errorf("Error: %s printed more than %d bytes", name, maxExecOutput)
	}
	return tool.Text(out)
}

type limitedBuffer struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.truncated = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
