package rubrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/dageval/dageval/internal/procgroup"
)

// ScriptInputSchema names the JSON document a code assertion reads on its
// standard input; it changes only when a field changes meaning or goes away.
const ScriptInputSchema = "dageval.check-input/v1"

// DefaultScriptTimeout bounds a code assertion that sets no timeout.
const DefaultScriptTimeout = 30 * time.Second

// scriptPath is the PATH of code assertions, never the caller's.
const scriptPath = "/usr/local/bin:/usr/bin:/bin"

// ScriptCheck is a code assertion (promptfoo's python and javascript
// assertions): a command that reads the run as JSON (ScriptInput) on its
// standard input and prints {"pass": bool, "score": number, "reason":
// string} on its standard output. It runs in Dir with a clean environment
// (PATH, HOME and LANG with fixed values, plus Env) and is killed, with
// everything it started, after Timeout. The run reaches it only through
// standard input: nothing of the case or the run is put into its
// arguments, and no shell reads them.
type ScriptCheck struct {
	// Argv is the command and its arguments.
	Argv    []string          `json:"argv"`
	Timeout time.Duration     `json:"timeout"`
	Env     map[string]string `json:"env,omitempty"`
	// Dir is where the command runs (the suite's directory).
	Dir string `json:"-"`
}

// Kind implements Check.
func (c *ScriptCheck) Kind() string { return KindScript }

// Name implements Check.
func (c *ScriptCheck) Name() string {
	if len(c.Argv) == 0 {
		return KindScript
	}
	return KindScript + "(" + strings.Join(c.Argv, " ") + ")"
}

// ScriptInput is what a code assertion reads: the case, the answer, the
// transcript, every tool call, the files, the state, counts, usage and
// cost.
type ScriptInput struct {
	Schema string         `json:"schema"`
	Case   ScriptCase     `json:"case"`
	Answer string         `json:"final_answer"`
	Last   string         `json:"last_message"`
	Texts  []string       `json:"assistant_texts"`
	Msgs   any            `json:"messages"`
	Calls  []ScriptCall   `json:"tool_calls"`
	Files  map[string]any `json:"files"`
	State  map[string]any `json:"state"`
	Turns  int            `json:"turns"`
	Steps  int            `json:"steps"`
	Usage  RoleUsage      `json:"usage"`
	Cost   *float64       `json:"cost_usd"`
	Error  string         `json:"error"`
}

// ScriptCase names the case a code assertion judges.
type ScriptCase struct {
	ID    string `json:"id"`
	Input string `json:"input"`
}

// ScriptCall is one tool call, of any agent, in the order they happened.
type ScriptCall struct {
	Agent   string          `json:"agent"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args"`
	Turn    int             `json:"turn"`
	Result  string          `json:"result"`
	IsError bool            `json:"is_error"`
}

// FileLister is a FileReader that can also list its files, so that a code
// assertion sees every file of the run.
type FileLister interface {
	FileReader
	ListFiles(ctx context.Context) ([]string, error)
}

// ListFiles implements FileLister.
func (s StateFiles) ListFiles(context.Context) ([]string, error) {
	return slices.Sorted(maps.Keys(s)), nil
}

// NewScriptInput builds the document a code assertion reads.
func NewScriptInput(ctx context.Context, rec *Record) ScriptInput {
	in := ScriptInput{
		Schema: ScriptInputSchema, Case: ScriptCase{ID: rec.CaseID, Input: rec.Input},
		Answer: rec.FinalAnswer(), Last: rec.LastMessage(), Texts: rec.AssistantTexts(),
		Msgs: rec.own(), Calls: []ScriptCall{}, Files: map[string]any{}, State: rec.StateDocument(),
		Turns: rec.Turns(), Steps: rec.Steps, Usage: rec.Usage, Cost: rec.CostUSD,
	}
	if in.Texts == nil {
		in.Texts = []string{}
	}
	if rec.Err != nil {
		in.Error = rec.Err.Error()
	}
	var walk func(t *Trajectory)
	walk = func(t *Trajectory) {
		if t == nil {
			return
		}
		for _, c := range t.Calls {
			args := c.Args
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			in.Calls = append(in.Calls, ScriptCall{Agent: t.Agent, Name: c.Name, Args: args, Turn: c.Turn, Result: c.Result, IsError: c.IsError})
			walk(c.Subagent)
		}
	}
	walk(rec.Trajectory)
	if l, ok := rec.Files.(FileLister); ok {
		if paths, err := l.ListFiles(ctx); err == nil {
			for _, p := range paths {
				if content, err := l.ReadFile(ctx, p); err == nil {
					in.Files[p] = content
				}
			}
		}
	}
	return in
}

// scriptOutput is what a code assertion prints.
type scriptOutput struct {
	Pass   *bool    `json:"pass"`
	Score  *float64 `json:"score"`
	Reason string   `json:"reason"`
}

// maxScriptOutput bounds what a code assertion may print.
const maxScriptOutput = 1 << 20

// Evaluate implements Check.
func (c *ScriptCheck) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		res.Detail = "invalid check: the command is empty"
		return res
	}
	input, err := json.Marshal(NewScriptInput(ctx, rec))
	if err != nil {
		res.Detail = "the run could not be encoded for the script: " + err.Error()
		return res
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultScriptTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = []string{"PATH=" + scriptPath, "HOME=" + c.Dir, "LANG=C.UTF-8"}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		cmd.Env = append(cmd.Env, k+"="+c.Env[k])
	}
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &capped{b: &stdout, max: maxScriptOutput}, &capped{b: &stderr, max: 64 << 10}
	procgroup.Set(cmd)
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	errText := strings.TrimSpace(stderr.String())
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.Detail = fmt.Sprintf("the script did not finish within %s", timeout)
		return res
	case err != nil:
		var ee *exec.ExitError
		msg := err.Error()
		if errors.As(err, &ee) {
			msg = fmt.Sprintf("exit status %d", ee.ExitCode())
		}
		res.Detail = "the script failed (" + msg + ")"
		if errText != "" {
			res.Detail += ": " + quoteShort(errText)
		}
		return res
	}
	var out scriptOutput
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(stdout.Bytes())))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil || out.Pass == nil {
		res.Detail = fmt.Sprintf(`the script must print {"pass": true|false, "score": 0..1, "reason": "…"}; it printed %s`, quoteShort(stdout.String()))
		if err != nil {
			res.Detail += " (" + err.Error() + ")"
		}
		return res
	}
	res.Passed = *out.Pass
	res.Score = boolScore(res.Passed)
	if out.Score != nil {
		s := *out.Score
		switch {
		case math.IsNaN(s) || s < 0:
			s = 0
		case s > 1:
			s = 1
		}
		res.Score = s
	}
	res.Detail = out.Reason
	if res.Detail == "" {
		res.Detail = fmt.Sprintf("the script says pass: %v", res.Passed)
	}
	return res
}

// capped keeps the first max bytes written to it.
type capped struct {
	b   *bytes.Buffer
	max int
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.max - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
