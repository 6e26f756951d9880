package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

// gateModel answers case N with "answer N", unless the profile's prompt
// suffix says otherwise: "MODE break" answers cases 1–3 wrongly (a change
// that breaks 3 of 5 cases), "MODE flip-once" answers the first request for
// case 2 it sees wrongly (one flip, whichever cell asks first).
type gateModel struct {
	mu      sync.Mutex
	flipped bool
}

var caseNumber = regexp.MustCompile(`case (\d+)`)

func (m *gateModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	system := llm.BlocksText(req.System)
	n := ""
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			if sm := caseNumber.FindStringSubmatch(msg.Text()); sm != nil {
				n = sm[1]
				break
			}
		}
	}
	answer := "answer " + n
	switch {
	case strings.Contains(system, "MODE break") && n >= "1" && n <= "3":
		answer = "I could not find out."
	case strings.Contains(system, "MODE flip-once") && n == "2":
		m.mu.Lock()
		if !m.flipped {
			m.flipped, answer = true, "I could not find out."
		}
		m.mu.Unlock()
	}
	return &llm.Response{Message: llm.Assistant(answer)}, nil
}

// gateSuite writes a suite of 5 cases × the given models × 1 profile,
// live against srv, whose profile carries mode; it returns the suite path.
func gateSuite(t *testing.T, srv *llmserver.Server, models, mode string) string {
	t.Helper()
	var cases strings.Builder
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&cases, "  - {id: c%d, input: \"Please answer case %d.\", checks: [{final_answer: {contains: \"answer %d\"}}]}\n", i, i, i)
	}
	return filepath.Join(writeFiles(t, map[string]string{
		"agent.yaml":              "name: gate\nsystem_prompt: Answer the question.\n",
		"profiles/candidate.yaml": "system_prompt_suffix: \"MODE " + mode + "\"\n",
		"suite.yaml": "version: 1\nname: gate\nmode: live\nagent: agent.yaml\nmodels: " + models + "\n" +
			"profiles: [{name: candidate, file: profiles/candidate.yaml}]\n" +
			"providers:\n" +
			"  anthropic: {kind: anthropic, base_url: \"" + srv.URL + "\", api_key_env: ANTHROPIC_API_KEY}\n" +
			"  openai: {kind: openai, base_url: \"" + srv.URL + "/v1\", api_key_env: OPENAI_API_KEY}\n" +
			"cases:\n" + cases.String(),
	}), "suite.yaml")
}

// TestGateEndToEnd is the gate of issue 12 end to end, live against the
// local scripted provider: observation 1 (a change that breaks 3 of 5
// cases in both models at 1 epoch) fails by default and names the cases;
// the significant policy, chosen explicitly, calls it inconclusive and
// says how many epochs would decide; identical runs pass; one flip among
// 40 pairs passes.
func TestGateEndToEnd(t *testing.T) {
	srv := llmserver.NewServer(&gateModel{})
	defer srv.Close()
	keys := mapEnv(map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
	const models = "[anthropic:claude-sonnet-4-6, openai:gpt-5]"
	run := func(mode string, epochs string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := runCLIEnv(t, keys, "run", gateSuite(t, srv, models, mode), "--out", out, "--format", "none", "--epochs", epochs)
		require.NotEqual(t, 2, code, "the run could not be judged:\n%s\n%s", stdout, stderr)
		return out
	}
	base := run("normal", "1")

	t.Run("3 of 5 cases break in both models at 1 epoch", func(t *testing.T) {
		head := run("break", "1")
		code, stdout, stderr := runCLIEnv(t, keys, "compare", base, head, "--format", "md")
		assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr, "underpowered drop: overall pass rate fell 60.0 pp (6 pass → fail, 0 fail → pass in 10 pairs)")
		assert.Contains(t, stderr, "(--epochs 2) would decide")
		assert.True(t, strings.HasPrefix(stdout, "### ❌ dageval compare · gate: underpowered"), stdout)
		for _, c := range []string{"c1", "c2", "c3"} {
			assert.Contains(t, stdout, "**"+c+"** · `anthropic:claude-sonnet-4-6` · candidate 1/1 → 0/1 passed")
			assert.Contains(t, stdout, "**"+c+"** · `openai:gpt-5` · candidate 1/1 → 0/1 passed")
		}
		assert.NotContains(t, stdout, "**c4**")

		code, stdout, stderr = runCLIEnv(t, keys, "compare", base, head, "--policy", "significant", "--format", "md")
		assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr, "inconclusive: 6 pairs went pass → fail and 0 fail → pass")
		assert.Regexp(t, `detecting 60\.0 pp would need about \d+ more paired rollouts \(≈ \d+ more epochs? per cell\)`, stderr)
		assert.True(t, strings.HasPrefix(stdout, "### ❔ "), "a drop passed by an explicit policy is never a green check:\n%s", stdout)
	})

	t.Run("identical runs pass", func(t *testing.T) {
		code, stdout, stderr := runCLIEnv(t, keys, "compare", base, run("normal", "1"))
		assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr, "unchanged: all 10 pairs")
	})

	t.Run("one flip among 40 pairs passes", func(t *testing.T) {
		base4 := run("normal", "4")
		head := run("flip-once", "4")
		code, stdout, stderr := runCLIEnv(t, keys, "compare", base4, head)
		assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr, "inconclusive: 1 pair went pass → fail and 0 fail → pass")
		assert.Regexp(t, `\| overall +\| +\| +40 \|`, stdout)
	})
}

// TestCompareModelSwap is observation 7 of issue 12: a pull request that
// replaces openai:gpt-5 with openai:gpt-5-mini exited 2 ("different
// suite"). With --pair, or with both models under the same alias in the
// suite, it is compared case by case, and the assembled-agent diff shows
// the model change.
func TestCompareModelSwap(t *testing.T) {
	srv := llmserver.NewServer(&gateModel{})
	defer srv.Close()
	keys := mapEnv(map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
	run := func(models, mode string) (string, string) {
		t.Helper()
		suite := gateSuite(t, srv, models, mode)
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := runCLIEnv(t, keys, "run", suite, "--out", out, "--format", "none")
		require.NotEqual(t, 2, code, "%s\n%s", stdout, stderr)
		return out, filepath.Dir(suite)
	}

	base, baseDir := run("[anthropic:claude-sonnet-4-6, openai:gpt-5]", "normal")
	head, headDir := run("[anthropic:claude-sonnet-4-6, openai:gpt-5-mini]", "normal")
	code, stdout, stderr := runCLIEnv(t, keys, "compare", base, head)
	assert.Equal(t, 2, code, "without a pairing the models cannot be matched:\n%s\n%s", stdout, stderr)
	assert.Contains(t, stderr, "the models do not pair: base has openai:gpt-5, head has openai:gpt-5-mini without a counterpart; to compare them case by case, pass --pair openai:gpt-5=openai:gpt-5-mini")

	code, stdout, stderr = runCLIEnv(t, keys, "compare", base, head, "--pair", "openai:gpt-5=openai:gpt-5-mini", "--format", "md",
		"--base-agent", filepath.Join(baseDir, "agent.yaml"), "--head-agent", filepath.Join(headDir, "agent.yaml"))
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "unchanged: all 10 pairs")
	assert.Contains(t, stdout, "Models paired by role: openai:gpt-5 → openai:gpt-5-mini.")
	assert.Contains(t, stdout, "| `openai:gpt-5 → openai:gpt-5-mini` | candidate | 100.0% → 100.0% |")
	assert.Contains(t, stdout, "-model: openai:gpt-5\n+model: openai:gpt-5-mini", "the assembled-agent diff shows the model change")

	// A swap that breaks cases is judged like any other change.
	broken, _ := run("[anthropic:claude-sonnet-4-6, openai:gpt-5-mini]", "break")
	code, _, stderr = runCLIEnv(t, keys, "compare", base, broken, "--pair", "openai:gpt-5=openai:gpt-5-mini")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "c1 · openai:gpt-5 → openai:gpt-5-mini · candidate")

	// Aliases in the suite pair the swap without a flag.
	aliasBase, _ := run("[anthropic:claude-sonnet-4-6, {spec: openai:gpt-5, alias: primary}]", "normal")
	aliasHead, _ := run("[anthropic:claude-sonnet-4-6, {spec: openai:gpt-5-mini, alias: primary}]", "normal")
	code, stdout, stderr = runCLIEnv(t, keys, "compare", aliasBase, aliasHead)
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "Models paired by role: openai:gpt-5 → openai:gpt-5-mini (alias primary)")
	sum, err := os.ReadFile(filepath.Join(aliasHead, "results.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(sum), `"alias":"primary"`)

	// Changed cases are still refused, whatever the pairing.
	other := gateSuite(t, srv, "[anthropic:claude-sonnet-4-6, openai:gpt-5-mini]", "normal")
	b, err := os.ReadFile(other)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(other, []byte(strings.Replace(string(b), "Please answer case 5.", "Please answer case 5 now.", 1)), 0o644))
	changed := filepath.Join(t.TempDir(), "out")
	code, _, stderr = runCLIEnv(t, keys, "run", other, "--out", changed, "--format", "none")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runCLIEnv(t, keys, "compare", base, changed, "--pair", "openai:gpt-5=openai:gpt-5-mini")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "suite_digest differs")
}
