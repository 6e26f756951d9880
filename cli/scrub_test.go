package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/internal/scrub"
)

// Secrets the canary run meets: the provider key it is configured with
// (found by its value) and a key of another provider that only its shape
// gives away.
const (
	canaryKey   = "canary-key-7Qm2x9Lp4Rt8Vw3"
	canaryShape = "sk-ant-api03-canaryShape0123456789abcdef"
)

// echoingProvider answers as an agent whose provider echoes the key back:
// in its text, in the arguments of a file it writes and, through a tool
// whose result prints the key, in what the agent reads; and as a grader
// whose explanation repeats it.
func echoingProvider() llm.ChatModel {
	return fakes.NewRuleModel(
		fakes.GraderFunc(func(g fakes.GraderRequest) middleware.GraderResponse {
			v := fakes.VerdictFor(g.Criteria)
			v.Explanation = "The agent was authorised with Bearer " + canaryKey + "."
			return v
		}),
		fakes.Rule{
			Name: "answer",
			When: fakes.LastIsToolResult("whoami"),
			Reply: func(*llm.Request) (*llm.Response, error) {
				return &llm.Response{Message: llm.Assistant("Done: you are authorised as " + canaryKey + " (and " + canaryShape + ").")}, nil
			},
		},
		fakes.Rule{
			Name: "act",
			Reply: func(*llm.Request) (*llm.Response, error) {
				return &llm.Response{Message: llm.Assistant("Your header is Authorization: Bearer "+canaryKey,
					fakes.CallID("c1", "write_file", map[string]string{"file_path": "/key.txt", "content": "key=" + canaryKey + "\nother=" + canaryShape + "\n"}),
					fakes.CallID("c2", "whoami", map[string]string{}))}, nil
			},
		},
	)
}

// TestNoSecretInAnyArtifact runs a suite whose provider and tool echo the
// API key, live, then recording, then replaying, with every report format
// and a comparison, and greps everything written for the key: the output
// directories (results.jsonl, cells/*.json, summary.json, summary.md, the
// reports), the cassettes, the comparison, stdout and stderr. The key is
// nowhere; the marker is where it was.
func TestNoSecretInAnyArtifact(t *testing.T) {
	srv := llmserver.NewServer(echoingProvider())
	defer srv.Close()
	suite := func(mode string) string {
		return `version: 1
name: canary
providers: {local: {kind: openai-compatible, base_url: "` + srv.OpenAIBaseURL() + `", api_key_env: LOCAL_KEY}}
models: [local:agent-model]
grader: {model: local:grader-model}
mode: ` + mode + `
agent: {name: echo, tools: [{name: whoami}]}
tools: {whoami: {mock: {result: "authenticated with Bearer ` + canaryKey + `"}}}
cases:
  - id: echo
    input: Who am I?
    rubric: [{name: answers, description: Answers the question.}]
    checks: [{tool_called: {name: whoami}}]
`
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "suite.yaml")
	getenv := mapEnv(map[string]string{"LOCAL_KEY": canaryKey})
	var printed []string
	run := func(mode string) string {
		t.Helper()
		require.NoError(t, os.WriteFile(path, []byte(suite(mode)), 0o644))
		out := filepath.Join(t.TempDir(), mode)
		code, stdout, stderr := runCLIEnv(t, getenv, "run", path, "--out", out, "--format", "table,md,json,junit,html")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		printed = append(printed, stdout, stderr)
		return out
	}
	live := run("live")
	recorded := run("record")
	cassettes := filepath.Join(dir, "cassettes")
	require.DirExists(t, cassettes)
	srv.Close()
	replayed := run("replay")

	cmpDir := t.TempDir()
	code, stdout, stderr := runCLIEnv(t, getenv, "compare", live, replayed, "--format", "table,md,json,html", "-o", cmpDir)
	require.Less(t, code, 2, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	printed = append(printed, stdout, stderr)

	var files, names []string
	for _, root := range []string{live, recorded, replayed, cassettes, cmpDir} {
		require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
				rel, _ := filepath.Rel(filepath.Dir(root), p)
				names = append(names, rel)
			}
			return err
		}))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, secret := range []string{canaryKey, canaryShape, "canary-key-", "canaryShape"} {
			assert.False(t, strings.Contains(string(data), secret), "%s holds %q", f, secret)
		}
	}
	for _, p := range printed {
		assert.False(t, strings.Contains(p, canaryKey) || strings.Contains(p, canaryShape), "printed a secret:\n%s", p)
	}
	for _, out := range []string{live, recorded, replayed} {
		for _, f := range []string{"results.jsonl", "summary.json", "summary.md", "report.json", "report.junit.xml", "report.html", "cells/echo--local-agent-model--default--e1.json"} {
			assert.FileExists(t, filepath.Join(out, f))
		}
		cell, err := os.ReadFile(filepath.Join(out, "cells", "echo--local-agent-model--default--e1.json"))
		require.NoError(t, err)
		assert.Contains(t, string(cell), "Bearer "+scrub.Marker, "the marker stands where the key was")
		assert.True(t, json.Valid(cell))
		assert.Contains(t, string(readFileT(t, filepath.Join(out, "report.html"))), scrub.Marker)
	}
	cas := readFileT(t, filepath.Join(cassettes, "echo--local-agent-model--default--e1.yaml"))
	assert.Contains(t, string(cas), scrub.Marker)
	t.Logf("grepped %d files: %s", len(files), strings.Join(names, ", "))
}

func readFileT(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}
