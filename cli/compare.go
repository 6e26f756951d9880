package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/internal/fileutil"
	"github.com/dageval/dageval/reports"
)

func init() {
	register(&command{
		name:    "compare",
		summary: "compare two runs of a suite and gate on a regression under an explicit policy",
		usage:   "BASE HEAD [--policy powered|significant|strict] [--format table,md,json,html] [-o DIR] [--alpha A] [--tolerance T] [--min-drop D] [--seed N]\n       [--pair BASE_MODEL=HEAD_MODEL]... [--base-agent FILE] [--head-agent FILE] [--base-profile FILE]... [--head-profile FILE]...\n       [--model SPEC | --base-model SPEC --head-model SPEC]",
		help: `Compares two runs of the same suite (output directories of dageval run or
dageval merge, their summary.json files, or JSON reports from dageval
report --format json).
Cells are paired by case, model, profile and epoch, where a model is
known by its role: its alias in the suite (models: [{spec: openai:gpt-5,
alias: primary}]) when it has one, else its spec. A change that swaps a
model is compared case by case when both models have the same alias, or
with --pair BASE_MODEL=HEAD_MODEL (repeatable; specs or aliases); the
runs must still ask the same cases (their cases_digest). The output lists new
failures and passes, flaky cases (some epochs pass, some fail; listed apart),
score changes, and cells missing or errored on either side, with:

  - McNemar's exact test on paired pass/fail, overall and per model × profile,
    and an exact sign test on paired scores, Holm-adjusted as one family;
  - a cluster-bootstrap confidence interval (cases resampled with their
    epochs; --seed, --resamples) on the pass-rate and score differences;
  - the minimum detectable effect at 80% power, and how many more rollouts
    it would take to detect a smaller observed change.

--policy decides what fails the gate:
  powered      (the default) a statistically supported regression, or a
               drop in pass rate of more than max(--tolerance, --min-drop),
               overall or in any model × profile, that the comparison is
               too small to tell from noise; the reason gives the minimum
               detectable effect and the epochs that would decide;
  significant  only a statistically supported regression (a smaller sample
               passes as "inconclusive");
  strict       as powered, and any case that passed in every base epoch and
               fails in every head epoch.

Exit status:
  1  the policy fails the gate: a regression (Holm-adjusted p < --alpha,
     interval wholly below −--tolerance), an underpowered drop (powered,
     strict), or new failures (strict);
  0  otherwise: unchanged, an improvement, a drop within the tolerance, or
     "inconclusive" — the reason says which;
  2  the runs cannot be compared (different suites or schema versions,
     unpaired models, unreadable files) or judged (a cell errored or is
     missing on either side; errors are not regressions).
The reason is printed on standard error either way.

--format takes one or more of table (fitted to a terminal's width, coloured
unless NO_COLOR is set), md (a pull-request comment: the verdict, six
columns, new failures open with their reasons), json (reports/schema/
compare.v1.json) and html (one self-contained page: base and head side by
side, flips in red and green, a "changed only" filter, each new failure with
both transcripts and their diff). One format goes to standard output; with
-o DIR every format is written into DIR as compare.<ext>, and several need it.

--base-agent/--head-agent and --base-profile/--head-profile (as for
dageval assemble --diff) add the diff of the two assembled agents to the
markdown, so a reviewer sees the change next to its effect. The agents are
assembled with --model, or --base-model and --head-model; with a single
--pair and none of these, with the pair's models, so the diff shows the
model change too.`,
		run: runCompare,
	})
}

// agentDiff renders `dageval assemble --diff` for two configurations, each
// with its own model (the same one unless the change swaps models). It is
// nil until the assembly pipeline is linked in (cmd/dageval/assemble.go sets
// it); compare then refuses the agent flags rather than ignore them.
var agentDiff func(ctx context.Context, reg *evals.Registry, baseAgent, headAgent string, baseProfiles, headProfiles []string, baseModel, headModel string) (string, error)

// stringsFlag collects a flag given several times.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

func runCompare(ctx context.Context, e *env, args []string) error {
	c := commands["compare"]
	fs := newFlags(c, e)
	policy := fs.String("policy", string(reports.DefaultPolicy), "gate policy: powered, significant or strict")
	minDrop := fs.Float64("min-drop", reports.DefaultMinDrop, "powered and strict: the pass-rate drop, 0–1, below which an undecided drop passes")
	format := fs.String("format", "table", "output formats: table, md, json, html (comma-separated)")
	out := fs.String("o", "", "write the formats into this directory as compare.<ext> instead of standard output")
	alpha := fs.Float64("alpha", reports.DefaultAlpha, "family-wise significance level of the gate")
	tolerance := fs.Float64("tolerance", 0, "accepted drop in pass rate or mean score, 0–1 (0.05 = 5 points)")
	seed := fs.Uint64("seed", 0, "seed of the bootstrap")
	resamples := fs.Int("resamples", reports.DefaultResamples, "bootstrap resamples")
	baseAgent := fs.String("base-agent", "", "base agent file, for the assembled-agent diff")
	headAgent := fs.String("head-agent", "", "head agent file, for the assembled-agent diff")
	model := fs.String("model", "", "model spec of both sides of the assembled-agent diff")
	baseModel := fs.String("base-model", "", "model spec of the base side of the assembled-agent diff")
	headModel := fs.String("head-model", "", "model spec of the head side of the assembled-agent diff")
	var pairFlags stringsFlag
	fs.Var(&pairFlags, "pair", "compare head model HEAD with base model BASE, as BASE=HEAD (repeatable; specs or aliases)")
	var baseProfiles, headProfiles stringsFlag
	fs.Var(&baseProfiles, "base-profile", "base harness profile file (repeatable)")
	fs.Var(&headProfiles, "head-profile", "head harness profile file (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError("want BASE and HEAD, got %d arguments", len(pos))
	}
	f, err := reports.ParseFormats(*format)
	for _, x := range f {
		if x == reports.FormatJUnit {
			err = errors.New("junit")
		}
	}
	if err != nil {
		return usageError("--format takes table, md, json and html, got %q", *format)
	}
	if len(f) > 1 && *out == "" {
		return usageError("%d formats need -o DIR", len(f))
	}
	if *alpha <= 0 || *alpha >= 1 {
		return usageError("--alpha must be between 0 and 1, got %v", *alpha)
	}
	if *tolerance < 0 || *tolerance >= 1 {
		return usageError("--tolerance must be in [0, 1), got %v", *tolerance)
	}
	if *resamples < 100 {
		return usageError("--resamples must be at least 100, got %d", *resamples)
	}
	pol, err := reports.ParsePolicy(*policy)
	if err != nil {
		return usageError("--policy: %v", err)
	}
	if !(*minDrop > 0 && *minDrop < 1) {
		return usageError("--min-drop must be between 0 and 1, got %v", *minDrop)
	}
	opts := reports.CompareOptions{Policy: pol, MinDrop: *minDrop, Alpha: *alpha, Tolerance: *tolerance, Seed: *seed, Resamples: *resamples}
	for _, p := range pairFlags {
		b, h, ok := strings.Cut(p, "=")
		if !ok || strings.TrimSpace(b) == "" || strings.TrimSpace(h) == "" || strings.Contains(h, "=") {
			return usageError("--pair wants BASE_MODEL=HEAD_MODEL, e.g. --pair openai:gpt-5=openai:gpt-5-mini, got %q", p)
		}
		opts.Pairs = append(opts.Pairs, reports.ModelPair{Base: strings.TrimSpace(b), Head: strings.TrimSpace(h)})
	}
	if *model != "" && (*baseModel != "" || *headModel != "") {
		return usageError("give --model, or --base-model and --head-model, not both")
	}
	bm, hm := *baseModel, *headModel
	if *model != "" {
		bm, hm = *model, *model
	}
	if bm == "" && hm == "" && len(opts.Pairs) == 1 && strings.Contains(opts.Pairs[0].Base, ":") && strings.Contains(opts.Pairs[0].Head, ":") {
		bm, hm = opts.Pairs[0].Base, opts.Pairs[0].Head
	}
	if *baseAgent != "" || *headAgent != "" || len(baseProfiles) > 0 || len(headProfiles) > 0 {
		if agentDiff == nil {
			return usageError("--base-agent/--head-agent/--base-profile/--head-profile need the assembly pipeline, which this build of dageval lacks")
		}
		d, err := agentDiff(ctx, e.reg, *baseAgent, *headAgent, baseProfiles, headProfiles, bm, hm)
		if err != nil {
			return &exitError{code: exitBad, msg: "assembled-agent diff: " + err.Error()}
		}
		opts.AgentDiff = d
	} else if *model != "" || *baseModel != "" || *headModel != "" {
		return usageError("--model, --base-model and --head-model only apply to the assembled-agent diff (--base-agent, --head-agent, --base-profile, --head-profile)")
	}

	warnModel(e, "compare", "model", *model)
	warnModel(e, "compare", "base-model", *baseModel)
	warnModel(e, "compare", "head-model", *headModel)

	// The HTML view shows the changed cells' transcripts; the rest need none.
	lo := reports.LoadOptions{SkipDetails: !slices.Contains(f, reports.FormatHTML)}
	base, err := reports.LoadWith(pos[0], lo)
	if err != nil {
		return &exitError{code: exitBad, msg: "base: " + err.Error()}
	}
	head, err := reports.LoadWith(pos[1], lo)
	if err != nil {
		return &exitError{code: exitBad, msg: "head: " + err.Error()}
	}
	for _, side := range []struct {
		name string
		run  *reports.Run
	}{{"base", base}, {"head", head}} {
		// A shard's summary is a part of the matrix: compared alone, the
		// rest of the cells would read as missing.
		if sh := side.run.Summary.Shard; sh != nil {
			return &exitError{code: exitBad, msg: fmt.Sprintf("%s: %s is shard %s of a run; merge its shards first (dageval merge OUT SHARD_DIR...) and compare the merged run", side.name, side.run.Source, sh)}
		}
	}
	cmp, err := reports.Compare(base, head, opts)
	var ie *reports.IncompatibleError
	if errors.As(err, &ie) {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	if *out != "" {
		paths, err := writeInDir(e, "compare", *out, func(dir string) ([]string, error) {
			var paths []string
			for _, x := range f {
				var buf bytes.Buffer
				if err := reports.RenderComparison(&buf, cmp, x); err != nil {
					return paths, err
				}
				p := filepath.Join(dir, "compare"+x.Ext())
				if err := fileutil.WriteFileAtomic(p, buf.Bytes()); err != nil {
					return paths, err
				}
				paths = append(paths, p)
			}
			return paths, nil
		})
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		for _, p := range paths {
			fmt.Fprintf(e.stderr, "wrote %s\n", p)
		}
	} else {
		var buf bytes.Buffer
		if err := reports.RenderComparisonWith(&buf, cmp, f[0], terminal(e, e.stdout)); err != nil {
			return err
		}
		if _, err := e.stdout.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	v := cmp.Verdict
	switch v.ExitCode {
	case exitOK:
		fmt.Fprintf(e.stderr, "dageval compare: %s\n", v.Reason)
		return nil
	case exitFailures:
		return failures("%s", v.Reason)
	default:
		return &exitError{code: exitBad, msg: v.Reason}
	}
}
