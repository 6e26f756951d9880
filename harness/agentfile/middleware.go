package agentfile

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/internal/yamlx"
)

// builtinMiddleware is the middleware every agent file may name, with the
// options each takes (see the agent file reference in evals/README.md).
// Middleware the assembly builds from other keys are in fixedMiddleware.
var builtinMiddleware = map[string]MiddlewareDef{
	middleware.TodoListName: builtinDef(func(o todoOptions, _ buildContext) (agent.Middleware, error) {
		return middleware.NewTodoList(middleware.TodoListConfig{SystemPrompt: o.SystemPrompt, ToolDescription: o.ToolDescription}), nil
	}),
	middleware.PatchToolCallsName: builtinDef(func(struct{}, buildContext) (agent.Middleware, error) {
		return middleware.NewPatchToolCalls(), nil
	}),
	middleware.AnthropicPromptCachingName: builtinDef(func(o cachingOptions, _ buildContext) (agent.Middleware, error) {
		return middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{TTL: o.TTL})
	}),
	middleware.HumanInTheLoopName: builtinDef(func(o hitlOptions, _ buildContext) (agent.Middleware, error) {
		return o.build()
	}),
	middleware.SummarizationName: deferredDef(func(o summarizationOptions, _ buildContext, env harness.DeferredEnv) (agent.Middleware, error) {
		return o.build(env)
	}),
	middleware.SummarizationToolName: deferredDef(func(o summarizationToolOptions, _ buildContext, env harness.DeferredEnv) (agent.Middleware, error) {
		s, err := o.Summarization.build(env)
		if err != nil {
			return nil, err
		}
		return middleware.NewCompactConversation(s, middleware.CompactConversationOptions{SystemPrompt: o.SystemPrompt, ToolDescription: o.ToolDescription})
	}),
	middleware.RubricName: deferredDef(func(o rubricOptions, _ buildContext, env harness.DeferredEnv) (agent.Middleware, error) {
		return o.build(env)
	}),
	middleware.FilesystemName: deferredDef(func(o filesystemOptions, bc buildContext, env harness.DeferredEnv) (agent.Middleware, error) {
		return o.build(env.Backend, env.Profile.ToolDescriptionOverrides(), bc.perms)
	}),
	middleware.SkillsName: deferredDef(func(o skillsOptions, _ buildContext, env harness.DeferredEnv) (agent.Middleware, error) {
		return o.build(env)
	}),
	middleware.MemoryName: deferredDef(func(o memoryOptions, _ buildContext, env harness.DeferredEnv) (agent.Middleware, error) {
		return o.build(env)
	}),
}

// fixedMiddleware are built-in middleware the assembly builds from other
// keys of the agent file, so a declaration of its own could not be right.
var fixedMiddleware = map[string]string{
	middleware.SubAgentName:      "the assembly builds it from subagents: (the task tool's description comes from the profile's tool_description_overrides.task)",
	middleware.AsyncSubAgentName: "the assembly builds it from the subagents: that have a graph_id",
	middleware.ToolExclusionName: "the assembly builds it from the profile's excluded_tools",
}

// builtinDef makes the definition of a built-in middleware; its options are
// validated when the file is read, as a registered one's are.
func builtinDef[O any](fn func(o O, bc buildContext) (agent.Middleware, error)) MiddlewareDef {
	return MiddlewareDef{prepare: func(src optionSource) (builder, error) {
		o, err := decodeOptions[O](src)
		if err != nil {
			return nil, err
		}
		return func(bc buildContext) (agent.Middleware, error) { return fn(o, bc) }, nil
	}}
}

// deferredDef is builtinDef for middleware built per stack (see harness.Deferred).
func deferredDef[O any](fn func(o O, bc buildContext, env harness.DeferredEnv) (agent.Middleware, error)) MiddlewareDef {
	return builtinDef(func(o O, bc buildContext) (agent.Middleware, error) {
		return harness.NewDeferredWith(bc.name, func(env harness.DeferredEnv) (agent.Middleware, error) { return fn(o, bc, env) }), nil
	})
}

type todoOptions struct {
	SystemPrompt    *string `yaml:"system_prompt"`
	ToolDescription string  `yaml:"tool_description"`
}

type cachingOptions struct {
	TTL string `yaml:"ttl"`
}

func (o cachingOptions) Validate() error {
	_, err := middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{TTL: o.TTL})
	return err
}

type hitlOptions struct {
	InterruptOn       map[string]Interrupt `yaml:"interrupt_on"`
	DescriptionPrefix string               `yaml:"description_prefix"`
}

func (o hitlOptions) build() (agent.Middleware, error) {
	on := interruptOn(o.InterruptOn)
	if on == nil {
		on = middleware.InterruptOn{}
	}
	return middleware.NewHumanInTheLoop(middleware.HumanInTheLoopConfig{InterruptOn: on, DescriptionPrefix: o.DescriptionPrefix})
}

func (o hitlOptions) Validate() error { _, err := o.build(); return err }

// thresholds is one threshold ({fraction|tokens|messages}) or a list of
// them, any of which may fire.
type thresholds []middleware.Threshold

func (t *thresholds) UnmarshalYAML(n ast.Node) error {
	if _, isList := n.(*ast.SequenceNode); isList {
		var list []middleware.Threshold
		if err := decodeStrict(n, &list); err != nil {
			return err
		}
		*t = list
		return nil
	}
	var one middleware.Threshold
	if err := decodeStrict(n, &one); err != nil {
		return err
	}
	*t = thresholds{one}
	return nil
}

type truncateArgsOptions struct {
	Disabled  bool                  `yaml:"disabled"`
	Trigger   thresholds            `yaml:"trigger"`
	Keep      *middleware.Threshold `yaml:"keep"`
	MaxLength int                   `yaml:"max_length"`
	Text      string                `yaml:"text"`
}

// summarizationOptions are SummarizationMiddleware's; model names the
// summariser (the stack's own model when empty).
type summarizationOptions struct {
	Trigger               thresholds            `yaml:"trigger"`
	Keep                  *middleware.Threshold `yaml:"keep"`
	SummaryPrompt         string                `yaml:"summary_prompt"`
	Model                 string                `yaml:"model"`
	TrimTokensToSummarize int                   `yaml:"trim_tokens_to_summarize"`
	TruncateArgs          *truncateArgsOptions  `yaml:"truncate_args"`
}

func (o summarizationOptions) options() middleware.SummarizationOptions {
	so := middleware.SummarizationOptions{Trigger: o.Trigger, SummaryPrompt: o.SummaryPrompt, TrimTokensToSummarize: o.TrimTokensToSummarize}
	if o.Keep != nil {
		so.Keep = *o.Keep
	}
	if ta := o.TruncateArgs; ta != nil {
		so.TruncateArgs = middleware.TruncateArgsOptions{Disabled: ta.Disabled, Trigger: ta.Trigger, MaxLength: ta.MaxLength, Text: ta.Text}
		if ta.Keep != nil {
			so.TruncateArgs.Keep = *ta.Keep
		}
	}
	return so
}

func (o summarizationOptions) Validate() error {
	if o.Model != "" {
		if _, err := llm.ParseSpec(o.Model); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	_, err := middleware.NewSummarization(o.options())
	return err
}

func (o summarizationOptions) build(env harness.DeferredEnv) (*middleware.SummarizationMiddleware, error) {
	so := o.options()
	so.Model, so.Backend, so.ContextWindow = env.Model, env.Backend, env.Catalog.ContextWindow
	if o.Model != "" {
		m, err := env.Resolve(o.Model)
		if err != nil {
			return nil, err
		}
		so.Model = m
	}
	return middleware.NewSummarization(so)
}

// summarizationToolOptions configure compact_conversation and the
// summarization it runs.
type summarizationToolOptions struct {
	Summarization   summarizationOptions `yaml:",inline"`
	SystemPrompt    string               `yaml:"system_prompt"`
	ToolDescription string               `yaml:"tool_description"`
}

func (o summarizationToolOptions) Validate() error { return o.Summarization.Validate() }

// rubricOptions are RubricMiddleware's; model names the grader (the
// stack's own model when empty).
type rubricOptions struct {
	Model          string   `yaml:"model"`
	SystemPrompt   string   `yaml:"system_prompt"`
	MaxIterations  int      `yaml:"max_iterations"`
	Strategy       string   `yaml:"strategy"`
	MaxTokens      int      `yaml:"max_tokens"`
	Temperature    *float64 `yaml:"temperature"`
	Seed           *int64   `yaml:"seed"`
	RecursionLimit int      `yaml:"recursion_limit"`
	NonceSeed      string   `yaml:"nonce_seed"`
}

func (o rubricOptions) Validate() error {
	if o.Model != "" {
		if _, err := llm.ParseSpec(o.Model); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	switch agent.Strategy(o.Strategy) {
	case "", agent.StrategyTool, agent.StrategyProvider:
	default:
		return fmt.Errorf("strategy must be tool or provider, got %q", o.Strategy)
	}
	if o.MaxIterations < 0 || o.MaxTokens < 0 || o.RecursionLimit < 0 {
		return errors.New("max_iterations, max_tokens and recursion_limit must not be negative")
	}
	return nil
}

func (o rubricOptions) build(env harness.DeferredEnv) (agent.Middleware, error) {
	model := env.Model
	if o.Model != "" {
		m, err := env.Resolve(o.Model)
		if err != nil {
			return nil, err
		}
		model = m
	}
	return middleware.NewRubricMiddleware(middleware.RubricOptions{
		Model: model, SystemPrompt: o.SystemPrompt, MaxIterations: o.MaxIterations, Strategy: agent.Strategy(o.Strategy),
		MaxTokens: o.MaxTokens, Temperature: o.Temperature, Seed: o.Seed, RecursionLimit: o.RecursionLimit, NonceSeed: o.NonceSeed,
	})
}

// filesystemOptions are FilesystemMiddleware's; its backend is the
// agent's, its permissions the file's, and tool_descriptions add to the
// profile's overrides.
type filesystemOptions struct {
	SystemPrompt           string            `yaml:"system_prompt"`
	ToolDescriptions       map[string]string `yaml:"tool_descriptions"`
	Tools                  []string          `yaml:"tools"`
	ToolTokenLimit         int               `yaml:"tool_token_limit"`
	HumanMessageTokenLimit int               `yaml:"human_message_token_limit"`
	MaxExecuteTimeout      string            `yaml:"max_execute_timeout"`
	GrepMaxCount           int               `yaml:"grep_max_count"`
	GlobTimeout            string            `yaml:"glob_timeout"`
	GlobWorkers            int               `yaml:"glob_workers"`
}

func (o filesystemOptions) Validate() error {
	_, err := o.build(nil, nil, nil)
	return err
}

func (o filesystemOptions) build(b backend.Backend, overrides map[string]string, perms []Permission) (agent.Middleware, error) {
	fo := middleware.FilesystemOptions{SystemPrompt: o.SystemPrompt, Tools: o.Tools, ToolTokenLimit: o.ToolTokenLimit,
		HumanMessageTokenLimit: o.HumanMessageTokenLimit, GrepMaxCount: o.GrepMaxCount, GlobWorkers: o.GlobWorkers,
		Backend: b, Permissions: permissions(perms)}
	var err error
	if fo.MaxExecuteTimeout, err = duration("max_execute_timeout", o.MaxExecuteTimeout); err != nil {
		return nil, err
	}
	if fo.GlobTimeout, err = duration("glob_timeout", o.GlobTimeout); err != nil {
		return nil, err
	}
	if len(overrides) > 0 || len(o.ToolDescriptions) > 0 {
		fo.ToolDescriptions = maps.Clone(overrides)
		if fo.ToolDescriptions == nil {
			fo.ToolDescriptions = map[string]string{}
		}
		maps.Copy(fo.ToolDescriptions, o.ToolDescriptions)
	}
	return middleware.NewFilesystem(fo)
}

// duration reads an optional positive duration option.
func duration(key, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: not a positive duration: %q (e.g. 30s)", key, s)
	}
	return d, nil
}

type skillsOptions struct {
	Sources      []string `yaml:"sources"`
	SystemPrompt *string  `yaml:"system_prompt"`
}

func (o skillsOptions) Validate() error {
	for i, p := range o.Sources {
		if err := checkAbsolute(p); err != nil {
			return fmt.Errorf("sources[%d]: %w", i, err)
		}
	}
	_, err := o.build(harness.DeferredEnv{})
	return err
}

func (o skillsOptions) build(env harness.DeferredEnv) (agent.Middleware, error) {
	src := make([]middleware.SkillSource, len(o.Sources))
	for i, p := range o.Sources {
		src[i] = middleware.SkillSource{Path: p}
	}
	return middleware.NewSkills(middleware.SkillsOptions{Backend: env.Backend, Sources: src, SystemPrompt: o.SystemPrompt})
}

// memoryOptions are MemoryMiddleware's; add_cache_control defaults to
// true, as for the memory: key.
type memoryOptions struct {
	Sources         []string `yaml:"sources"`
	SystemPrompt    *string  `yaml:"system_prompt"`
	AddCacheControl *bool    `yaml:"add_cache_control"`
}

func (o memoryOptions) Validate() error {
	for i, p := range o.Sources {
		if err := checkAbsolute(p); err != nil {
			return fmt.Errorf("sources[%d]: %w", i, err)
		}
	}
	_, err := o.build(harness.DeferredEnv{})
	return err
}

func (o memoryOptions) build(env harness.DeferredEnv) (agent.Middleware, error) {
	mo := middleware.MemoryOptions{Backend: env.Backend, Sources: o.Sources, SystemPrompt: o.SystemPrompt, AddCacheControl: true}
	if o.AddCacheControl != nil {
		mo.AddCacheControl = *o.AddCacheControl
	}
	return middleware.NewMemory(mo)
}

// middlewareBuilder returns what builds the middleware a declaration at key
// (such as "middleware[0]") names: prepared when the file was read, or,
// for a File built in Go, from its Options now.
func (af *File) middlewareBuilder(key string, d Middleware, reg *Registry) (builder, error) {
	if d.build != nil {
		return d.build, nil
	}
	def, ok := builtinMiddleware[d.Name]
	if !ok {
		def, ok = reg.middlewareDef(d.Name)
	}
	if !ok {
		if why := fixedMiddleware[d.Name]; why != "" {
			return nil, af.errorf(key+".name", "%s cannot be declared: %s", d.Name, why)
		}
		return nil, af.errorf(key+".name", "unknown middleware %q (built in: %s; %s)", d.Name,
			strings.Join(slices.Sorted(maps.Keys(builtinMiddleware)), ", "), registered(reg.Middleware()))
	}
	src, synthetic, err := af.optionSource(key, d)
	if err != nil {
		return nil, err
	}
	b, err := def.prepare(src)
	if err != nil {
		var ye *yamlx.Error
		if synthetic && errors.As(err, &ye) {
			// The document was made from Options: its positions mean nothing.
			_, k := af.locate(key + ".options")
			if ye.Key != "" {
				k += "." + ye.Key
			}
			return nil, fmt.Errorf("%s: %s: %s", af.Path, k, ye.Msg)
		}
		return nil, err
	}
	return b, nil
}

// optionSource locates a declaration's options: in the document the key
// was written in (the agent file, or an override of it), or in one made
// from the Options of a File built in Go.
func (af *File) optionSource(key string, d Middleware) (src optionSource, synthetic bool, err error) {
	doc, full := af.locate(key + ".options")
	src = optionSource{doc: doc, key: full, name: d.Name}
	if doc != nil {
		src.node = doc.Node(full)
		return src, false, nil
	}
	if d.Options == nil {
		src.doc = &yamlx.Doc{File: af.Path}
		return src, true, nil
	}
	data, err := yaml.Marshal(d.Options)
	if err != nil {
		return src, true, af.errorf(key+".options", "%s: %v", d.Name, err)
	}
	doc, err = yamlx.Parse(af.Path, data)
	if err != nil {
		return src, true, af.errorf(key+".options", "%s: %v", d.Name, err)
	}
	src.doc, src.node, src.key = doc, doc.Root, ""
	return src, true, nil
}
