package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/cli"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address: the
// suite replays its cassettes, offline.
func TestMain(m *testing.M) { netguard.Main(m) }

// evals runs the command in-process, as `go run ./cmd/evals ARGS` would.
func evals(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(args, append(options, cli.WithContext(t.Context()), cli.WithStdio(strings.NewReader(""), &out, &errb),
		cli.WithGetenv(func(string) string { return "" }))...)
	return code, out.String(), errb.String()
}

const suite = "../../evals/suite.yaml"

// The team's command runs every subcommand with its Go agent: validate,
// run on the recorded cassettes, assemble --diff against the agent's YAML
// twin, and compare two runs with the assembled-agent diff beside them.
func TestTheTeamsCommand(t *testing.T) {
	code, out, errOut := evals(t, "validate", suite)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, suite+": valid: 3 cases × 1 models × 1 profiles, 3 cells\n", out)

	base, head := filepath.Join(t.TempDir(), "base"), filepath.Join(t.TempDir(), "head")
	code, out, errOut = evals(t, "run", suite, "--out", base)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "PASSED: 3 of 3 cells passed")
	results, err := os.ReadFile(filepath.Join(base, "results.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(results), `"name":"mentions_order","passed":true`, "the Go check judged every case")
	code, _, errOut = evals(t, "run", suite, "--out", head, "--format", "none")
	require.Equal(t, 0, code, errOut)

	// The agent built in Go and its agent file assemble to the same agent.
	twin := "../../evals/agent.yaml"
	code, out, errOut = evals(t, "assemble", "--diff", "--base-agent", "factory:support", "--head-agent", twin, "--model", "corp:support-large")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "assemblies are identical\n", out)

	// A policy change shows where it lands in what the model reads.
	data, err := os.ReadFile(twin)
	require.NoError(t, err)
	v2 := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(v2, bytes.Replace(data, []byte("refund_days: 30"), []byte("refund_days: 14"), 1), 0o644))
	code, out, errOut = evals(t, "assemble", "--diff", "--base-agent", "factory:support", "--head-agent", v2, "--model", "corp:support-large", "--stack", "main", "--omit-builtin-schemas")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "-  Refund policy: items can be returned within 30 days of delivery. Never promise more.\n+  Refund policy: items can be returned within 14 days of delivery. Never promise more.\n")

	code, out, errOut = evals(t, "compare", base, head, "--format", "md", "--base-agent", "factory:support", "--head-agent", v2, "--model", "corp:support-large")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "within 14 days", "the agent diff is beside the comparison")
	assert.Contains(t, errOut, "dageval compare: ")

	// The dageval command without the team's registrations cannot run it.
	var o, e bytes.Buffer
	code = cli.Main([]string{"validate", suite}, cli.WithContext(t.Context()), cli.WithStdio(strings.NewReader(""), &o, &e))
	assert.Equal(t, 2, code)
	assert.Contains(t, e.String(), `agent.factory: no agent factory is registered as "support"`)
}
