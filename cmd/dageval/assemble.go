package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/profile"
)

func init() {
	register(&command{
		name:    "assemble",
		summary: "print an assembled agent, or diff two configurations",
		usage:   "[--agent FILE] [--model SPEC] [--profile FILE]... [--format text|json]\n       dageval assemble --diff [--base-agent FILE] [--head-agent FILE] [--base-profile FILE]... [--head-profile FILE]... [--model SPEC | --base-model SPEC --head-model SPEC]",
		help: `Assembles a deep agent the way create_deep_agent does and prints what the
model will see on its first call, for the main agent and every subagent:
middleware in order, tools (name, description, JSON Schema), the system
prompt (block by block when it has several) and every cache breakpoint on
tools, system blocks and messages, plus the model and the resolved harness
profile.

Without --agent it assembles the default deep agent. --model overrides the
agent file's model; with neither the model is anthropic:claude-sonnet-4-6.
--profile files (Deep Agents HarnessProfileConfig YAML or JSON) are merged
over the profile the registry has for the model, in the order given.
Assembling never calls a model and needs no API key or network.

With --diff, prints a unified diff of two assemblies (base and head), stack
by stack. A side given no agent file uses the default agent; --model
applies to both, --base-model and --head-model to one side each (a model
swap). Exit status: 0 identical, 1 different, 2 on errors (an
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
	if err := parse(fs, args); err != nil {
		return err
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
	if agentFile != "" {
		af, err := agentfile.Load(agentFile)
		if err != nil {
			return nil, err
		}
		if cfg, err = af.Config(agentfile.Options{Model: model, Profiles: profs}); err != nil {
			return nil, err
		}
		opts.Files = af.SeedFiles()
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
