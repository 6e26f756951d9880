package checkpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/checkpoint"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

// The child process is this test binary re-executed with these variables set.
const (
	childFileEnv     = "DAGEVAL_CHECKPOINT_CHILD_FILE"
	childScenarioEnv = "DAGEVAL_CHECKPOINT_CHILD_SCENARIO"
)

type deployArgs struct {
	Env string `json:"env"`
}

// processTools are a write_file that appends to a side-effect log beside the
// checkpoint file (so a second run of it would show) and a deploy tool that
// asks for confirmation through an interrupt.
func processTools(logPath string) []tool.Tool {
	write := tool.Must(tool.New("write_file", "Writes a file.", func(ctx context.Context, a writeArgs) (string, error) {
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := fmt.Fprintf(f, "pid %d wrote %s\n", os.Getpid(), a.FilePath); err != nil {
			return "", err
		}
		return "Updated file " + a.FilePath, agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{a.FilePath: {Content: a.Content}}})
	}))
	deploy := tool.Must(tool.New("deploy", "Deploys after confirmation.", func(ctx context.Context, a deployArgs) (string, error) {
		answer, err := agent.Interrupt(ctx, map[string]string{"question": "Deploy to " + a.Env + "?"})
		if err != nil {
			return "", err
		}
		var yes string
		if err := json.Unmarshal(answer, &yes); err != nil {
			return "", err
		}
		return fmt.Sprintf("deploy to %s: %s (pid %d)", a.Env, yes, os.Getpid()), nil
	}))
	return []tool.Tool{write, deploy}
}

func processAgent(t testing.TB, scenario string, cp agent.Checkpointer, model llm.ChatModel, logPath string) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{Model: model, Tools: processTools(logPath), Checkpointer: cp, Middleware: scenarioMiddleware(scenario)})
	require.NoError(t, err)
	return a
}

// firstTurn is what the model answers in the child process: two parallel calls.
func firstTurn() fakes.Step {
	return fakes.Calls("Saving notes and deploying.",
		fakes.CallID("w1", "write_file", `{"file_path":"/release.md","content":"v2"}`),
		fakes.CallID("d1", "deploy", `{"env":"prod"}`),
	)
}

// runChild is the child process: start the run, let it pause, and exit
// without closing the checkpointer, as a killed or finished CLI would.
func runChild(path, scenario string) {
	cp, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(firstTurn()), Tools: processTools(path + ".log"), Checkpointer: cp, Middleware: scenarioMiddleware(scenario)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("release v2")}}, agent.WithThread("release"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if !res.Interrupted() {
		fmt.Fprintln(os.Stderr, "the run did not pause")
		os.Exit(3)
	}
	out, _ := json.Marshal(res.Interrupts)
	fmt.Printf("%d %s\n", os.Getpid(), out)
	os.Exit(0)
}

// scenarioMiddleware puts write_file under human review in the hitl scenario.
func scenarioMiddleware(scenario string) []agent.Middleware {
	if scenario != "hitl" {
		return nil
	}
	m, err := middleware.NewHumanInTheLoop(middleware.HumanInTheLoopConfig{InterruptOn: middleware.InterruptOn{"write_file": {}}})
	if err != nil {
		panic(err)
	}
	return []agent.Middleware{m}
}

// TestResumeInNewProcess starts a run in a child process, which pauses and
// exits; this process then resumes the thread from the file and finishes it.
func TestResumeInNewProcess(t *testing.T) {
	if path := os.Getenv(childFileEnv); path != "" {
		runChild(path, os.Getenv(childScenarioEnv))
		return
	}
	tests := []struct {
		scenario  string
		interrupt string
		resume    any
		// wantTools are the tool results the model sees after resuming.
		wantTools []string
		childRuns int // write_file runs in the child
	}{
		{
			scenario:  "tool",
			interrupt: `[{"id":"tools:d1#0","value":{"question":"Deploy to prod?"}}]`,
			resume:    "yes",
			wantTools: []string{"tool(write_file): Updated file /release.md", "tool(deploy): deploy to prod: yes (pid PARENT)"},
			childRuns: 1,
		},
		{
			scenario:  "hitl",
			interrupt: `[{"id":"after_model:HumanInTheLoopMiddleware#0","value":{"action_requests":[{"name":"write_file","args":{"file_path":"/release.md","content":"v2"},"description":"Tool execution requires approval\n\nTool: write_file\nArgs: {\"file_path\":\"/release.md\",\"content\":\"v2\"}"}],"review_configs":[{"action_name":"write_file","allowed_decisions":["approve","edit","reject","respond"]}]}}]`,
			resume:    middleware.HITLResponse{Decisions: []middleware.Decision{middleware.Approve()}},
			// deploy then interrupts in this process; answered below.
			wantTools: []string{"tool(write_file): Updated file /release.md", "tool(deploy): deploy to prod: yes (pid PARENT)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "threads.db")
			cmd := exec.Command(os.Args[0], "-test.run=^TestResumeInNewProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), childFileEnv+"="+path, childScenarioEnv+"="+tt.scenario)
			out, err := cmd.Output()
			require.NoError(t, err, "child: %s", exitDetail(err))
			pid, payload, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
			require.True(t, ok, "child output: %q", out)
			require.NotEqual(t, fmt.Sprint(os.Getpid()), pid)
			assert.JSONEq(t, tt.interrupt, payload)
			assertLog(t, path+".log", tt.childRuns, pid)

			cp := openSQLite(t, path, checkpoint.SQLiteConfig{})
			model := fakes.NewScripted(fakes.Reply("Released v2."))
			a := processAgent(t, tt.scenario, cp, model, path+".log")
			res, err := a.Invoke(t.Context(), agent.Input{Resume: tt.resume}, agent.WithThread("release"))
			require.NoError(t, err)
			if tt.scenario == "hitl" {
				require.True(t, res.Interrupted(), "deploy asks in turn")
				assert.JSONEq(t, `{"question":"Deploy to prod?"}`, string(res.Interrupts[0].Value))
				res, err = a.Invoke(t.Context(), agent.Input{Resume: "yes"}, agent.WithThread("release"))
				require.NoError(t, err)
			}
			require.False(t, res.Interrupted())
			assert.Equal(t, "Released v2.", res.Text())

			var seen []string
			for _, m := range model.Requests()[0].Messages {
				line := string(m.Role)
				if m.Role == llm.RoleTool {
					line += "(" + m.Name + ")"
				}
				line += ": " + strings.ReplaceAll(m.Text(), fmt.Sprint(os.Getpid()), "PARENT")
				for _, c := range m.ToolCalls {
					line += " -> " + c.Name
				}
				seen = append(seen, line)
			}
			assert.Equal(t, append([]string{"user: release v2", "assistant: Saving notes and deploying. -> write_file -> deploy"}, tt.wantTools...), seen,
				"the model in this process sees the history written by the child")
			assert.Equal(t, "v2", res.State.Files["/release.md"].Content)
			if tt.scenario == "tool" {
				assertLog(t, path+".log", 1, pid) // finished before the pause: not run again
			} else {
				assertLog(t, path+".log", 1, fmt.Sprint(os.Getpid()))
			}
		})
	}
}

func assertLog(t *testing.T, path string, n int, pid string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if n == 0 {
		require.True(t, os.IsNotExist(err), "write_file must not have run yet")
		return
	}
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, n, "write_file runs: %q", lines)
	assert.Equal(t, "pid "+pid+" wrote /release.md", lines[n-1])
}

func exitDetail(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
