package agentfile_test

import (
	"testing"

	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/internal/fuzzseed"
)

// FuzzParseAgentFile feeds the agent-file parser mutations of the example
// agents: refusals are errors, never panics.
func FuzzParseAgentFile(f *testing.F) {
	fuzzseed.Add(f, 20, "../../evals/examples/agents/*.yaml", "../../evals/examples/quickstart/agents/*.yaml")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		af, err := agentfile.Parse(dir+"/agent.yaml", data)
		if err == nil && af == nil {
			t.Fatal("no file and no error")
		}
	})
}
