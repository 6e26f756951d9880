package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"
)

// The shipped workflow, which teams copy: its logic is tested here by
// running its step scripts as GitHub Actions would (bash -eo pipefail),
// with the dageval binary, go and the runner's files replaced.
const workflowFile = "../.github/workflows/dageval.yml"

type workflowStep struct {
	Name string            `yaml:"name"`
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	Env  map[string]string `yaml:"env"`
	With map[string]any    `yaml:"with"`
}

type workflowDoc struct {
	Permissions map[string]string `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Jobs        map[string]struct {
		Steps []workflowStep `yaml:"steps"`
	} `yaml:"jobs"`
}

func loadWorkflow(t *testing.T) workflowDoc {
	t.Helper()
	b, err := os.ReadFile(workflowFile)
	require.NoError(t, err)
	var w workflowDoc
	require.NoError(t, yaml.Unmarshal(b, &w))
	require.Contains(t, w.Jobs, "eval")
	return w
}

func (w workflowDoc) step(t *testing.T, name string) workflowStep {
	t.Helper()
	for _, s := range w.Jobs["eval"].Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("the workflow has no step %q", name)
	return workflowStep{}
}

// TestWorkflowLints runs actionlint v1.7.12 on the workflow. actionlint
// lives in a module of its own (internal/workflowlint), because it needs a
// go.yaml.in/yaml/v4 release candidate this module has moved past; the
// test never downloads it (GOPROXY=off) and is skipped when it is not in
// the module cache.
func TestWorkflowLints(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	wf, err := filepath.Abs(workflowFile)
	require.NoError(t, err)
	cmd := exec.Command(goTool, "run", ".", wf)
	cmd.Dir = filepath.Join("..", "internal", "workflowlint")
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("GOPROXY=off")) {
		t.Skipf("actionlint is not in the module cache (run go mod download in internal/workflowlint):\n%s", out)
	}
	assert.NoError(t, err, "actionlint:\n%s", out)
}

// The baseline is the pull request's base commit, run in a worktree of its
// own, not the latest run on main.
func TestWorkflowBaselineIsTheBaseCommit(t *testing.T) {
	w := loadWorkflow(t)
	checkout := w.Jobs["eval"].Steps[0]
	assert.Equal(t, "actions/checkout@v4", checkout.Uses)
	assert.EqualValues(t, 0, checkout.With["fetch-depth"], "the base commit must be fetched")
	base := w.step(t, "Replay the suite at the base commit")
	assert.Equal(t, "${{ github.event.pull_request.base.sha }}", base.Env["BASE_SHA"])
	assert.Contains(t, base.Run, `git worktree add --detach "$base" "$BASE_SHA"`)
	for _, s := range w.Jobs["eval"].Steps {
		assert.NotContains(t, s.Run, "gh run", "no baseline from another run: %s", s.Name)
		assert.NotContains(t, s.Run, "${{", "step %q reads its inputs from env", s.Name)
	}
	assert.NotContains(t, w.Permissions, "actions", "no artifact of another run is downloaded")
	gate := w.step(t, "Gate")
	assert.Equal(t, "always()", gate.If, "the gate runs, and posts its summary, whatever failed before it")
}

// script writes a step's run script to a file, as the runner does.
func script(t *testing.T, dir string, s workflowStep) string {
	t.Helper()
	p := filepath.Join(dir, "step-"+strings.ReplaceAll(strings.ToLower(s.Name), " ", "-")+".sh")
	require.NoError(t, os.WriteFile(p, []byte(s.Run), 0o755))
	return p
}

// runStep runs a step script with bash -eo pipefail in dir and returns its
// exit code, the job summary and the step's outputs.
func runStep(t *testing.T, dir, path string, env map[string]string) (int, string, string, string) {
	t.Helper()
	summary, output := filepath.Join(dir, "summary.md"), filepath.Join(dir, "output.txt")
	_ = os.Remove(summary)
	_ = os.Remove(output)
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GITHUB_STEP_SUMMARY="+summary, "GITHUB_OUTPUT="+output, "RUNNER_TEMP="+filepath.Join(dir, "tmp"), "SUITE=evals/suite.yaml")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	s, _ := os.ReadFile(summary)
	o, _ := os.ReadFile(output)
	return code, string(s), string(o), log.String()
}

// stubDageval answers compare as STUB_COMPARE_CODE and STUB_COMPARE_ERR say.
const stubDageval = `#!/bin/sh
case "$1" in
compare)
  while [ $# -gt 0 ]; do
    if [ "$1" = -o ]; then mkdir -p "$2" && echo "### stub comparison" > "$2/compare.md"; fi
    shift
  done
  echo "$STUB_COMPARE_ERR" >&2
  exit "$STUB_COMPARE_CODE" ;;
esac
echo "stub dageval: unexpected $*" >&2
exit 3
`

// TestWorkflowGate runs the gate step in every situation it decides.
func TestWorkflowGate(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	gate := loadWorkflow(t).step(t, "Gate")
	pr := func(m map[string]string) map[string]string {
		out := map[string]string{"EVENT": "pull_request", "BASELINE_FOUND": "true", "BASELINE_CODE": "0", "BASELINE_DIR": "base-out"}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		env     map[string]string
		runErr  string
		code    int
		summary []string
	}{
		{"no regression", pr(map[string]string{"RUN_CODE": "0", "STUB_COMPARE_CODE": "0"}), "", 0, []string{"### stub comparison", "This run's report"}},
		{"a regression", pr(map[string]string{"RUN_CODE": "0", "STUB_COMPARE_CODE": "1", "STUB_COMPARE_ERR": "dageval compare: underpowered drop"}), "", 1, []string{"### stub comparison"}},
		{"the run cannot be judged", pr(map[string]string{"RUN_CODE": "2"}), "[ 1/2] error x\ndageval run: suite q cannot be judged: 1 cell errored: replay miss — re-record\n", 2,
			[]string{"the run cannot be judged (exit 2)", "1 cell errored: replay miss — re-record"}},
		{"the run step died", pr(map[string]string{"RUN_CODE": ""}), "", 2, []string{"the run step did not finish"}},
		{"no baseline and thresholds fail", pr(map[string]string{"RUN_CODE": "1", "BASELINE_FOUND": "false", "BASELINE_REASON": "the base commit abc has no evals/suite.yaml"}), "", 1,
			[]string{"no baseline, so the suite's thresholds decide (exit 1)", "the base commit abc has no evals/suite.yaml."}},
		{"no baseline and thresholds hold", pr(map[string]string{"RUN_CODE": "0", "BASELINE_FOUND": "false"}), "", 0, []string{"no baseline"}},
		{"thresholds newly missed", pr(map[string]string{"RUN_CODE": "1", "STUB_COMPARE_CODE": "0"}), "", 1, []string{"met its thresholds at the base commit and no longer does"}},
		{"thresholds already missed at the base", pr(map[string]string{"RUN_CODE": "1", "BASELINE_CODE": "1", "STUB_COMPARE_CODE": "0"}), "", 0, []string{"### stub comparison"}},
		{"the suite changed and its thresholds hold", pr(map[string]string{"RUN_CODE": "0", "STUB_COMPARE_CODE": "2", "STUB_COMPARE_ERR": "dageval compare: runs are not comparable: suite_digest differs"}), "", 0,
			[]string{"The suite changed in this pull request"}},
		{"the suite changed and its thresholds fail", pr(map[string]string{"RUN_CODE": "1", "STUB_COMPARE_CODE": "2", "STUB_COMPARE_ERR": "dageval compare: runs are not comparable: suite_digest differs"}), "", 1,
			[]string{"the suite's thresholds decide (exit 1)"}},
		{"errored cells in the comparison", pr(map[string]string{"RUN_CODE": "0", "STUB_COMPARE_CODE": "2", "STUB_COMPARE_ERR": "dageval compare: 1 cell errored"}), "", 2, []string{"### stub comparison"}},
		{"push, thresholds hold", map[string]string{"EVENT": "push", "RUN_CODE": "0"}, "", 0, []string{"thresholds decide (exit 0)"}},
		{"push, thresholds fail", map[string]string{"EVENT": "push", "RUN_CODE": "1"}, "", 1, []string{"thresholds decide (exit 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "dageval"), []byte(stubDageval), 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "dageval-out", "report"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "dageval-out", "report", "report.md"), []byte("### the run's report\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "run.err"), []byte(tt.runErr), 0o644))
			code, summary, _, log := runStep(t, dir, script(t, dir, gate), tt.env)
			assert.Equal(t, tt.code, code, "log:\n%s\nsummary:\n%s", log, summary)
			for _, s := range tt.summary {
				assert.Contains(t, summary, s, "log:\n%s", log)
			}
		})
	}
}

// TestWorkflowBaselineStep runs the baseline step in a repository whose
// base commit has the suite, and in one whose base commit does not.
func TestWorkflowBaselineStep(t *testing.T) {
	for _, tool := range []string{"bash", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	step := loadWorkflow(t).step(t, "Replay the suite at the base commit")
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("x\n"), 0o644))
	git("add", ".")
	git("commit", "-qm", "before the suite")
	noSuite := git("rev-parse", "HEAD")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "evals"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evals", "suite.yaml"), []byte("name: base\n"), 0o644))
	git("add", ".")
	git("commit", "-qm", "the suite")
	withSuite := git("rev-parse", "HEAD")

	// go build copies a stub dageval whose run writes a summary and says
	// where it ran.
	stubs := t.TempDir()
	stubRun := "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = --out ]; then mkdir -p \"$2\"; echo '{}' > \"$2/summary.json\"; fi; shift; done\npwd > \"$STUB_CWD\"\nexit 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(stubs, "dageval-run"), []byte(stubRun), 0o755))
	stubGo := "#!/bin/sh\n# go build -o OUT ./cmd/dageval\ncp \"" + filepath.Join(stubs, "dageval-run") + "\" \"$3\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(stubs, "go"), []byte(stubGo), 0o755))
	env := map[string]string{"PATH": stubs + string(os.PathListSeparator) + os.Getenv("PATH"), "STUB_CWD": filepath.Join(dir, "cwd.txt")}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tmp"), 0o755))
	path := script(t, t.TempDir(), step)

	env["BASE_SHA"] = withSuite
	code, _, outputs, log := runStep(t, dir, path, env)
	require.Equal(t, 0, code, log)
	assert.Contains(t, outputs, "found=true")
	assert.Contains(t, outputs, "code=1", "the base run's own verdict is kept for the gate")
	assert.Contains(t, outputs, "dir="+filepath.Join(dir, "tmp", "baseline"))
	cwd, err := os.ReadFile(env["STUB_CWD"])
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "tmp", "base"), strings.TrimSpace(string(cwd)), "the base runs in its own worktree")
	assert.Contains(t, git("worktree", "list"), withSuite[:7])

	env["BASE_SHA"] = noSuite
	code, _, outputs, log = runStep(t, dir, path, env)
	require.Equal(t, 0, code, log)
	assert.Contains(t, outputs, "found=false")
	assert.Contains(t, outputs, "reason=the base commit "+noSuite+" has no evals/suite.yaml")
}
