package evals_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
)

// TestConcurrentCellsSeeOnlyTheirOwnFiles: the cells of a live run share
// their resolver and SDK clients, and their agents share what assembling
// the same stack renders, yet each cell's agent works on files of its
// own. Every cell writes the same path, reads it back, and finds there
// only what it wrote, over the files its case seeded; a backend, a file
// tool or a model shared between cells would show another cell's content.
func TestConcurrentCellsSeeOnlyTheirOwnFiles(t *testing.T) {
	const cases = 8
	m := &convModel{convs: map[string][]llm.Message{}}
	var suite strings.Builder
	for i := range cases {
		input := fmt.Sprintf("case %d: take notes", i)
		m.convs[input] = []llm.Message{
			say("", call("write_file", fmt.Sprintf(`{"file_path":"/notes.txt","content":"notes of case %d"}`, i))),
			say("", call("read_file", `{"file_path":"/notes.txt"}`), call("read_file", `{"file_path":"/seed.txt"}`)),
			say("done"),
		}
		fmt.Fprintf(&suite, "  - id: case-%d\n    input: %q\n    files: {/seed.txt: seed of case %d}\n    checks: [{file_contains: {path: /notes.txt, text: notes of case %d}}]\n", i, input, i, i)
	}
	srv := server(t, m)
	path := writeSuite(t, map[string]string{"suite.yaml": liveHeader(srv.URL) + "models: [local:model-a, local:model-b]\nconcurrency: 4\nagent: {name: notes}\ncases:\n" + suite.String()})
	oc := runSuite(t, path, evals.Options{Concurrency: 4})
	require.Len(t, oc.Results, 2*cases)
	for _, r := range oc.Results {
		require.Equal(t, evals.StatusPass, r.Status, "%s: %s %v", r.ID, r.Error, r.Checks)
		var i int
		_, err := fmt.Sscanf(r.Case, "case-%d", &i)
		require.NoError(t, err)
		d := oc.Details[r.ID]
		require.NotNil(t, d, r.ID)
		assert.Equal(t, map[string]string{"/notes.txt": fmt.Sprintf("notes of case %d", i)}, d.Files, r.ID)
		var read []string
		for _, msg := range d.Messages {
			if msg.Role == llm.RoleTool {
				read = append(read, msg.Text())
			}
		}
		require.Len(t, read, 3, r.ID)
		assert.Contains(t, read[1], fmt.Sprintf("notes of case %d", i), r.ID)
		assert.Contains(t, read[2], fmt.Sprintf("seed of case %d", i), r.ID)
		for j := range cases {
			if j != i {
				assert.NotContains(t, read[1]+read[2], fmt.Sprintf("case %d", j), r.ID)
			}
		}
	}
}
