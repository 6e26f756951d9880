package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"

	"github.com/dageval/dageval/evals"
)

// The sharded workflow and the Kubernetes manifest, which teams copy to
// run big suites on many machines: both are linted with the tools their
// platforms' own checks use, and their scripts are run here as their
// runners would run them.
const (
	shardedWorkflowFile = "../.github/workflows/dageval-sharded.yml"
	kubernetesFile      = "../evals/examples/kubernetes/dageval-indexed-job.yaml"
)

// lintModule runs the command of a lint module of its own (actionlint,
// k8s.io/api), never downloading it (GOPROXY=off): the test is skipped
// when the module is not in the module cache (.ci/run fetches it).
func lintModule(t *testing.T, module string, args ...string) (string, error) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command(goTool, append([]string{"run", "."}, args...)...)
	cmd.Dir = filepath.Join("..", "internal", module)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil && strings.Contains(stderr.String(), "GOPROXY=off") {
		t.Skipf("internal/%s's module is not in the module cache (run go mod download in internal/%s):\n%s", module, module, stderr.String())
	}
	return stdout.String(), combine(err, stderr.String())
}

func combine(err error, stderr string) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitBad, msg: err.Error() + "\n" + stderr}
}

type shardedWorkflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix struct {
				Shard []int `yaml:"shard"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []workflowStep `yaml:"steps"`
	} `yaml:"jobs"`
}

func loadSharded(t *testing.T) shardedWorkflow {
	t.Helper()
	b, err := os.ReadFile(shardedWorkflowFile)
	require.NoError(t, err)
	var w shardedWorkflow
	require.NoError(t, yaml.Unmarshal(b, &w))
	return w
}

func (w shardedWorkflow) step(t *testing.T, job, name string) workflowStep {
	t.Helper()
	for _, s := range w.Jobs[job].Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("job %s has no step %q", job, name)
	return workflowStep{}
}

func TestShardedWorkflowLints(t *testing.T) {
	wf, err := filepath.Abs(shardedWorkflowFile)
	require.NoError(t, err)
	out, err := lintModule(t, "workflowlint", wf)
	assert.NoError(t, err, "actionlint:\n%s", out)

	w := loadSharded(t)
	n, err := strconv.Atoi(w.Env["SHARDS"])
	require.NoError(t, err)
	var want []int
	for i := 1; i <= n; i++ {
		want = append(want, i)
	}
	assert.Equal(t, want, w.Jobs["shard"].Strategy.Matrix.Shard, "the matrix has SHARDS shards")
	assert.Equal(t, "shard", w.Jobs["merge"].Needs)
	for _, job := range w.Jobs {
		for _, s := range job.Steps {
			assert.NotContains(t, s.Run, "${{", "step %q reads its inputs from env", s.Name)
		}
	}
}

// dagevalBin puts a bin/dageval into dir that is this test binary as the
// dageval command, so that the workflow's scripts run the real thing.
func dagevalBin(t *testing.T, dir string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	script := "#!/bin/sh\n" + childEnv + "=1 exec '" + exe + "' \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "dageval"), []byte(script), 0o755))
}

// TestShardedWorkflowRuns runs the workflow's own step scripts over the
// quickstart suite, replayed: four shards (one killed, then resumed as a
// re-run of its job does), the merge, and the gate with and without a
// baseline.
func TestShardedWorkflowRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	w := loadSharded(t)
	dir := t.TempDir()
	dagevalBin(t, dir)
	suite, err := filepath.Abs("../evals/examples/quickstart/suite.yaml")
	require.NoError(t, err)
	env := func(m map[string]string) map[string]string {
		out := map[string]string{"SUITE": suite, "SHARDS": w.Env["SHARDS"], "MODE": "replay", "CI": "true"}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	shardStep := script(t, t.TempDir(), w.step(t, "shard", "Run the shard"))
	for i := 1; i <= 4; i++ {
		n := strconv.Itoa(i)
		code, _, _, log := runStep(t, dir, shardStep, env(map[string]string{"SHARD": n, "OUT": "shards/dageval-shard-" + n}))
		require.Equal(t, 0, code, log)
	}

	// Shard 2 as a runner that died leaves it, and as a re-run resumes it.
	s2 := filepath.Join(dir, "shards", "dageval-shard-2")
	lines := strings.SplitAfter(readString(t, filepath.Join(s2, evals.ResultsFile)), "\n")
	require.Greater(t, len(lines), 3)
	require.NoError(t, os.WriteFile(filepath.Join(s2, evals.PartialResultsFile), []byte(strings.Join(lines[:2], "")+lines[2][:10]), 0o644))
	for _, f := range []string{evals.ResultsFile, evals.SummaryFile} {
		require.NoError(t, os.Remove(filepath.Join(s2, f)))
	}
	code, _, _, log := runStep(t, dir, shardStep, env(map[string]string{"SHARD": "2", "OUT": "shards/dageval-shard-2"}))
	require.Equal(t, 0, code, log)
	assert.Contains(t, log, "resuming shards/dageval-shard-2")
	assert.Contains(t, log, "resuming: 2 of ")

	code, _, outputs, log := runStep(t, dir, script(t, t.TempDir(), w.step(t, "merge", "Merge the shards")), env(nil))
	require.Equal(t, 0, code, log)
	assert.Contains(t, outputs, "code=0")

	// The baseline: an earlier merged run (TestShardsOnFourProcesses shows
	// that a merged run is the one-machine run).
	require.NoError(t, os.CopyFS(filepath.Join(dir, "baseline"), os.DirFS(filepath.Join(dir, "dageval-out"))))
	gate := script(t, t.TempDir(), w.step(t, "merge", "Compare and gate"))
	code, summary, _, log := runStep(t, dir, gate, env(map[string]string{"MERGE_CODE": "0", "BASELINE_FOUND": "true"}))
	assert.Equal(t, 0, code, log)
	assert.Contains(t, summary, "The merged run's report")
	assert.Regexp(t, `(?i)unchanged|no change`, summary)
	code, summary, _, log = runStep(t, dir, gate, env(map[string]string{"MERGE_CODE": "0", "BASELINE_FOUND": "false"}))
	assert.Equal(t, 0, code, log)
	assert.Contains(t, summary, "no baseline")

	// A shard that could not run every cell fails its job.
	code, _, _, log = runStep(t, dir, shardStep, env(map[string]string{"SHARD": "3", "OUT": "broken", "SUITE": filepath.Join(dir, "missing.yaml")}))
	assert.Equal(t, 1, code, log)
	assert.Contains(t, log, "::error::shard 3/4 did not run every cell")
}

// k8sObject is one document of the manifest as internal/k8slint prints it.
type k8sObject struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Object struct {
		Spec struct {
			CompletionMode       string `json:"completionMode"`
			Completions          *int   `json:"completions"`
			Parallelism          *int   `json:"parallelism"`
			BackoffLimitPerIndex *int   `json:"backoffLimitPerIndex"`
			Template             struct {
				Spec struct {
					RestartPolicy  string         `json:"restartPolicy"`
					InitContainers []k8sContainer `json:"initContainers"`
					Containers     []k8sContainer `json:"containers"`
					Volumes        []struct {
						Name string `json:"name"`
						PVC  *struct {
							ClaimName string `json:"claimName"`
						} `json:"persistentVolumeClaim"`
					} `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	} `json:"object"`
}

type k8sContainer struct {
	Command []string `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

func (c k8sContainer) env(name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestKubernetesManifest decodes the Indexed Job manifest strictly into the
// k8s.io/api types (no cluster, no downloaded schema), checks that its
// parts agree, and runs its pods' scripts.
func TestKubernetesManifest(t *testing.T) {
	path, err := filepath.Abs(kubernetesFile)
	require.NoError(t, err)
	out, err := lintModule(t, "k8slint", path)
	require.NoError(t, err)
	var objs []k8sObject
	require.NoError(t, json.Unmarshal([]byte(out), &objs))
	byName := map[string]k8sObject{}
	for _, o := range objs {
		byName[o.Name] = o
	}
	require.Contains(t, byName, "dageval-results")
	assert.Equal(t, "PersistentVolumeClaim", byName["dageval-results"].Kind)

	shards := byName["dageval-shards"].Object.Spec
	assert.Equal(t, "Indexed", shards.CompletionMode)
	require.NotNil(t, shards.Completions)
	n := *shards.Completions
	assert.Equal(t, n, *shards.Parallelism)
	assert.NotNil(t, shards.BackoffLimitPerIndex, "a failed pod is retried, and the retry resumes")
	assert.Equal(t, "Never", shards.Template.Spec.RestartPolicy)
	shard := shards.Template.Spec.Containers[0]
	assert.Equal(t, strconv.Itoa(n), shard.env("SHARDS"), "SHARDS is the number of completions")
	assert.Contains(t, shard.Args[0], "JOB_COMPLETION_INDEX")

	merge := byName["dageval-merge"].Object.Spec.Template.Spec
	var dirs []string
	for i := 1; i <= n; i++ {
		dirs = append(dirs, "/results/shard-"+strconv.Itoa(i))
	}
	assert.Equal(t, dirs, merge.Containers[0].Command[3:3+n], "the merge takes every shard")
	assert.Equal(t, strconv.Itoa(n), merge.InitContainers[0].env("SHARDS"))
	for _, spec := range []struct {
		name string
		c    []k8sContainer
		vols int
	}{{"shards", shards.Template.Spec.Containers, len(shards.Template.Spec.Volumes)}, {"merge", append(merge.InitContainers, merge.Containers...), len(merge.Volumes)}} {
		require.Equal(t, 1, spec.vols, spec.name)
		for _, c := range spec.c {
			require.Len(t, c.VolumeMounts, 1)
			assert.Equal(t, "/results", c.VolumeMounts[0].MountPath)
		}
	}
	assert.Equal(t, "dageval-results", shards.Template.Spec.Volumes[0].PVC.ClaimName)
	assert.Equal(t, "dageval-results", merge.Volumes[0].PVC.ClaimName)

	t.Run("strict", func(t *testing.T) {
		broken := filepath.Join(t.TempDir(), "job.yaml")
		data := strings.Replace(readString(t, path), "completionMode: Indexed", "completionsMode: Indexed", 1)
		require.NoError(t, os.WriteFile(broken, []byte(data), 0o644))
		_, err := lintModule(t, "k8slint", broken)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `document 1 (Job dageval-shards): error unmarshaling JSON: while decoding JSON: json: unknown field "completionsMode"`)
	})

	t.Run("the pods' scripts", func(t *testing.T) {
		if _, err := exec.LookPath("sh"); err != nil {
			t.Skip("no sh")
		}
		dir := t.TempDir()
		results := filepath.Join(dir, "results")
		// A stub dageval records its arguments and writes what a run
		// writes: run.json, and a summary, complete when STUB_COMPLETE says.
		stub := `#!/bin/sh
echo "$@" >> "$STUB_LOG"
out=""
prev=""
for a in "$@"; do
  case "$prev" in --out|--resume) out="$a" ;; esac
  prev="$a"
done
mkdir -p "$out"
echo '{}' > "$out/run.json"
printf '{\n  "complete": %s\n}\n' "$STUB_COMPLETE" > "$out/summary.json"
`
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "dageval"), []byte(stub), 0o755))
		pod := func(script string, env ...string) (int, string) {
			cmd := exec.Command("sh", "-c", strings.ReplaceAll(script, "/results", results))
			cmd.Env = append(os.Environ(), append(env, "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"), "STUB_LOG="+filepath.Join(dir, "log"),
				"SHARDS="+strconv.Itoa(n), "SUITE=evals/suite.yaml")...)
			var b bytes.Buffer
			cmd.Stdout, cmd.Stderr = &b, &b
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode(), b.String()
			}
			require.NoError(t, err)
			return 0, b.String()
		}
		// Index 1 is shard 2; stopped before it ran every cell, it fails,
		// and its retry resumes.
		code, log := pod(shard.Args[0], "JOB_COMPLETION_INDEX=1", "STUB_COMPLETE=false")
		assert.NotEqual(t, 0, code, log)
		code, log = pod(shard.Args[0], "JOB_COMPLETION_INDEX=1", "STUB_COMPLETE=true")
		assert.Equal(t, 0, code, log)
		assert.Contains(t, log, "resuming "+results+"/shard-2")
		calls := strings.Split(strings.TrimSpace(readString(t, filepath.Join(dir, "log"))), "\n")
		assert.Equal(t, []string{
			"run evals/suite.yaml --mode live --shard 2/" + strconv.Itoa(n) + " --out " + results + "/shard-2 --format none",
			"run --resume " + results + "/shard-2 --format none",
		}, calls)

		// The merge waits for every shard to be complete: with all of them
		// there, it goes at once.
		for i := 1; i <= n; i++ {
			pod(shard.Args[0], "JOB_COMPLETION_INDEX="+strconv.Itoa(i-1), "STUB_COMPLETE=true")
		}
		code, log = pod(merge.InitContainers[0].Args[0])
		assert.Equal(t, 0, code, log)
		assert.NotRegexp(t, regexp.MustCompile("waiting for shard"), log)
	})
}
