package cassette_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/cassette"
)

// corpus is the recordings collected from projects beside pydantic-ai, by
// project directory under cassettes/thirdparty, with the repository each
// README must name.
var corpus = []struct {
	dir, repo, licence string
	files              []string
}{
	{"crewai", "crewAIInc/crewAI", "MIT", []string{
		"llms/anthropic/test_anthropic_tool_execution_with_available_functions.yaml",
		"llms/google/test_gemini_async_conversation.yaml",
		"llms/google/test_gemini_token_usage_tracking.yaml",
		"llms/google/test_gemini_tool_returning_float.yaml",
		"llms/google/test_google_async_streaming_returns_usage_metrics.yaml",
		"llms/google/test_google_streaming_returns_usage_metrics.yaml",
		"llms/openai/test_openai_responses_api_streaming.yaml",
	}},
	{"llm", "simonw/llm", "Apache-2.0", []string{
		"test_openai_responses/test_responses_tool_use.yaml",
		"test_tools/test_tool_use_chain_of_two_calls.yaml",
		"test_tools_streaming/test_tools_streaming_variant_a.yaml",
	}},
	{"llm-anthropic", "simonw/llm-anthropic", "Apache-2.0", []string{
		"test_anthropic/test_prompt.yaml",
		"test_anthropic/test_tools.yaml",
	}},
	{"llm-gemini", "simonw/llm-gemini", "Apache-2.0", []string{
		"test_gemini/test_prompt.yaml",
		"test_gemini/test_stream_events_tool_calls.yaml",
		"test_gemini/test_tools.yaml",
		"test_gemini/test_tools_with_gemini_3_thought_signatures.yaml",
	}},
}

// TestThirdPartyCorpusImportsAsCommitted: every project directory carries
// its licence and a README naming the repository, its raw recordings are
// exactly the listed ones, and each imports to its committed imported/ copy
// byte for byte, with every credential header redacted.
func TestThirdPartyCorpusImportsAsCommitted(t *testing.T) {
	root := filepath.Join("..", "..", "cassettes", "thirdparty")
	total := 0
	for _, p := range corpus {
		t.Run(p.dir, func(t *testing.T) {
			dir := filepath.Join(root, p.dir)
			licence, err := os.ReadFile(filepath.Join(dir, "LICENSE"))
			require.NoError(t, err)
			assert.NotEmpty(t, licence)
			readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
			require.NoError(t, err)
			assert.Contains(t, string(readme), "https://github.com/"+p.repo)
			assert.Contains(t, string(readme), p.licence)

			var raw []string
			require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && d.Name() == "imported" {
					return filepath.SkipDir
				}
				if !d.IsDir() && strings.HasSuffix(path, ".yaml") {
					rel, _ := filepath.Rel(dir, path)
					raw = append(raw, filepath.ToSlash(rel))
				}
				return nil
			}))
			slices.Sort(raw)
			assert.Equal(t, p.files, raw)
			for _, rel := range p.files {
				total++
				c, err := cassette.ImportVCRPyFile(filepath.Join(dir, filepath.FromSlash(rel)))
				require.NoError(t, err, rel)
				assert.Equal(t, cassette.MatchOrder, c.MatchMode(), rel)
				data, err := c.Marshal()
				require.NoError(t, err, rel)
				golden := filepath.Join(dir, "imported", filepath.FromSlash(rel))
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "run: dageval cassette import --from vcrpy %s -o %s", rel, golden)
				assert.Equal(t, string(want), string(data), "import output changed; regenerate %s if intended", golden)
				for _, pr := range cassette.Lint(c, cassette.LintOptions{}) {
					assert.NotEqual(t, cassette.CheckSecret, pr.Check, "%s: %s", rel, pr)
				}
				for _, it := range c.Interactions {
					for _, h := range []string{"X-Goog-Api-Key", "X-Api-Key", "Authorization"} {
						for _, v := range it.Request.Headers.Values(h) {
							assert.Equal(t, cassette.Redacted, v, "%s: %s", rel, h)
						}
					}
				}
			}
		})
	}
	assert.GreaterOrEqual(t, total, 15)
}
