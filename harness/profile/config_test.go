package profile_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/profile"
)

func fullConfig() profile.Config {
	return profile.Config{
		BaseSystemPrompt:         ptr("Line one.\nLine two: with a colon.\n"),
		SystemPromptSuffix:       ptr("B\n\n"),
		ToolDescriptionOverrides: map[string]string{"task": "Delegate. {available_agents}", "ls": "  leading spaces", "grep": "# not a comment"},
		ExcludedTools:            []string{"write_file", "execute"},
		ExcludedMiddleware:       []string{"SummarizationMiddleware", "AnthropicPromptCachingMiddleware"},
		GeneralPurposeSubagent:   &profile.GeneralPurposeSubagent{Enabled: ptr(false), Description: ptr(""), SystemPrompt: ptr("yes")},
	}
}

func TestDeepAgentsProfileFileLoads(t *testing.T) {
	c, err := profile.LoadConfigFile("testdata/deepagents_profile.yaml")
	require.NoError(t, err)
	want := &profile.Config{
		BaseSystemPrompt:   ptr("You are a meticulous code reviewer.\nRead the diff before commenting.\n"),
		SystemPromptSuffix: ptr("Answer in plain English; keep it short."),
		ToolDescriptionOverrides: map[string]string{
			"ls":   "List the files in a directory of the review workspace.",
			"task": "Hand a self-contained review question to a subagent. Available: {available_agents}",
		},
		ExcludedTools:          []string{"execute", "write_file"},
		ExcludedMiddleware:     []string{"PatchToolCallsMiddleware", "SummarizationMiddleware"},
		GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(true), Description: ptr("Researches one question about the codebase.")},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("config mismatch (-want +got):\n%s", diff)
	}
	p, err := c.HarnessProfile()
	require.NoError(t, err)
	assert.Equal(t, "You are a meticulous code reviewer.\nRead the diff before commenting.\n\n\nAnswer in plain English; keep it short.", p.ApplyPrompt(""))
	assert.Contains(t, p.ExcludedTools(), "write_file")

	j, err := profile.LoadConfigFile("testdata/profile.json")
	require.NoError(t, err)
	assert.Equal(t, &profile.Config{
		SystemPromptSuffix:     ptr("Be terse."),
		ExcludedTools:          []string{"execute"},
		GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(false)},
	}, j)
}

func TestMalformedProfileFiles(t *testing.T) {
	tests := []struct {
		file string
		want []string
		is   []error
	}{
		{"testdata/bad_keys.yaml", []string{
			`testdata/bad_keys.yaml:2:1: extra_middleware: unknown key "extra_middleware"; a profile file may use base_system_prompt, system_prompt_suffix, tool_description_overrides, excluded_tools, excluded_middleware, general_purpose_subagent, todo_system_prompt (extra middleware is code: register it from Go)`,
			`testdata/bad_keys.yaml:4:7: tool_description_overrides.ls: must be a string, got a number`,
			`testdata/bad_keys.yaml:6:12: general_purpose_subagent.enabled: must be true, false or null, got a string`,
			`testdata/bad_keys.yaml:7:3: general_purpose_subagent.colour: unknown key "colour"; general_purpose_subagent may use enabled, description, system_prompt`,
		}, nil},
		{"testdata/bad_exclusions.yaml", []string{
			`testdata/bad_exclusions.yaml:3:5: excluded_middleware[1]: invalid excluded_middleware entry: entry "_ToolExclusionMiddleware" cannot start with '_'`,
			`testdata/bad_exclusions.yaml:4:5: excluded_middleware[2]: invalid excluded_middleware entry: entry "deepagents.middleware:Custom" contains ':'`,
			`testdata/bad_exclusions.yaml:5:5: excluded_middleware[3]: invalid excluded_middleware entry: entry "   " is empty`,
			`testdata/bad_exclusions.yaml:6:5: excluded_middleware[4]: required scaffolding cannot be excluded: "FilesystemMiddleware"; to hide its tools use excluded_tools instead`,
			`testdata/bad_exclusions.yaml:7:5: excluded_middleware[5]: must be a string, got a number`,
			`testdata/bad_exclusions.yaml:8:17: excluded_tools: must be a list of strings, got a string`,
		}, []error{profile.ErrInvalidExclusion, profile.ErrScaffolding}},
		{"testdata/bad_types.json", []string{
			`testdata/bad_types.json:2:25: base_system_prompt: must be a string or null, got a number`,
			`testdata/bad_types.json:3:28: excluded_tools[1]: must be a string, got a boolean`,
			`testdata/bad_types.json:4:31: general_purpose_subagent: must be a mapping with enabled, description, system_prompt, got a string`,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := profile.LoadConfigFile(tt.file)
			require.Error(t, err)
			assert.Nil(t, c, "nothing half-loaded")
			got := strings.Split(err.Error(), "\n")
			for i := range got {
				// Compare the leading part: messages may add advice after a semicolon.
				if i < len(tt.want) && strings.HasPrefix(got[i], tt.want[i]) {
					got[i] = tt.want[i]
				}
			}
			assert.Equal(t, tt.want, got)
			var ce *profile.ConfigError
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, tt.file, ce.File)
			for _, is := range tt.is {
				assert.ErrorIs(t, err, is)
			}
		})
	}
}

func TestParseConfigEdgeCases(t *testing.T) {
	tests := []struct {
		name, src string
		want      *profile.Config
		err       string
	}{
		{"empty document", "", &profile.Config{}, ""},
		{"comments only", "# nothing here\n", &profile.Config{}, ""},
		{"null document", "null\n", &profile.Config{}, ""},
		{"nulls mean unset", "base_system_prompt: null\ntool_description_overrides: null\nexcluded_tools: null\ngeneral_purpose_subagent: null\n", &profile.Config{}, ""},
		{"empty string is set", "base_system_prompt: ''\n", &profile.Config{BaseSystemPrompt: ptr("")}, ""},
		{"explicit empty sub-profile", "general_purpose_subagent: {}\n", &profile.Config{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{}}, ""},
		{"todo prompt", "todo_system_prompt: Plan first.\n", &profile.Config{TodoSystemPrompt: ptr("Plan first.")}, ""},
		{"todo prompt not a string", "todo_system_prompt: [a]\n", nil, "x.yaml:1:21: todo_system_prompt: must be a string or null, got a list"},
		{"tagged string", "system_prompt_suffix: !!str 42\n", &profile.Config{SystemPromptSuffix: ptr("42")}, ""},
		{"quoted number", "system_prompt_suffix: '42'\n", &profile.Config{SystemPromptSuffix: ptr("42")}, ""},
		{"anchors and aliases", "base_system_prompt: &p Shared.\nsystem_prompt_suffix: *p\n", &profile.Config{BaseSystemPrompt: ptr("Shared."), SystemPromptSuffix: ptr("Shared.")}, ""},
		{"sets are sorted and de-duplicated", "excluded_tools: [b, a, b]\n", &profile.Config{ExcludedTools: []string{"a", "b"}}, ""},
		{"top level list", "- a\n- b\n", nil, "x.yaml:1:1: a profile must be a mapping of base_system_prompt"},
		{"syntax error", "a: b: c\n", nil, "x.yaml:1:4: not a valid profile file: mapping value is not allowed in this context"},
		{"duplicate key", "excluded_tools: [a]\nexcluded_tools: [b]\n", nil, `x.yaml:2:1: not a valid profile file: mapping key "excluded_tools" already defined`},
		{"two documents", "excluded_tools: [a]\n---\nexcluded_tools: [b]\n", nil, "x.yaml:3:"},
		{"non-string key", "1: x\n", nil, "x.yaml:1:1: keys must be strings, got a number"},
		{"unknown alias", "base_system_prompt: *nowhere\n", nil, "x.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := profile.ParseConfig("x.yaml", []byte(tt.src))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				assert.Nil(t, c)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, c)
		})
	}
}

func TestConfigRoundTrips(t *testing.T) {
	// Case 29.
	empty := profile.Config{}
	j, err := json.Marshal(empty)
	require.NoError(t, err)
	assert.JSONEq(t, `{}`, string(j))
	y, err := empty.YAML()
	require.NoError(t, err)
	assert.Equal(t, "{}\n", string(y))

	for _, c := range []profile.Config{
		fullConfig(),
		{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{}},
		{BaseSystemPrompt: ptr(""), SystemPromptSuffix: ptr("")},
		{ExcludedTools: []string{"b", "a"}, ToolDescriptionOverrides: map[string]string{}},
		{SystemPromptSuffix: ptr("tricky: 'quotes' \"and\" \\ backslashes\t tabs\n  indented\nunicode ✓ 🚀\n\n")},
		{TodoSystemPrompt: ptr("## Plan\n\nUse write_todos: {braces} stay.")},
		{TodoSystemPrompt: ptr("")},
	} {
		norm := c.Normalized()
		y, err := c.YAML()
		require.NoError(t, err)
		fromYAML, err := profile.ParseConfig("rt.yaml", y)
		require.NoError(t, err, "YAML:\n%s", y)
		if diff := cmp.Diff(&norm, fromYAML); diff != "" {
			t.Errorf("YAML round trip (-want +got):\n%s\nYAML:\n%s", diff, y)
		}
		y2, err := fromYAML.YAML()
		require.NoError(t, err)
		assert.Equal(t, string(y), string(y2), "stable YAML")

		j, err := json.Marshal(c)
		require.NoError(t, err)
		var fromJSON profile.Config
		require.NoError(t, json.Unmarshal(j, &fromJSON))
		if diff := cmp.Diff(norm, fromJSON); diff != "" {
			t.Errorf("JSON round trip (-want +got):\n%s\nJSON: %s", diff, j)
		}
		j2, err := json.Marshal(fromJSON)
		require.NoError(t, err)
		assert.Equal(t, string(j), string(j2), "stable JSON")
	}

	y, err = fullConfig().YAML()
	require.NoError(t, err)
	assert.Equal(t, `base_system_prompt: |
  Line one.
  Line two: with a colon.
system_prompt_suffix: |+
  B

tool_description_overrides:
  grep: "# not a comment"
  ls: "  leading spaces"
  task: Delegate. {available_agents}
excluded_tools:
- execute
- write_file
excluded_middleware:
- AnthropicPromptCachingMiddleware
- SummarizationMiddleware
general_purpose_subagent:
  enabled: false
  description: ""
  system_prompt: "yes"
`, string(y), "keys in Deep Agents' order, lists sorted")
	j, err = json.Marshal(fullConfig())
	require.NoError(t, err)
	assert.Equal(t, `{"base_system_prompt":"Line one.\nLine two: with a colon.\n","system_prompt_suffix":"B\n\n","tool_description_overrides":{"grep":"# not a comment","ls":"  leading spaces","task":"Delegate. {available_agents}"},"excluded_tools":["execute","write_file"],"excluded_middleware":["AnthropicPromptCachingMiddleware","SummarizationMiddleware"],"general_purpose_subagent":{"enabled":false,"description":"","system_prompt":"yes"}}`, string(j))

	// Invalid configs refuse to encode.
	_, err = json.Marshal(profile.Config{ExcludedMiddleware: []string{"SubAgentMiddleware"}})
	require.ErrorIs(t, err, profile.ErrScaffolding)
	_, err = profile.Config{ExcludedMiddleware: []string{"_x"}}.YAML()
	require.ErrorIs(t, err, profile.ErrInvalidExclusion)
	// JSON decoding is as strict as file loading.
	var c profile.Config
	require.ErrorContains(t, json.Unmarshal([]byte(`{"extra_middleware": []}`), &c), `1:2: extra_middleware: unknown key "extra_middleware"`)
}

func TestConfigEmbeddedInAnAgentFile(t *testing.T) {
	type agentFile struct {
		Name    string          `yaml:"name"`
		Profile *profile.Config `yaml:"profile"`
	}
	var f agentFile
	require.NoError(t, yaml.Unmarshal([]byte("name: reviewer\nprofile:\n  system_prompt_suffix: Be brief.\n  excluded_tools: [execute]\n"), &f))
	assert.Equal(t, &profile.Config{SystemPromptSuffix: ptr("Be brief."), ExcludedTools: []string{"execute"}}, f.Profile)

	err := yaml.Unmarshal([]byte("name: reviewer\nprofile:\n  system_prompt_suffix: Be brief.\n  extra_middleware: []\n"), &f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `4:3: extra_middleware: unknown key "extra_middleware"`)

	out, err := yaml.Marshal(agentFile{Name: "reviewer", Profile: &profile.Config{ExcludedTools: []string{"b", "a"}}})
	require.NoError(t, err)
	assert.Equal(t, "name: reviewer\nprofile:\n  excluded_tools:\n  - a\n  - b\n", string(out))
}

func TestConfigAndHarnessProfileConversion(t *testing.T) {
	c := fullConfig()
	p, err := c.HarnessProfile()
	require.NoError(t, err)
	back, err := profile.ConfigFromHarness(p)
	require.NoError(t, err)
	assert.Equal(t, c.Normalized(), back, "lossless both ways")

	withTodo := profile.Config{TodoSystemPrompt: ptr("Plan.")}
	p, err = withTodo.HarnessProfile()
	require.NoError(t, err)
	back, err = profile.ConfigFromHarness(p)
	require.NoError(t, err)
	assert.Equal(t, withTodo, back, "the todo prompt survives the runtime profile")
	got, ok := p.TodoSystemPrompt()
	assert.True(t, ok)
	assert.Equal(t, "Plan.", got)

	empty, err := profile.ConfigFromHarness(nil)
	require.NoError(t, err)
	assert.Equal(t, profile.Config{}, empty)

	// Type exclusions with a serialized name become that name.
	p = profile.MustHarnessProfile(profile.HarnessSpec{
		ExcludedMiddleware:      []string{"PatchToolCallsMiddleware"},
		ExcludedMiddlewareTypes: []reflect.Type{typeOf[*summarizationImpl]()},
	})
	back, err = profile.ConfigFromHarness(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"PatchToolCallsMiddleware", "SummarizationMiddleware"}, back.ExcludedMiddleware)

	for name, spec := range map[string]profile.HarnessSpec{
		"extra list":     {ExtraMiddleware: []agent.Middleware{&OtherMW{}}},
		"extra factory":  {ExtraMiddlewareFactory: func() []agent.Middleware { return nil }},
		"unaliased type": {ExcludedMiddlewareTypes: []reflect.Type{typeOf[*StubMW](), typeOf[*OtherMW]()}},
	} {
		_, err := profile.ConfigFromHarness(profile.MustHarnessProfile(spec))
		require.ErrorIs(t, err, profile.ErrNotSerializable, name)
		if name == "unaliased type" {
			assert.ErrorContains(t, err, "*profile_test.OtherMW, *profile_test.StubMW have no serialized name")
		}
	}
	_, err = profile.Config{ExcludedMiddleware: []string{"FilesystemMiddleware", "SubAgentMiddleware"}}.HarnessProfile()
	require.ErrorIs(t, err, profile.ErrScaffolding)
	assert.ErrorContains(t, err, `"FilesystemMiddleware" (string), "SubAgentMiddleware" (string)`, "one aggregated error")
}

func TestDescribe(t *testing.T) {
	p := profile.MustHarnessProfile(profile.HarnessSpec{
		BaseSystemPrompt:         ptr(""),
		SystemPromptSuffix:       ptr("Be terse."),
		ToolDescriptionOverrides: map[string]string{"task": "T", "ls": "L"},
		ExcludedTools:            []string{"write_file", "execute"},
		ExcludedMiddleware:       []string{"SummarizationMiddleware"},
		ExcludedMiddlewareTypes:  []reflect.Type{typeOf[*StubMW]()},
		ExtraMiddlewareFactory:   func() []agent.Middleware { return []agent.Middleware{&OtherMW{}, &labelled{}} },
		GeneralPurposeSubagent:   &profile.GeneralPurposeSubagent{Enabled: ptr(false)},
	})
	want := `{"base_system_prompt":"","system_prompt_suffix":"Be terse.","tool_description_overrides":{"ls":"L","task":"T"},"excluded_tools":["execute","write_file"],"excluded_middleware":["SummarizationMiddleware"],"excluded_middleware_types":["*profile_test.StubMW"],"extra_middleware":["OtherMW","labelled"],"general_purpose_subagent":{"enabled":false}}`
	for range 3 {
		j, err := json.Marshal(p.Describe())
		require.NoError(t, err)
		assert.Equal(t, want, string(j))
	}
	j, err := json.Marshal(profile.MustHarnessProfile(profile.HarnessSpec{}).Describe())
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(j))
}

// Every problem of an embedded profile names its key in the file that holds
// it, not only the first.
func TestDecodeConfigNodeKeys(t *testing.T) {
	f, err := parser.ParseBytes([]byte("profiles:\n  - profile:\n      excluded_tools: 5\n      bogus: 1\n"), 0)
	require.NoError(t, err)
	node, err := yaml.PathString("$.profiles[0].profile")
	require.NoError(t, err)
	n, err := node.FilterFile(f)
	require.NoError(t, err)
	_, err = profile.DecodeConfigNode("suite.yaml", n, "profiles[0].profile")
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, "suite.yaml:3:23: profiles[0].profile.excluded_tools: must be a list of strings, got a number", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], `suite.yaml:4:7: profiles[0].profile.bogus: unknown key "bogus"`), lines[1])
}
