package coding

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/internal/recording"
	"github.com/dageval/dageval/harness/llm"
)

// Model is the scripted model behind the coding suite's recordings. It
// works like a careful engineer: it runs the tests first, reads the code
// the failures point at, makes the smallest fix, and runs the tests again
// before it answers; asked only to report, it changes nothing. Its answers
// quote what the sandbox's commands printed, so a recording holds real
// sandbox output.
func Model() llm.ChatModel { return model{} }

type model struct{}

func (model) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	msg, err := next(req)
	if err != nil {
		return nil, err
	}
	return &llm.Response{Message: msg}, nil
}

const runTests = "sh test.sh"

func call(name string, args any) llm.ToolCall {
	raw, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Args: raw}
}

// next decides the next step from the task and the tool results so far.
func next(req *llm.Request) (llm.Message, error) {
	var input string
	var results []string
	for _, m := range req.Messages {
		switch {
		case m.Role == llm.RoleUser && input == "":
			input = m.Text()
		case m.Role == llm.RoleTool:
			results = append(results, m.Text())
		}
	}
	last := func() string { return results[len(results)-1] }
	failing := func(out string) []string {
		var fails []string
		for line := range strings.SplitSeq(out, "\n") {
			if rest, ok := strings.CutPrefix(line, "FAIL "); ok {
				fails = append(fails, rest)
			}
		}
		return fails
	}
	switch {
	case strings.Contains(input, "Find the bug"):
		switch len(results) {
		case 0:
			return llm.Assistant("I'll run the tests first.", call("execute", map[string]string{"command": runTests})), nil
		case 1:
			return llm.Assistant("Both add checks fail; the sum comes out as a difference. Reading calc.sh.", call("read_file", map[string]string{"file_path": "/calc.sh"})), nil
		case 2:
			if !strings.Contains(last(), "add) echo $(( $2 - $3 ))") {
				return llm.Message{}, fmt.Errorf("coding model: calc.sh is not the one the script expects:\n%s", last())
			}
			return llm.Assistant("add subtracts. Fixing it.", call("edit_file", map[string]string{
				"file_path": "/calc.sh", "old_string": "add) echo $(( $2 - $3 ))", "new_string": "add) echo $(( $2 + $3 ))"})), nil
		case 3:
			return llm.Assistant("", call("execute", map[string]string{"command": runTests})), nil
		}
		if fails := failing(last()); len(fails) > 0 {
			return llm.Assistant("The fix did not work; still failing: " + strings.Join(fails, "; ")), nil
		}
		return llm.Assistant("Fixed: in calc.sh, add subtracted its operands instead of adding them. I changed `$2 - $3` to `$2 + $3` for add; all 3 tests pass now."), nil

	case strings.Contains(input, "which ones fail"):
		if len(results) == 0 {
			return llm.Assistant("", call("execute", map[string]string{"command": runTests})), nil
		}
		fails := failing(last())
		if len(fails) == 0 {
			return llm.Assistant("All tests pass."), nil
		}
		return llm.Assistant(fmt.Sprintf("%d of 3 tests fail:\n- %s\n\nI changed nothing.", len(fails), strings.Join(fails, "\n- "))), nil
	}
	return llm.Message{}, fmt.Errorf("coding model: no script for the input %q", input)
}

// Record re-records the cassettes of the suite at suitePath against a
// local server playing Model (see recording.Recording.Run). Recording runs
// the agent's commands, so it needs bubblewrap.
func Record(ctx context.Context, suitePath string, progress io.Writer) (*evals.RunResult, error) {
	return recording.Recording{Suite: suitePath, Model: Model(), KeyEnvs: []string{"ANTHROPIC_API_KEY"}}.Run(ctx, progress)
}
