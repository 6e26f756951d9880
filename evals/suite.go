package evals

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/internal/yamlx"
	"github.com/dageval/dageval/rubrics"
)

// SuiteVersion is the suite file format version this package reads.
const SuiteVersion = 1

// Defaults of a suite file.
const (
	DefaultEpochs      = 1
	DefaultConcurrency = 8
	DefaultCassettes   = "cassettes"
	DefaultProfileName = "default"
	// DefaultExecTimeout bounds one run of an exec tool when the suite gives no timeout.
	DefaultExecTimeout = 30 * time.Second
)

// Suite is a loaded, validated suite file: what to run (the agent, its
// models and profiles, the cases) and how (mode, cassettes, concurrency,
// limits), and what counts as passing (rubrics, checks, thresholds).
type Suite struct {
	// Path is the suite file; relative paths inside it resolve against Dir.
	Path string
	Dir  string

	Name        string
	Description string
	// Providers are named model endpoints, merged over the built-in entries
	// and the agent file's own providers.
	Providers map[string]provider.Entry
	Agent     AgentSource
	// Models are the model specs under test, in order.
	Models []string
	// Profiles are the harness profiles under test, in order; a suite
	// without profiles has one, named "default", that changes nothing.
	Profiles []*Profile
	// Grader grades cases that have a rubric; nil when none does.
	Grader *Grader
	// Epochs is the default number of runs of each cell.
	Epochs int
	// Mode is where model answers come from (replay by default).
	Mode recorder.Mode
	// Match overrides the cassettes' declared match mode when set.
	Match cassette.Match
	// Cassettes is the directory of the cells' cassettes (resolved).
	Cassettes string
	// Concurrency bounds the cells in flight; ProviderConcurrency bounds the
	// model calls in flight per provider entry (grader calls included).
	Concurrency         int
	ProviderConcurrency map[string]int
	Limits              Limits
	Thresholds          *Thresholds
	// Tools gives declared tools their default behaviour; a case overrides
	// it tool by tool.
	Tools map[string]*ToolBehavior
	Cases []*Case
	// Warnings are problems that do not stop the suite from running, such
	// as a grader that is also a model under test.
	Warnings []string

	doc *yamlx.Doc
}

// AgentSource says where a suite's agent comes from: an agent file, an
// inline agent mapping, or an agent factory registered in Go.
type AgentSource struct {
	// File is the agent file ("" for an inline agent or a factory).
	File string
	// Factory names an agent factory registered with RegisterAgent.
	Factory string
	// Spec is the decoded agent file or inline agent; nil for a factory.
	Spec *agentfile.File
}

// Profile is one harness profile of the matrix.
type Profile struct {
	Name string
	// File is the profile file ("" for an inline profile or none).
	File string
	// Config is the profile; nil means "no changes".
	Config *profile.Config

	// harness is the profile Config builds, checked when the suite loads.
	harness *profile.HarnessProfile
}

// Grader configures the rubric grader.
type Grader struct {
	Model string
	// MaxIterations bounds gradings per run (the grader's needs_revision
	// loops); 0 means the middleware default.
	MaxIterations int
	Temperature   *float64
	Seed          *int64
}

// Limits bound each cell's run. A run that hits one fails its cell.
type Limits struct {
	// MaxSteps bounds the main agent's steps (model calls plus tool steps).
	MaxSteps int
	// Timeout bounds a cell's wall time.
	Timeout time.Duration
	// MaxCostUSD stops a run once its priced usage exceeds it.
	MaxCostUSD float64
}

// Case is one task of the suite.
type Case struct {
	ID    string
	Input string
	// Files are seeded into the agent's files before the run (after the
	// agent file's own files).
	Files map[string]string
	// Tools override the suite's tool behaviours for this case.
	Tools map[string]*ToolBehavior
	// Rubric grades the run when set; RubricFile is where it came from.
	Rubric     *rubrics.Rubric
	RubricFile string
	Checks     []rubrics.Check
	// Epochs is how many times each cell of the case runs.
	Epochs int
	Tags   []string
	// Models restricts the case to some of the suite's models (nil: all).
	Models []string
	// Cassette, when set, is the one cassette of the case's single cell.
	Cassette string

	index int
}

// Load reads and validates a suite file. Every error names the file, line,
// column and key it is about (or the agent, profile or rubric file that has
// the problem).
func Load(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	return Parse(path, data)
}

// node keeps a YAML node for decoding once its shape is known.
type node struct{ n ast.Node }

func (r *node) UnmarshalYAML(n ast.Node) error { r.n = n; return nil }

func (r node) present() bool { return r.n != nil }

type rawSuite struct {
	Version             node                      `yaml:"version"`
	Name                string                    `yaml:"name"`
	Description         string                    `yaml:"description"`
	Providers           map[string]provider.Entry `yaml:"providers"`
	Agent               node                      `yaml:"agent"`
	Models              []string                  `yaml:"models"`
	Profiles            []rawProfile              `yaml:"profiles"`
	Grader              *rawGrader                `yaml:"grader"`
	Epochs              *int                      `yaml:"epochs"`
	Mode                string                    `yaml:"mode"`
	Match               string                    `yaml:"match"`
	Cassettes           string                    `yaml:"cassettes"`
	Concurrency         *int                      `yaml:"concurrency"`
	ProviderConcurrency map[string]int            `yaml:"provider_concurrency"`
	Limits              *rawLimits                `yaml:"limits"`
	Thresholds          *Thresholds               `yaml:"thresholds"`
	Tools               map[string]rawTool        `yaml:"tools"`
	Cases               []rawCase                 `yaml:"cases"`
}

type rawProfile struct {
	Name    string `yaml:"name"`
	File    string `yaml:"file"`
	Profile node   `yaml:"profile"`
}

type rawGrader struct {
	Model         string   `yaml:"model"`
	MaxIterations *int     `yaml:"max_iterations"`
	Temperature   *float64 `yaml:"temperature"`
	Seed          *int64   `yaml:"seed"`
}

type rawLimits struct {
	MaxSteps   *int     `yaml:"max_steps"`
	Timeout    string   `yaml:"timeout"`
	MaxCostUSD *float64 `yaml:"max_cost_usd"`
}

type rawCase struct {
	ID       string             `yaml:"id"`
	Input    node               `yaml:"input"`
	Files    map[string]string  `yaml:"files"`
	Tools    map[string]rawTool `yaml:"tools"`
	Rubric   node               `yaml:"rubric"`
	Checks   node               `yaml:"checks"`
	Epochs   *int               `yaml:"epochs"`
	Tags     []string           `yaml:"tags"`
	Models   []string           `yaml:"models"`
	Cassette string             `yaml:"cassette"`
}

// safeName is what case ids and profile names may look like: they become
// parts of file names.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Parse reads a suite from its bytes; path names it in errors and anchors its
// relative paths.
func Parse(path string, data []byte) (*Suite, error) {
	doc, err := yamlx.Parse(path, data)
	if err != nil {
		return nil, err
	}
	if doc.Root == nil {
		return nil, &yamlx.Error{File: path, Line: 1, Column: 1, Msg: "the suite file is empty"}
	}
	if _, ok := doc.Root.(ast.MapNode); !ok {
		return nil, doc.At(doc.Root, "a suite file is a mapping with version, agent, models, cases, …")
	}
	var raw rawSuite
	if err := doc.Decode(&raw); err != nil {
		return nil, err
	}
	p := &parser{doc: doc, data: data, s: &Suite{Path: path, Dir: filepath.Dir(path), doc: doc}}
	if err := p.suite(&raw); err != nil {
		return nil, err
	}
	return p.s, nil
}

type parser struct {
	doc  *yamlx.Doc
	data []byte // the suite file, for its inline agent
	s    *Suite
}

// errAt reports a problem at a key; a key the file does not have is
// reported at its nearest parent (the file's start for top-level keys).
func (p *parser) errAt(path, format string, args ...any) error {
	e := p.doc.Errorf(path, format, args...)
	if e.Line == 0 {
		e.Line, e.Column = 1, 1
	}
	return e
}

func (p *parser) resolve(rel string) string {
	if rel == "" || filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(p.s.Dir, rel)
}

func (p *parser) suite(raw *rawSuite) error {
	s := p.s
	if !raw.Version.present() {
		return p.errAt("version", "missing key version (write version: %d)", SuiteVersion)
	}
	if v, ok := raw.Version.n.(*ast.IntegerNode); !ok || fmt.Sprint(v.Value) != fmt.Sprint(SuiteVersion) {
		return p.errAt("version", "unsupported suite version %s (this dageval reads version %d)", strings.TrimSpace(raw.Version.n.String()), SuiteVersion)
	}
	s.Name, s.Description = raw.Name, raw.Description
	if strings.TrimSpace(s.Name) == "" {
		return p.errAt("name", "missing key name (the suite's name, used in reports)")
	}

	s.Providers = map[string]provider.Entry{}
	for _, name := range slices.Sorted(maps.Keys(raw.Providers)) {
		e := raw.Providers[name]
		if err := e.Validate(name); err != nil {
			return p.errAt("providers."+name, "%v", err)
		}
		s.Providers[name] = e
	}

	if err := p.agent(raw.Agent); err != nil {
		return err
	}
	if err := p.models(raw.Models); err != nil {
		return err
	}
	if err := p.profiles(raw.Profiles); err != nil {
		return err
	}

	s.Epochs = DefaultEpochs
	if raw.Epochs != nil {
		if *raw.Epochs < 1 {
			return p.errAt("epochs", "epochs must be at least 1, got %d", *raw.Epochs)
		}
		s.Epochs = *raw.Epochs
	}
	s.Mode = recorder.ModeReplay
	if raw.Mode != "" {
		m, err := recorder.ParseMode(raw.Mode)
		if err != nil {
			return p.errAt("mode", "%v", err)
		}
		s.Mode = m
	}
	if raw.Match != "" {
		m, err := cassette.ParseMatch(raw.Match)
		if err != nil {
			return p.errAt("match", "%v", err)
		}
		s.Match = m
	}
	s.Cassettes = p.resolve(DefaultCassettes)
	if raw.Cassettes != "" {
		s.Cassettes = p.resolve(raw.Cassettes)
	}
	s.Concurrency = DefaultConcurrency
	if raw.Concurrency != nil {
		if *raw.Concurrency < 1 {
			return p.errAt("concurrency", "concurrency must be at least 1, got %d", *raw.Concurrency)
		}
		s.Concurrency = *raw.Concurrency
	}
	s.ProviderConcurrency = map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(raw.ProviderConcurrency)) {
		n := raw.ProviderConcurrency[name]
		if n < 1 {
			return p.errAt("provider_concurrency."+name, "a provider limit must be at least 1, got %d", n)
		}
		if !p.knownProvider(name) {
			return p.errAt("provider_concurrency."+name, "unknown provider %q (known: %s)", name, strings.Join(p.providerNames(), ", "))
		}
		s.ProviderConcurrency[name] = n
	}
	if err := p.limits(raw.Limits); err != nil {
		return err
	}
	if err := p.thresholds(raw.Thresholds); err != nil {
		return err
	}
	var err error
	if s.Tools, err = p.tools(raw.Tools, "tools"); err != nil {
		return err
	}
	if err := p.cases(raw.Cases); err != nil {
		return err
	}
	return p.grader(raw.Grader)
}

func (p *parser) agent(raw node) error {
	s := p.s
	switch n := raw.n.(type) {
	case nil, *ast.NullNode:
		return p.errAt("agent", "missing key agent: an agent file path, an inline agent mapping, or {factory: name}")
	case *ast.StringNode:
		if strings.TrimSpace(n.Value) == "" {
			return p.errAt("agent", "the agent file path is empty")
		}
		s.Agent.File = p.resolve(n.Value)
		af, err := agentfile.Load(s.Agent.File)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return p.errAt("agent", "agent file %s does not exist", s.Agent.File)
			}
			return err
		}
		s.Agent.Spec = af
		return nil
	case ast.MapNode:
		if name, ok := factoryRef(n); ok {
			if strings.TrimSpace(name) == "" {
				return p.errAt("agent.factory", "the factory name is empty")
			}
			s.Agent.Factory = name
			return nil
		}
		af, err := agentfile.ParseEmbedded(p.s.Path, p.data, "agent")
		if err != nil {
			return err
		}
		s.Agent.Spec = af
		return nil
	}
	return p.errAt("agent", "want an agent file path or an agent mapping, got %s", yamlx.Kind(raw.n))
}

// factoryRef recognises {factory: name}.
func factoryRef(m ast.MapNode) (string, bool) {
	it := m.MapRange()
	var name string
	n := 0
	found := false
	for it.Next() {
		n++
		if it.Key().GetToken().Value == "factory" {
			found = true
			if s, ok := it.Value().(*ast.StringNode); ok {
				name = s.Value
			}
		}
	}
	return name, found && n == 1
}

// providerNames lists the provider entries model specs may use: built-in,
// the agent file's and the suite's.
func (p *parser) providerNames() []string {
	names := provider.BuiltinNames()
	if af := p.s.Agent.Spec; af != nil {
		names = slices.AppendSeq(names, maps.Keys(af.Providers))
	}
	names = slices.AppendSeq(names, maps.Keys(p.s.Providers))
	slices.Sort(names)
	return slices.Compact(names)
}

func (p *parser) knownProvider(name string) bool { return slices.Contains(p.providerNames(), name) }

func (p *parser) checkSpec(spec, at string) error {
	sp, err := llm.ParseSpec(spec)
	if err != nil {
		return p.errAt(at, "%v", err)
	}
	if !p.knownProvider(sp.Provider) {
		return p.errAt(at, "unknown provider %q in model %s (known: %s; declare others under providers:)", sp.Provider, spec, strings.Join(p.providerNames(), ", "))
	}
	return nil
}

func (p *parser) models(models []string) error {
	if len(models) == 0 {
		return p.errAt("models", "missing key models: list the model specs under test, e.g. [anthropic:claude-sonnet-4-6]")
	}
	seen := map[string]bool{}
	for i, m := range models {
		at := fmt.Sprintf("models[%d]", i)
		if err := p.checkSpec(m, at); err != nil {
			return err
		}
		if seen[m] {
			return p.errAt(at, "model %s is listed twice", m)
		}
		seen[m] = true
	}
	p.s.Models = slices.Clone(models)
	return nil
}

func (p *parser) profiles(raws []rawProfile) error {
	if len(raws) == 0 {
		p.s.Profiles = []*Profile{{Name: DefaultProfileName}}
		return nil
	}
	seen := map[string]bool{}
	for i, rp := range raws {
		at := fmt.Sprintf("profiles[%d]", i)
		if rp.Name == "" {
			return p.errAt(at, "a profile needs a name")
		}
		if !safeName.MatchString(rp.Name) {
			return p.errAt(at+".name", "profile name %q may only hold letters, digits, '.', '_' and '-' (it becomes part of file names)", rp.Name)
		}
		if seen[rp.Name] {
			return p.errAt(at+".name", "profile %q is listed twice", rp.Name)
		}
		seen[rp.Name] = true
		pr := &Profile{Name: rp.Name}
		switch {
		case rp.File != "" && rp.Profile.present():
			return p.errAt(at, "give a profile file or an inline profile, not both")
		case rp.File != "":
			pr.File = p.resolve(rp.File)
			c, err := profile.LoadConfigFile(pr.File)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return p.errAt(at+".file", "profile file %s does not exist", pr.File)
				}
				return err
			}
			pr.Config = c
		case rp.Profile.present():
			c, err := profile.DecodeConfigNode(p.s.Path, rp.Profile.n, at+".profile")
			if err != nil {
				return err
			}
			pr.Config = c
		}
		if pr.Config != nil {
			h, err := pr.Config.HarnessProfile()
			if err != nil {
				key := at + ".profile"
				if pr.File != "" {
					key = at + ".file"
				}
				return p.errAt(key, "%v", err)
			}
			pr.harness = h
		}
		p.s.Profiles = append(p.s.Profiles, pr)
	}
	return nil
}

func (p *parser) limits(raw *rawLimits) error {
	if raw == nil {
		return nil
	}
	l := &p.s.Limits
	if raw.MaxSteps != nil {
		if *raw.MaxSteps < 1 {
			return p.errAt("limits.max_steps", "max_steps must be at least 1, got %d", *raw.MaxSteps)
		}
		l.MaxSteps = *raw.MaxSteps
	}
	if raw.Timeout != "" {
		d, err := time.ParseDuration(raw.Timeout)
		if err != nil || d <= 0 {
			return p.errAt("limits.timeout", "not a positive duration: %q (e.g. 120s or 5m)", raw.Timeout)
		}
		l.Timeout = d
	}
	if raw.MaxCostUSD != nil {
		if !(*raw.MaxCostUSD > 0) || math.IsInf(*raw.MaxCostUSD, 0) {
			return p.errAt("limits.max_cost_usd", "max_cost_usd must be a positive amount of US dollars, got %v", *raw.MaxCostUSD)
		}
		l.MaxCostUSD = *raw.MaxCostUSD
	}
	return nil
}

func (p *parser) thresholds(t *Thresholds) error {
	if t == nil {
		return nil
	}
	share := func(key string, v *float64) error {
		if v != nil && !(*v >= 0 && *v <= 1) {
			return p.errAt("thresholds."+key, "%s must be between 0 and 1, got %v", key, *v)
		}
		return nil
	}
	for _, c := range []struct {
		key string
		v   *float64
	}{{"pass_rate", t.PassRate}, {"mean_score", t.MeanScore}, {"pass_hat_k", t.PassHatK}} {
		if err := share(c.key, c.v); err != nil {
			return err
		}
	}
	if t.MaxCostUSD != nil && (!(*t.MaxCostUSD > 0) || math.IsInf(*t.MaxCostUSD, 0)) {
		return p.errAt("thresholds.max_cost_usd", "max_cost_usd must be a positive amount of US dollars, got %v", *t.MaxCostUSD)
	}
	if t.PassRate == nil && t.MeanScore == nil && t.PassHatK == nil && t.MaxCostUSD == nil {
		return p.errAt("thresholds", "thresholds is empty: set pass_rate, mean_score, pass_hat_k or max_cost_usd, or remove it")
	}
	p.s.Thresholds = t
	return nil
}

func (p *parser) cases(raws []rawCase) error {
	if len(raws) == 0 {
		return p.errAt("cases", "missing key cases: a suite needs at least one case")
	}
	seen := map[string]int{}
	for i, rc := range raws {
		at := fmt.Sprintf("cases[%d]", i)
		c := &Case{index: i, Files: rc.Files, Tags: slices.Clone(rc.Tags)}
		if rc.ID == "" {
			return p.errAt(at, "a case needs an id")
		}
		if !safeName.MatchString(rc.ID) {
			return p.errAt(at+".id", "case id %q may only hold letters, digits, '.', '_' and '-' (it becomes part of file names)", rc.ID)
		}
		if j, dup := seen[rc.ID]; dup {
			return p.errAt(at+".id", "duplicate case id %q (also cases[%d])", rc.ID, j)
		}
		seen[rc.ID] = i
		c.ID = rc.ID
		switch n := rc.Input.n.(type) {
		case *ast.StringNode:
			c.Input = n.Value
		case *ast.LiteralNode:
			c.Input = n.Value.Value
		case nil:
			return p.errAt(at, "case %s needs an input (the user's message)", rc.ID)
		default:
			return p.errAt(at+".input", "want the user's message as a string, got %s", yamlx.Kind(n))
		}
		if strings.TrimSpace(c.Input) == "" {
			return p.errAt(at+".input", "the input is empty")
		}
		for _, path := range slices.Sorted(maps.Keys(rc.Files)) {
			if !strings.HasPrefix(path, "/") {
				return p.errAt(at+".files", "file path %q must be absolute (start with /)", path)
			}
		}
		var err error
		if c.Tools, err = p.tools(rc.Tools, at+".tools"); err != nil {
			return err
		}
		if err := p.rubric(c, rc.Rubric, at+".rubric"); err != nil {
			return err
		}
		if rc.Checks.present() {
			if _, isNull := rc.Checks.n.(*ast.NullNode); !isNull {
				if c.Checks, err = rubrics.DecodeChecks(p.s.Path, rc.Checks.n, at+".checks"); err != nil {
					return err
				}
			}
		}
		c.Epochs = p.s.Epochs
		if rc.Epochs != nil {
			if *rc.Epochs < 1 {
				return p.errAt(at+".epochs", "epochs must be at least 1, got %d", *rc.Epochs)
			}
			c.Epochs = *rc.Epochs
		}
		for j, m := range rc.Models {
			if !slices.Contains(p.s.Models, m) {
				return p.errAt(fmt.Sprintf("%s.models[%d]", at, j), "model %s is not one of the suite's models (%s)", m, strings.Join(p.s.Models, ", "))
			}
		}
		if len(rc.Models) > 0 {
			c.Models = slices.Clone(rc.Models)
		}
		if rc.Cassette != "" {
			cells := len(c.models(p.s)) * len(p.s.Profiles) * c.Epochs
			if cells != 1 {
				return p.errAt(at+".cassette", "a case with its own cassette must have exactly one cell (one model, one profile, one epoch); it has %d", cells)
			}
			c.Cassette = p.resolve(rc.Cassette)
		}
		p.s.Cases = append(p.s.Cases, c)
	}
	return nil
}

// models returns the models the case runs with.
func (c *Case) models(s *Suite) []string {
	if c.Models != nil {
		return c.Models
	}
	return s.Models
}

func (p *parser) rubric(c *Case, raw node, at string) error {
	switch n := raw.n.(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.StringNode:
		if strings.TrimSpace(n.Value) == "" {
			return p.errAt(at, "the rubric file path is empty")
		}
		c.RubricFile = p.resolve(n.Value)
		if _, err := os.Stat(c.RubricFile); err != nil {
			if r, serr := rubrics.StockRubric(n.Value); serr == nil && !strings.ContainsAny(n.Value, `/\`) {
				// A bare name of a stock rubric: "helpful".
				c.Rubric, c.RubricFile = r, "stock:"+strings.TrimSuffix(n.Value, ".yaml")
				return nil
			}
			return p.errAt(at, "rubric file %s does not exist (stock rubrics: %s)", c.RubricFile, strings.Join(rubrics.StockNames(), ", "))
		}
		r, err := rubrics.LoadRubric(c.RubricFile)
		if err != nil {
			return err
		}
		c.Rubric = r
		return nil
	case ast.MapNode, *ast.SequenceNode:
		r, err := rubrics.DecodeRubric(p.s.Path, n, at)
		if err != nil {
			return err
		}
		c.Rubric = r
		return nil
	}
	return p.errAt(at, "want a rubric file path or an inline rubric (criteria), got %s", yamlx.Kind(raw.n))
}

func (p *parser) grader(raw *rawGrader) error {
	s := p.s
	var needs *Case
	for _, c := range s.Cases {
		if c.Rubric != nil {
			needs = c
			break
		}
	}
	if raw == nil {
		if needs != nil {
			return p.errAt(fmt.Sprintf("cases[%d].rubric", needs.index), "case %s has a rubric but the suite has no grader: add grader: {model: provider:model}", needs.ID)
		}
		return nil
	}
	if raw.Model == "" {
		return p.errAt("grader", "the grader needs a model")
	}
	if err := p.checkSpec(raw.Model, "grader.model"); err != nil {
		return err
	}
	g := &Grader{Model: raw.Model, Temperature: raw.Temperature, Seed: raw.Seed}
	if raw.MaxIterations != nil {
		if *raw.MaxIterations < 1 {
			return p.errAt("grader.max_iterations", "max_iterations must be at least 1, got %d", *raw.MaxIterations)
		}
		g.MaxIterations = *raw.MaxIterations
	}
	if t := raw.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		return p.errAt("grader.temperature", "temperature must be between 0 and 2, got %v", *t)
	}
	if slices.Contains(s.Models, g.Model) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("grader model %s is also a model under test: a model grading its own work tends to favour it; use a different grader model", g.Model))
	}
	if g.Temperature == nil {
		s.Warnings = append(s.Warnings, "the grader has no temperature: set grader.temperature: 0 (and a seed where the provider supports one) so verdicts repeat")
	}
	s.Grader = g
	return nil
}
