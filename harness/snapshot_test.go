package harness_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
)

// snapshotCase is one configuration whose assembly and first request are
// kept as golden files.
type snapshotCase struct {
	name  string
	model *fakes.Scripted
	// setup returns the configuration; dir is a fresh directory for
	// backends that need one.
	setup func(t *testing.T, dir string) harness.Config
	files map[string]agent.FileData
}

// The skill and memory files of the Deep Agents memory_and_skills scenario.
var skillsAndMemoryFiles = map[string]agent.FileData{
	"/skills/user/web-research/SKILL.md":   {Content: "---\nname: web-research\ndescription: Structured approach to researching a topic on the web and citing sources\n---\n\n# Web research\n\n1. Plan queries.\n2. Read sources.\n3. Cite them.\n"},
	"/skills/project/code-review/SKILL.md": {Content: "---\nname: code-review\ndescription: Review a change for correctness, tests and style\nlicense: Apache-2.0\nallowed-tools: read_file grep\n---\n\n# Code review\n"},
	"/memory/AGENTS.md":                    {Content: "# Project memory\n\n<!-- Maintained by the team. -->\n- Run `make test` before committing.\n- The API lives in /src/api.\n"},
	"/memory/user/AGENTS.md":               {Content: "# User preferences\n\n- Prefers concise answers.\n- Uses tabs for indentation.\n"},
}

func snapshotCases() []snapshotCase {
	sonnet := func() *fakes.Scripted { return fakeModel("anthropic", "claude-sonnet-4-6") }
	withProfile := func(t *testing.T, spec profile.HarnessSpec) *profile.HarnessProfile {
		p, err := profile.NewHarnessProfile(spec)
		require.NoError(t, err)
		return p
	}
	return []snapshotCase{
		{name: "default", model: sonnet(), setup: func(*testing.T, string) harness.Config { return harness.Config{} }},
		{name: "custom_system_prompt", model: sonnet(), setup: func(*testing.T, string) harness.Config {
			return harness.Config{SystemPrompt: "You are Bobby, a virtual assistant for company X."}
		}},
		{name: "prompt_blocks_cache_control", model: sonnet(), setup: func(*testing.T, string) harness.Config {
			return harness.Config{SystemBlocks: []llm.Block{
				{Type: llm.BlockText, Text: "You are Bobby, a virtual assistant for company X.", CacheControl: &llm.CacheControl{Type: "ephemeral", TTL: "1h"}},
				llm.TextBlock("\n\nToday's focus: billing questions."),
			}}
		}},
		{name: "local_shell_backend", model: sonnet(), setup: func(t *testing.T, dir string) harness.Config {
			b, err := backend.NewLocalShell(dir, backend.LocalShellOptions{})
			require.NoError(t, err)
			return harness.Config{Backend: b}
		}},
		{name: "composite_routed_backend", model: sonnet(), setup: func(t *testing.T, dir string) harness.Config {
			mk := func(sub string) string {
				p := filepath.Join(dir, sub)
				require.NoError(t, os.MkdirAll(p, 0o755))
				return p
			}
			shell, err := backend.NewLocalShell(mk("workspace"), backend.LocalShellOptions{})
			require.NoError(t, err)
			common, err := backend.NewFilesystem(mk("workspace/app"), backend.FilesystemOptions{})
			require.NoError(t, err)
			legacy, err := backend.NewFilesystem(mk("legacy"), backend.FilesystemOptions{HostPaths: true})
			require.NoError(t, err)
			c, err := backend.NewComposite(shell, []backend.Route{
				{Prefix: "/common/", Backend: common},
				{Prefix: "/legacy/", Backend: legacy},
				{Prefix: "/notes/", Backend: backend.NewState()},
			}, backend.CompositeOptions{})
			require.NoError(t, err)
			return harness.Config{Backend: c}
		}},
		{name: "sync_and_async_subagents", model: sonnet(), setup: func(*testing.T, string) harness.Config {
			return harness.Config{SubAgents: []harness.SubAgentSpec{
				{Name: "code-reviewer", Description: "Reviews a change for bugs, missing tests and style problems.", SystemPrompt: "You review code changes. Report problems with file and line, most severe first."},
				{Name: "researcher", Description: "Researches a question on a remote deployment.", GraphID: "research-graph", URL: "https://agents.example.com"},
				{Name: "summarizer", Description: "Summarizes long documents on a remote deployment.", GraphID: "summary-graph"},
			}}
		}},
		{name: "skills_and_memory", model: sonnet(), files: skillsAndMemoryFiles, setup: func(*testing.T, string) harness.Config {
			return harness.Config{Skills: []string{"/skills/user/", "/skills/project/"}, Memory: []string{"/memory/AGENTS.md", "/memory/user/AGENTS.md"}}
		}},
		{name: "profile_base_and_suffix", model: sonnet(), setup: func(t *testing.T, _ string) harness.Config {
			return harness.Config{SystemPrompt: "You help the support team.", Profile: withProfile(t, profile.HarnessSpec{
				BaseSystemPrompt:   ptr("You are a careful assistant that checks its work."),
				SystemPromptSuffix: ptr("Answer in plain English."),
			})}
		}},
		{name: "profile_excludes_middleware", model: sonnet(), setup: func(t *testing.T, _ string) harness.Config {
			return harness.Config{Profile: withProfile(t, profile.HarnessSpec{ExcludedMiddleware: []string{summMW, cacheMW}})}
		}},
		{name: "profile_excludes_tools", model: sonnet(), setup: func(t *testing.T, _ string) harness.Config {
			return harness.Config{Profile: withProfile(t, profile.HarnessSpec{
				ExcludedTools:            []string{"delete", "write_file"},
				ToolDescriptionOverrides: map[string]string{"edit_file": "Edits a file in place. Read it first."},
			})}
		}},
		{name: "caller_replaces_summarization", model: sonnet(), setup: func(t *testing.T, _ string) harness.Config {
			s, err := middleware.NewSummarization(middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Messages: 40}}, Keep: middleware.Threshold{Messages: 10}})
			require.NoError(t, err)
			compact, err := middleware.NewCompactConversation(s, middleware.CompactConversationOptions{SystemPrompt: "Call compact_conversation when you switch to an unrelated task."})
			require.NoError(t, err)
			return harness.Config{Middleware: []agent.Middleware{s, compact}}
		}},
		{name: "general_purpose_disabled", model: sonnet(), setup: func(t *testing.T, _ string) harness.Config {
			return harness.Config{Profile: withProfile(t, profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(false)}})}
		}},
		{name: "codex_profile", model: fakeModel("openai", "gpt-5.3-codex"), setup: func(*testing.T, string) harness.Config { return harness.Config{} }},
	}
}

// requestSnapshot is what the model received on its first call: the system
// prompt as blocks (cache-control markers included) and the tools.
type requestSnapshot struct {
	System []llm.Block     `json:"system"`
	Tools  []llm.ToolSpec  `json:"tools"`
	Model  string          `json:"model"`
	First  json.RawMessage `json:"first_message"`
}

func TestAssemblySnapshots(t *testing.T) {
	for _, tt := range snapshotCases() {
		t.Run(tt.name, func(t *testing.T) {
			text, req := snapshotOf(t, tt)
			snaps.WithConfig(snaps.Ext(".txt")).MatchStandaloneSnapshot(t, text)
			snaps.MatchStandaloneJSON(t, req)
		})
	}
}

// snapshotOf assembles a case twice (in fresh directories) and checks both
// runs agree byte for byte, so a golden file can never hold anything that
// depends on the machine, the clock or map order.
func snapshotOf(t *testing.T, tt snapshotCase) (string, []byte) {
	t.Helper()
	var texts []string
	var reqs [][]byte
	for range 2 {
		c := tt
		c.model = fakes.NewScripted(fakes.Reply("hello!")).WithIdentity(tt.model.Identity().Provider, tt.model.Identity().Model)
		cfg := c.setup(t, t.TempDir())
		cfg.Model = c.model
		cfg.Profiles = profile.NewRegistry(profile.WithPlugins()) // built-ins only
		a, err := harness.New(cfg)
		require.NoError(t, err)
		as, err := a.Describe(t.Context(), harness.DescribeOptions{Files: c.files})
		require.NoError(t, err)
		text := as.Text()
		_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}, Files: c.files})
		require.NoError(t, err)
		sent := c.model.Requests()
		require.NotEmpty(t, sent)
		first := sent[0]
		main := stackOf(t, as, "main")
		assert.Equal(t, first.SystemText(), main.SystemPrompt, "the assembly shows the prompt the model received")
		assert.Equal(t, toolNames(first.Tools), stackTools(main), "the assembly shows the tools the model received")
		if len(first.System) > 0 {
			assert.Equal(t, first.System, main.SystemBlocks, "the assembly shows the system blocks the model received")
		}
		var marked int
		for _, tl := range first.Tools {
			if tl.CacheControl != nil {
				marked++
			}
		}
		for _, m := range first.Messages {
			for _, b := range m.Content {
				if b.CacheControl != nil {
					marked++
				}
			}
		}
		for _, b := range first.System {
			if b.CacheControl != nil {
				marked++
			}
		}
		assert.Len(t, main.CacheBreakpoints, marked, "the assembly shows every cache breakpoint the model received")
		msg, err := json.Marshal(first.Messages[0])
		require.NoError(t, err)
		raw := readableJSON(t, requestSnapshot{System: first.System, Tools: first.Tools, Model: c.model.Identity().String(), First: msg})
		texts = append(texts, text)
		reqs = append(reqs, raw)
		for _, dir := range []string{os.TempDir(), t.TempDir()} {
			assert.NotContains(t, text, dir, "no machine paths in the assembly")
			assert.NotContains(t, string(raw), dir, "no machine paths in the request")
		}
	}
	require.Equal(t, texts[0], texts[1], "assembly text is deterministic")
	require.Equal(t, string(reqs[0]), string(reqs[1]), "first request is deterministic")
	return texts[0], reqs[0]
}

// Under CI=true a missing snapshot must fail rather than be written; this
// is go-snaps' behaviour, checked here so a dependency update cannot
// silently turn CI into a snapshot writer.
func TestMissingSnapshotFailsUnderCI(t *testing.T) {
	if os.Getenv("DAGEVAL_SNAPSHOT_PROBE") != "" {
		snaps.WithConfig(snaps.Dir(os.Getenv("DAGEVAL_SNAPSHOT_PROBE"))).MatchStandaloneSnapshot(t, "anything")
		return
	}
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestMissingSnapshotFailsUnderCI$", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "UPDATE_SNAPS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "CI=true", "DAGEVAL_SNAPSHOT_PROBE="+dir)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a missing snapshot under CI=true fails:\n%s", out)
	assert.Contains(t, string(out), "snapshot not found")
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "nothing was written")
}

// readableJSON encodes v with "<" and ">" left as they are (the JSON means
// the same; the golden file reads better).
func readableJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var generic any
	require.NoError(t, json.Unmarshal(raw, &generic))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(generic))
	return buf.Bytes()
}
