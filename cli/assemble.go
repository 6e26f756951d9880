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
		usage:   "[--agent FILE | --suite FILE --case ID] [--model SPEC] [--profile FILE]... [--format text|json]\n       dageval assemble --diff [--base-agent FILE] [--head-agent FILE] [--base-profile FILE]... [--head-profile FILE]... [--model SPEC | --base-model SPEC --head-model SPEC]\n       dageval assemble --diff --suite FILE [--case ID | --base-case ID --head-case ID] [--model SPEC]",
		help: `Assembles a deep agent the way create_deep_agent does and prints what the
model will see on its first call, for the main agent and every subagent:
middleware in order, tools (name, description, JSON Schema), the system
prompt (block by block when it has several) and every cache breakpoint on
tools, system blocks and messages, plus the model and the resolved harness
profile.

Without --agent it assembles the default deep agent. --model overrides the
agent file's model; with neither the model is anthropic:claude-sonnet-4-6.
--suite FILE --case ID assembles the agent a suite's case runs: the suite's
agent with the case's agent: keys laid over it, its files seeded (memory
files show in the prompt), with the case's first model unless --model says
otherwise.
--profile files (Deep Agents HarnessProfileConfig YAML or JSON) are merged
over the profile the registry has for the model, in the order given.
Assembling never calls a model and needs no API key or network.

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
	if err := parse(fs, args); err != nil {
		return err
	}
	if *suiteFile != "" {
		if *agentFile != "" || *baseAgent != "" || *headAgent != "" {
			return usageError("--suite takes the agent from the suite; leave out --agent, --base-agent and --head-agent")
		}
		if *baseModel != "" || *headModel != "" || len(baseProfiles) > 0 || len(headProfiles) > 0 {
			return usageError("with --suite use --model and --profile for both sides")
		}
		return assembleCase(ctx, e, *suiteFile, *caseID, *baseCase, *headCase, *model, profiles, *diff, *format)
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
		as, err := describe(ctx, *agentFile, *model, profiles)
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
	base, err := describe(ctx, *baseAgent, bm, baseProfiles)
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	head, err := describe(ctx, *headAgent, hm, headProfiles)
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	out, differ := harness.Diff(base, head)
	if !differ {
		fmt.Fprintln(e.stdout, "assemblies are identical")
		return nil
	}
	fmt.Fprint(e.stdout, out)
	return &exitError{code: exitFailures}
}

// describe assembles an agent file (or the default agent) and describes it.
func describe(ctx context.Context, agentFile, model string, profileFiles []string) (*harness.Assembly, error) {
	var af *agentfile.File
	if agentFile != "" {
		var err error
		if af, err = agentfile.Load(agentFile); err != nil {
			return nil, err
		}
	}
	return describeFile(ctx, af, nil, model, profileFiles)
}

// describeFile assembles a decoded agent file (nil: the default agent) with
// extra seeded files and describes it.
func describeFile(ctx context.Context, af *agentfile.File, files map[string]string, model string, profileFiles []string) (*harness.Assembly, error) {
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
	cfg := harness.Config{ModelSpec: model}
	var opts harness.DescribeOptions
	if af != nil {
		var err error
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
	a, err := harness.New(cfg)
	if err != nil {
		return nil, err
	}
	return a.Describe(ctx, opts)
}

// assembleCase prints the agent a suite's case runs, or with diff the
// difference between the suite's agent and a case's, or two cases'.
func assembleCase(ctx context.Context, e *env, suiteFile, caseID, baseCase, headCase, model string, profiles []string, diff bool, format string) error {
	s, err := evals.Load(suiteFile)
	if err != nil {
		return err
	}
	side := func(id string) (*harness.Assembly, error) {
		if id == "" {
			// The suite's own agent, with the files of no case.
			if s.Agent.Spec == nil {
				return nil, fmt.Errorf("the suite's agent is the factory %s, built in Go", s.Agent.Factory)
			}
			return describeFile(ctx, s.Agent.Spec, nil, modelOf(s, nil, model), profiles)
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
		return describeFile(ctx, af, files, modelOf(s, c, model), profiles)
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
	base, err := side(baseCase)
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	head, err := side(headCase)
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	out, differ := harness.Diff(base, head)
	if !differ {
		fmt.Fprintln(e.stdout, "assemblies are identical")
		return nil
	}
	fmt.Fprint(e.stdout, out)
	return &exitError{code: exitFailures}
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
	agentDiff = func(ctx context.Context, baseAgent, headAgent string, baseProfiles, headProfiles []string, baseModel, headModel string) (string, error) {
		base, err := describe(ctx, baseAgent, baseModel, baseProfiles)
		if err != nil {
			return "", fmt.Errorf("base: %w", err)
		}
		head, err := describe(ctx, headAgent, headModel, headProfiles)
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
