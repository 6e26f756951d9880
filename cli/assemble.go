package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/profile"
)

func init() {
	register(&command{
		name:    "assemble",
		summary: "print an assembled agent, or diff two configurations",
		usage:   "[--agent FILE|factory:NAME | --suite FILE --case ID] [--model SPEC] [--profile FILE]... [--stack NAME]... [--omit-builtin-schemas] [--format text|json]\n       dageval assemble --diff [--base-agent FILE|factory:NAME] [--head-agent FILE|factory:NAME] [--base-profile FILE]... [--head-profile FILE]... [--model SPEC | --base-model SPEC --head-model SPEC]\n       dageval assemble --diff --suite FILE [--case ID | --base-case ID --head-case ID] [--model SPEC]",
		help: `Assembles a deep agent the way create_deep_agent does and prints what the
model will see on its first call, for the main agent and every subagent:
middleware in order, tools (name, description, JSON Schema), the system
prompt (block by block when it has several) and every cache breakpoint on
tools, system blocks and messages, plus the model and the resolved harness
profile.

Without --agent it assembles the default deep agent. --agent factory:NAME
assembles the agent a Go factory registered with the program builds (see
the cli package; the dageval command itself has none). --model overrides
the agent's model; with neither the model is anthropic:claude-sonnet-4-6.
--suite FILE --case ID assembles the agent a suite's case runs: the suite's
agent with the case's agent: keys laid over it, its files seeded (memory
files show in the prompt), with the case's first model unless --model says
otherwise.
--profile files (Deep Agents HarnessProfileConfig YAML or JSON) are merged
over the profile the registry has for the model, in the order given.
Assembling never calls a model and needs no API key or network.

--stack NAME (repeatable: main, or a subagent's name, with or without its
"subagent:" prefix) keeps only those stacks; --omit-builtin-schemas lists
the tools of dageval's own middleware (ls, read_file, task, ...) by name
only, so the output shows what the agent's authors wrote. Both apply to
--diff and --suite too.

With --diff, prints a unified diff of two assemblies (base and head), stack
by stack. A side given no agent file uses the default agent; --model
applies to both, --base-model and --head-model to one side each (a model
swap). With --suite, --case ID diffs the suite's agent (base) against the
case's (head), and --base-case/--head-case diff two cases. Exit status: 0
identical, 1 different, 2 on errors (an
invalid profile, an exclusion of required scaffolding, an exclusion that
matches no middleware, a bad agent file).`,
		run: runAssemble,
	})
}

// repeated collects a flag given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func runAssemble(ctx context.Context, e *env, args []string) error {
	c := commands["assemble"]
	fs := newFlags(c, e)
	agentFile := fs.String("agent", "", "agent file (YAML); the default deep agent when empty")
	model := fs.String("model", "", "model spec provider:model, overriding the agent file's")
	var profiles, baseProfiles, headProfiles repeated
	fs.Var(&profiles, "profile", "harness profile file merged over the model's profile (repeatable)")
	format := fs.String("format", "text", "output format: text or json")
	diff := fs.Bool("diff", false, "diff a base and a head configuration")
	baseAgent := fs.String("base-agent", "", "with --diff: the base agent file")
	headAgent := fs.String("head-agent", "", "with --diff: the head agent file")
	fs.Var(&baseProfiles, "base-profile", "with --diff: base profile file (repeatable)")
	fs.Var(&headProfiles, "head-profile", "with --diff: head profile file (repeatable)")
	baseModel := fs.String("base-model", "", "with --diff: the base side's model spec")
	headModel := fs.String("head-model", "", "with --diff: the head side's model spec")
	suiteFile := fs.String("suite", "", "a suite file: assemble the agent of one of its cases (--case)")
	caseID := fs.String("case", "", "with --suite: the case whose agent to assemble (with --diff: against the suite's agent)")
	baseCase := fs.String("base-case", "", "with --diff --suite: the base case")
	headCase := fs.String("head-case", "", "with --diff --suite: the head case")
	var stacks repeated
	fs.Var(&stacks, "stack", "keep only this stack: main or a subagent's name (repeatable)")
	omit := fs.Bool("omit-builtin-schemas", false, "list the built-in middleware's tools by name only")
	if err := parse(fs, args); err != nil {
		return err
	}
	warnModel(e, "assemble", "model", *model)
	warnModel(e, "assemble", "base-model", *baseModel)
	warnModel(e, "assemble", "head-model", *headModel)
	dopts := harness.DescribeOptions{OmitBuiltinToolSchemas: *omit}
	for _, n := range stacks {
		if n != "main" && !strings.HasPrefix(n, "subagent:") {
			n = "subagent:" + n
		}
		dopts.Stacks = append(dopts.Stacks, n)
	}
	if *suiteFile != "" {
		if *agentFile != "" || *baseAgent != "" || *headAgent != "" {
			return usageError("--suite takes the agent from the suite; leave out --agent, --base-agent and --head-agent")
		}
		if *baseModel != "" || *headModel != "" || len(baseProfiles) > 0 || len(headProfiles) > 0 {
			return usageError("with --suite use --model and --profile for both sides")
		}
		return assembleCase(ctx, e, *suiteFile, *caseID, *baseCase, *headCase, *model, profiles, *diff, *format, dopts)
	}
	if *caseID != "" || *baseCase != "" || *headCase != "" {
		return usageError("--case, --base-case and --head-case need --suite")
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if *format != "text" && *format != "json" {
		return usageError("--format must be text or json, got %q", *format)
	}
	if !*diff {
		if *baseAgent != "" || *headAgent != "" || len(baseProfiles) > 0 || len(headProfiles) > 0 || *baseModel != "" || *headModel != "" {
			return usageError("--base-* and --head-* flags need --diff")
		}
		as, err := describe(ctx, e.reg, *agentFile, *model, profiles, dopts)
		if err != nil {
			return err
		}
		if *format == "json" {
			out, err := as.JSON()
			if err != nil {
				return err
			}
			_, err = e.stdout.Write(out)
			return err
		}
		_, err = fmt.Fprint(e.stdout, as.Text())
		return err
	}
	if *agentFile != "" || len(profiles) > 0 {
		return usageError("with --diff use --base-agent/--head-agent and --base-profile/--head-profile")
	}
	if *model != "" && (*baseModel != "" || *headModel != "") {
		return usageError("give --model, or --base-model and --head-model, not both")
	}
	bm, hm := *baseModel, *headModel
	if *model != "" {
		bm, hm = *model, *model
	}
	return printDiff(e,
		func() (*harness.Assembly, error) { return describe(ctx, e.reg, *baseAgent, bm, baseProfiles, dopts) },
		func() (*harness.Assembly, error) { return describe(ctx, e.reg, *headAgent, hm, headProfiles, dopts) })
}

// printDiff prints how the head assembly differs from the base one and
// fails (exit 1) when they differ, so a diff can gate a change in CI.
func printDiff(e *env, base, head func() (*harness.Assembly, error)) error {
	b, err := base()
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	h, err := head()
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	out, differ := harness.Diff(b, h)
	if !differ {
		fmt.Fprintln(e.stdout, "assemblies are identical")
		return nil
	}
	fmt.Fprint(e.stdout, out)
	return &exitError{code: exitFailures}
}

// factoryPrefix marks an --agent value naming a registered agent factory.
const factoryPrefix = "factory:"

// describe assembles an agent file, a registered factory's agent or the
// default agent, and describes it.
func describe(ctx context.Context, reg *evals.Registry, agentFile, model string, profileFiles []string, opts harness.DescribeOptions) (*harness.Assembly, error) {
	if name, ok := strings.CutPrefix(agentFile, factoryPrefix); ok {
		return describeFactory(ctx, reg, name, model, profileFiles, opts)
	}
	var af *agentfile.File
	if agentFile != "" {
		var err error
		if af, err = reg.AgentFiles().Load(agentFile); err != nil {
			return nil, err
		}
	}
	return describeFile(ctx, reg, af, nil, model, profileFiles, opts)
}

// loadProfiles reads --profile files.
func loadProfiles(profileFiles []string) ([]*profile.HarnessProfile, error) {
	var profs []*profile.HarnessProfile
	for _, f := range profileFiles {
		c, err := profile.LoadConfigFile(f)
		if err != nil {
			return nil, err
		}
		p, err := c.HarnessProfile()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		profs = append(profs, p)
	}
	return profs, nil
}

// describeFile assembles a decoded agent file (nil: the default agent) with
// extra seeded files and describes it.
func describeFile(ctx context.Context, reg *evals.Registry, af *agentfile.File, files map[string]string, model string, profileFiles []string, opts harness.DescribeOptions) (*harness.Assembly, error) {
	profs, err := loadProfiles(profileFiles)
	if err != nil {
		return nil, err
	}
	cfg := harness.Config{ModelSpec: model}
	if af != nil {
		if cfg, err = af.Config(agentfile.Options{Model: model, Profiles: profs}); err != nil {
			return nil, err
		}
		opts.Files = af.SeedFiles()
		for p, content := range files {
			if opts.Files == nil {
				opts.Files = map[string]agent.FileData{}
			}
			opts.Files[p] = agent.FileData{Content: content, Encoding: backend.EncodingUTF8}
		}
	} else {
		for _, p := range profs {
			cfg.Profile = profile.MergeHarness(cfg.Profile, p)
		}
	}
	return describeConfig(ctx, reg, cfg, opts)
}

// describeFactory assembles the agent a registered factory builds, as a
// suite's cell would with that model.
func describeFactory(ctx context.Context, reg *evals.Registry, name, model string, profileFiles []string, opts harness.DescribeOptions) (*harness.Assembly, error) {
	f, ok := reg.Agent(name)
	if !ok {
		return nil, fmt.Errorf("--agent %s%s: no agent factory is registered as %q (%s)", factoryPrefix, name, name, registeredNames(reg.Agents()))
	}
	profs, err := loadProfiles(profileFiles)
	if err != nil {
		return nil, err
	}
	cfg, err := f(ctx, evals.AgentRequest{Model: model})
	if err != nil {
		return nil, fmt.Errorf("agent factory %s: %w", name, err)
	}
	if model != "" {
		cfg.Model, cfg.ModelSpec = nil, model
	}
	for _, p := range profs {
		cfg.Profile = profile.MergeHarness(cfg.Profile, p)
	}
	return describeConfig(ctx, reg, cfg, opts)
}

// describeConfig assembles cfg and describes it. Registered providers
// reach a factory's or the default agent's model specs as they reach an
// agent file's.
func describeConfig(ctx context.Context, reg *evals.Registry, cfg harness.Config, opts harness.DescribeOptions) (*harness.Assembly, error) {
	if cfg.Model == nil && cfg.ResolveModel == nil && len(reg.Providers()) > 0 {
		cfg.ResolveModel = reg.AgentFiles().ModelResolver(cfg.Profiles)
	}
	a, err := harness.New(cfg)
	if err != nil {
		return nil, err
	}
	return a.Describe(ctx, opts)
}

// registeredNames renders the names a program registered, for a message
// about one it did not.
func registeredNames(names []string) string {
	if len(names) == 0 {
		return "none is registered; a program built on cli.Main registers them with cli.WithAgent"
	}
	return "registered: " + strings.Join(names, ", ")
}

// assembleCase prints the agent a suite's case runs, or with diff the
// difference between the suite's agent and a case's, or two cases'.
func assembleCase(ctx context.Context, e *env, suiteFile, caseID, baseCase, headCase, model string, profiles []string, diff bool, format string, dopts harness.DescribeOptions) error {
	s, err := e.reg.Load(suiteFile)
	if err != nil {
		return err
	}
	side := func(id string) (*harness.Assembly, error) {
		if id == "" {
			// The suite's own agent, with the files of no case.
			if s.Agent.Spec == nil {
				return describeFactory(ctx, e.reg, s.Agent.Factory, modelOf(s, nil, model), profiles, dopts)
			}
			return describeFile(ctx, e.reg, s.Agent.Spec, nil, modelOf(s, nil, model), profiles, dopts)
		}
		af, files, err := s.CaseAgent(id)
		if err != nil {
			return nil, err
		}
		var c *evals.Case
		for _, sc := range s.Cases {
			if sc.ID == id {
				c = sc
			}
		}
		return describeFile(ctx, e.reg, af, files, modelOf(s, c, model), profiles, dopts)
	}
	if !diff {
		if baseCase != "" || headCase != "" {
			return usageError("--base-case and --head-case need --diff")
		}
		if caseID == "" {
			return usageError("--suite needs --case ID (the case whose agent to assemble)")
		}
		as, err := side(caseID)
		if err != nil {
			return err
		}
		if format == "json" {
			out, err := as.JSON()
			if err != nil {
				return err
			}
			_, err = e.stdout.Write(out)
			return err
		}
		_, err = fmt.Fprint(e.stdout, as.Text())
		return err
	}
	switch {
	case caseID != "" && (baseCase != "" || headCase != ""):
		return usageError("with --diff --suite give --case (against the suite's agent) or --base-case and --head-case, not both")
	case caseID != "":
		baseCase, headCase = "", caseID
	case headCase == "":
		return usageError("with --diff --suite give --case ID, or --head-case ID (and --base-case ID)")
	}
	return printDiff(e, func() (*harness.Assembly, error) { return side(baseCase) }, func() (*harness.Assembly, error) { return side(headCase) })
}

// modelOf is the model to assemble a suite's agent with: the one asked
// for, else the case's (or the suite's) first model.
func modelOf(s *evals.Suite, c *evals.Case, model string) string {
	if model != "" {
		return model
	}
	if c != nil && len(c.Models) > 0 {
		return c.Models[0]
	}
	if len(s.Models) > 0 {
		return s.Models[0]
	}
	return ""
}

func init() {
	// compare --base-agent/--head-agent shows the assembled agents' diff
	// beside the behavioural change.
	agentDiff = func(ctx context.Context, reg *evals.Registry, baseAgent, headAgent string, baseProfiles, headProfiles []string, baseModel, headModel string) (string, error) {
		base, err := describe(ctx, reg, baseAgent, baseModel, baseProfiles, harness.DescribeOptions{})
		if err != nil {
			return "", fmt.Errorf("base: %w", err)
		}
		head, err := describe(ctx, reg, headAgent, headModel, headProfiles, harness.DescribeOptions{})
		if err != nil {
			return "", fmt.Errorf("head: %w", err)
		}
		out, differ := harness.Diff(base, head)
		if !differ {
			return "", nil
		}
		return out, nil
	}
}
