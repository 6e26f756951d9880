package evals

import (
	"bytes"
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
	"sync"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/catalog"
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
	// DefaultProviderTimeout is limits.provider_timeout when the suite gives
	// none: how long one attempt of a model call may go without hearing
	// from the provider (provider.DefaultTimeout).
	DefaultProviderTimeout = provider.DefaultTimeout
	// DefaultProviderRetries is limits.provider_retries when the suite gives
	// none: a failed model call is tried this many more times when its
	// failure may pass (rate limit, overload, 5xx, stall).
	DefaultProviderRetries = provider.DefaultMaxAttempts - 1
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
	// Graphs are the agents the suite's deployment serves in process, by
	// graph id (graphs: {id: agent file | {factory: name}}): an async
	// subagent without a url names one by its graph_id, as under
	// `dageval serve`. Each cell serves its own copy.
	Graphs map[string]AgentSource
	// Models are the model specs under test, in order.
	Models []string
	// Aliases maps a model spec to the role the suite gives it (models:
	// [{spec: openai:gpt-5, alias: primary}]). Runs record it with every
	// cell and compare pairs cells by it, so a pull request that swaps the
	// model behind an alias is compared case by case.
	Aliases map[string]string
	// Stream is the suite's stream: whether the agent streams its model
	// calls (see Suite.Streams); nil when the suite does not say.
	Stream *bool
	// ModelStream holds the stream: of the models entries that set one.
	ModelStream map[string]bool
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
	// RateLimits paces each provider entry's calls across the run
	// (rate_limits: {provider: {requests_per_minute, tokens_per_minute}});
	// every provider is paused as a whole when it throttles, limit or not.
	RateLimits map[string]provider.RateLimit
	Limits     Limits
	Thresholds *Thresholds
	// AllowUnused (allow_unused: true) turns a cassette's unplayed
	// interactions from an error of the cell into a warning; a case may
	// say otherwise for itself.
	AllowUnused bool
	// TolerateErrors (errors: tolerate) lets errored cells count as
	// failures in the thresholds instead of deciding the verdict; off by
	// default, so a run with a replay miss or a provider error never passes.
	TolerateErrors bool
	// Tools gives declared tools their default behaviour; a case overrides
	// it tool by tool.
	Tools map[string]*ToolBehavior
	Cases []*Case
	// Warnings are problems that do not stop the suite from running, such
	// as a grader that is also a model under test.
	Warnings []string
	// ModelInfo are the facts the suite declares about its models (the
	// models entries written as mappings); they win over the agent file's
	// model_info and the built-in catalog.
	ModelInfo []catalog.Declaration

	doc *yamlx.Doc
	// reg is the registry the suite was loaded with (nil: globals only).
	reg *Registry
	// catalog is the built-in catalog with the agent file's and the
	// suite's declarations, for pricing and warnings.
	catalog *catalog.Catalog
	// broken lists the sections that did not load, when validation goes on
	// past them (ValidateFile), so that it does not report what they cause.
	broken map[string]bool
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
	// Stream is the profile entry's stream:; nil when it does not say.
	Stream *bool

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

// Limits bound each cell's run. A run that hits MaxSteps, Timeout or
// MaxCostUSD fails its cell: the agent used up its budget. The provider
// limits are about the evidence instead: a model call the provider leaves
// silent for ProviderTimeout (after ProviderRetries more tries) errors the
// cell, since a provider outage says nothing about the agent.
type Limits struct {
	// MaxSteps bounds the main agent's steps (model calls plus tool steps).
	MaxSteps int
	// Timeout bounds a cell's wall time.
	Timeout time.Duration
	// MaxCostUSD stops a run once its priced usage exceeds it.
	MaxCostUSD float64
	// ProviderTimeout (limits.provider_timeout) bounds each attempt of a
	// model call by the provider's silences: the wait for its answer to
	// begin, then each gap in a streamed answer. 0 means
	// DefaultProviderTimeout.
	ProviderTimeout time.Duration
	// ProviderRetries (limits.provider_retries) is how many times a model
	// call that failed in a way that may pass is tried again; nil means
	// DefaultProviderRetries. Recording keeps only the attempt that counted.
	ProviderRetries *int
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
	// Source is where the case is written, file:line: the suite file for
	// an inline case, the dataset file and row for a case from a dataset.
	Source string
	// AllowUnused is the suite's allow_unused unless the case sets its own.
	AllowUnused bool
	// Agent is the case's agent when it overrides the suite's (agent: in
	// the case, the keys of an agent file laid over the suite's agent);
	// nil when the case runs the suite's agent.
	Agent *agentfile.File
	// History is a prior conversation the agent sees before Input: user
	// and assistant messages, tool calls and their results.
	History []llm.Message

	// index is the case's entry in the suite's cases list (a dataset's
	// cases share their entry's).
	index int
	// row locates a case from a dataset, for errors found after loading;
	// nil for an inline case.
	row *yamlx.Error
}

// Load reads and validates a suite file. Every error names the file, line,
// column and key it is about (or the agent, profile, rubric or dataset file
// that has the problem); a suite with several problems reports them all,
// sorted by file and line. Go checks named by the suite must be registered
// on a Registry: load the suite with (*Registry).Load.
func Load(path string) (*Suite, error) { return (*Registry)(nil).Load(path) }

// Parse reads a suite from its bytes; path names it in errors and anchors its
// relative paths.
func Parse(path string, data []byte) (*Suite, error) { return (*Registry)(nil).Parse(path, data) }

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
	Graphs              map[string]node           `yaml:"graphs"`
	Models              []node                    `yaml:"models"`
	Stream              *bool                     `yaml:"stream"`
	Profiles            []rawProfile              `yaml:"profiles"`
	Grader              *rawGrader                `yaml:"grader"`
	Epochs              *yamlx.Int                `yaml:"epochs"`
	Mode                string                    `yaml:"mode"`
	Match               string                    `yaml:"match"`
	Cassettes           string                    `yaml:"cassettes"`
	Concurrency         *yamlx.Int                `yaml:"concurrency"`
	ProviderConcurrency map[string]int            `yaml:"provider_concurrency"`
	RateLimits          map[string]rawRateLimit   `yaml:"rate_limits"`
	Limits              *rawLimits                `yaml:"limits"`
	Thresholds          *Thresholds               `yaml:"thresholds"`
	AllowUnused         bool                      `yaml:"allow_unused"`
	Errors              string                    `yaml:"errors"`
	Tools               map[string]rawTool        `yaml:"tools"`
	Cases               node                      `yaml:"cases"`
}

type rawProfile struct {
	Name    string `yaml:"name"`
	File    string `yaml:"file"`
	Profile node   `yaml:"profile"`
	Stream  *bool  `yaml:"stream"`
}

type rawGrader struct {
	Model         string     `yaml:"model"`
	MaxIterations *yamlx.Int `yaml:"max_iterations"`
	Temperature   *float64   `yaml:"temperature"`
	Seed          *int64     `yaml:"seed"`
}

type rawRateLimit struct {
	RequestsPerMinute *float64 `yaml:"requests_per_minute"`
	TokensPerMinute   *float64 `yaml:"tokens_per_minute"`
}

type rawLimits struct {
	MaxSteps        *yamlx.Int `yaml:"max_steps"`
	Timeout         string     `yaml:"timeout"`
	MaxCostUSD      *float64   `yaml:"max_cost_usd"`
	ProviderTimeout string     `yaml:"provider_timeout"`
	ProviderRetries *yamlx.Int `yaml:"provider_retries"`
}

type rawCase struct {
	ID          string             `yaml:"id"`
	Input       node               `yaml:"input"`
	Files       map[string]string  `yaml:"files"`
	Tools       map[string]rawTool `yaml:"tools"`
	Rubric      node               `yaml:"rubric"`
	Checks      node               `yaml:"checks"`
	Epochs      *yamlx.Int         `yaml:"epochs"`
	Tags        []string           `yaml:"tags"`
	Models      []string           `yaml:"models"`
	Cassette    string             `yaml:"cassette"`
	AllowUnused *bool              `yaml:"allow_unused"`
	Agent       node               `yaml:"agent"`
	Messages    node               `yaml:"messages"`
	Expect      node               `yaml:"expect"`
}

// safeName is what case ids and profile names may look like: they become
// parts of file names.
var safeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`) })

func loadSuite(path string, reg *Registry) (*Suite, []error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []error{fmt.Errorf("suite: %w", err)}
	}
	return parseSuite(path, data, reg)
}

// parseSuite reads a suite and returns every problem it finds, with the
// suite as far as it could be read (nil when the file is not a suite at
// all), so that validation can go on to report the problems of its valid
// parts too.
func parseSuite(path string, data []byte, reg *Registry) (*Suite, []error) {
	doc, err := yamlx.Parse(path, data)
	if err != nil {
		return nil, []error{err}
	}
	if doc.Root == nil {
		return nil, []error{&yamlx.Error{File: path, Line: 1, Column: 1, Msg: "the suite file is empty"}}
	}
	if _, ok := doc.Root.(ast.MapNode); !ok {
		return nil, []error{doc.At(doc.Root, "a suite file is a mapping with version, agent, models, cases, …")}
	}
	p := &parser{doc: doc, data: data, reg: reg, s: &Suite{Path: path, Dir: filepath.Dir(path), doc: doc, reg: reg}, broken: map[string]bool{}}
	var raw rawSuite
	if err := doc.Decode(&raw); err != nil {
		// Decode key by key, so that one bad key does not hide the others.
		raw = rawSuite{}
		p.decodeEach(&raw)
	}
	p.suite(&raw)
	p.s.broken = p.broken
	// From here on the suite only places problems at its keys: the syntax
	// tree of the file, a few kilobytes a case, need not live as long as
	// the suite does.
	p.s.doc = doc.Positions()
	return p.s, p.errs
}

// decodeEach decodes the suite's top-level keys one at a time, recording
// each key that fails.
func (p *parser) decodeEach(raw *rawSuite) {
	var entries []*ast.MappingValueNode
	switch m := p.doc.Root.(type) {
	case *ast.MappingNode:
		entries = m.Values
	case *ast.MappingValueNode:
		entries = []*ast.MappingValueNode{m}
	}
	seen := map[string]bool{}
	for _, e := range entries {
		key := e.Key.GetToken().Value
		if seen[key] {
			p.fail(p.doc.At(e.Key, "key %s is given twice", key))
			continue
		}
		seen[key] = true
		if err := p.doc.DecodeNode(e, raw); err != nil {
			p.fail(err)
			p.broken[key] = true
		}
	}
}

type parser struct {
	doc  *yamlx.Doc
	data []byte // the suite file, for its inline agent
	s    *Suite
	reg  *Registry
	// files is reg's agent-file registry, made once.
	files *agentfile.Registry
	errs  []error
	// broken lists the top-level keys that did not decode, so that the
	// checks depending on them do not add errors of their own.
	broken map[string]bool
	// caseIDs maps each case id to where it was first given, to report
	// duplicates across inline cases and datasets.
	caseIDs map[string]string
}

// fail records a problem; the parser goes on to find the others.
func (p *parser) fail(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
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

// suite checks every section, recording the problems of each. Sections
// that depend on another (models on the agent's providers, cases on the
// models) skip the checks a broken dependency would make fail spuriously.
func (p *parser) suite(raw *rawSuite) {
	s := p.s
	switch {
	case p.broken["version"]:
	case !raw.Version.present():
		p.fail(p.errAt("version", "missing key version (write version: %d)", SuiteVersion))
	default:
		if v, ok := raw.Version.n.(*ast.IntegerNode); !ok || fmt.Sprint(v.Value) != fmt.Sprint(SuiteVersion) {
			p.fail(p.errAt("version", "unsupported suite version %s (this dageval reads version %d)", strings.TrimSpace(raw.Version.n.String()), SuiteVersion))
		}
	}
	s.Name, s.Description = raw.Name, raw.Description
	if strings.TrimSpace(s.Name) == "" && !p.broken["name"] {
		p.fail(p.errAt("name", "missing key name (the suite's name, used in reports)"))
	}

	s.Providers = map[string]provider.Entry{}
	for _, name := range slices.Sorted(maps.Keys(raw.Providers)) {
		e := raw.Providers[name]
		if err := e.Validate(name); err != nil {
			p.fail(p.errAt("providers."+name, "%v", err))
			p.broken["providers"] = true
			continue
		}
		s.Providers[name] = e
	}

	if !p.broken["agent"] {
		if err := p.agent(raw.Agent); err != nil {
			p.fail(err)
			p.broken["agent"] = true
		}
	}
	p.graphs(raw.Graphs)
	if !p.broken["models"] {
		p.models(raw.Models)
	}
	s.Stream = raw.Stream
	if !p.broken["profiles"] {
		p.profiles(raw.Profiles)
	}
	if len(s.Profiles) == 0 {
		s.Profiles = []*Profile{{Name: DefaultProfileName}}
	}

	s.Epochs = DefaultEpochs
	if raw.Epochs != nil {
		if *raw.Epochs < 1 {
			p.fail(p.errAt("epochs", "epochs must be at least 1, got %d", *raw.Epochs))
		} else {
			s.Epochs = int(*raw.Epochs)
		}
	}
	s.Mode = recorder.ModeReplay
	if raw.Mode != "" {
		if m, err := recorder.ParseMode(raw.Mode); err != nil {
			p.fail(p.errAt("mode", "%v", err))
		} else {
			s.Mode = m
		}
	}
	if raw.Match != "" {
		if m, err := cassette.ParseMatch(raw.Match); err != nil {
			p.fail(p.errAt("match", "%v", err))
		} else {
			s.Match = m
		}
	}
	s.Cassettes = p.resolve(DefaultCassettes)
	if raw.Cassettes != "" {
		s.Cassettes = p.resolve(raw.Cassettes)
	}
	s.Concurrency = DefaultConcurrency
	if raw.Concurrency != nil {
		if *raw.Concurrency < 1 {
			p.fail(p.errAt("concurrency", "concurrency must be at least 1, got %d", *raw.Concurrency))
		} else {
			s.Concurrency = int(*raw.Concurrency)
		}
	}
	s.ProviderConcurrency = map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(raw.ProviderConcurrency)) {
		n := raw.ProviderConcurrency[name]
		switch {
		case n < 1:
			p.fail(p.errAt("provider_concurrency."+name, "a provider limit must be at least 1, got %d", n))
		case !p.knownProvider(name):
			p.fail(p.errAt("provider_concurrency."+name, "unknown provider %q (known: %s)", name, strings.Join(p.providerNames(), ", ")))
		default:
			s.ProviderConcurrency[name] = n
		}
	}
	s.RateLimits = map[string]provider.RateLimit{}
	for _, name := range slices.Sorted(maps.Keys(raw.RateLimits)) {
		p.fail(p.rateLimit(name, raw.RateLimits[name]))
	}
	p.fail(p.limits(raw.Limits))
	p.fail(p.thresholds(raw.Thresholds))
	s.AllowUnused = raw.AllowUnused
	switch raw.Errors {
	case "", "fail":
	case "tolerate":
		s.TolerateErrors = true
	default:
		p.fail(p.errAt("errors", "errors must be fail (the default: an errored cell makes the run errored) or tolerate (errored cells count as failures), got %q", raw.Errors))
	}
	var err error
	if s.Tools, err = p.tools(raw.Tools, "tools"); err != nil {
		p.fail(err)
		p.broken["tools"] = true
	}
	if !p.broken["cases"] {
		p.cases(raw.Cases)
	}
	if !p.broken["agent"] {
		p.checkGraphs()
	}
	if !p.broken["grader"] {
		p.fail(p.grader(raw.Grader))
	}
	p.buildCatalog()
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
		af, err := p.agentFiles().Load(s.Agent.File)
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
		af, err := p.inlineAgent()
		if err != nil {
			return err
		}
		s.Agent.Spec = af
		return nil
	}
	return p.errAt("agent", "want an agent file path or an agent mapping, got %s", yamlx.Kind(raw.n))
}

// inlineAgent decodes the suite's inline agent from a copy of the suite
// file whose lines outside the agent: section are blank: the same lines
// and columns, so the same agent and the same errors, but a syntax tree of
// the agent alone for it to keep (for its errors and its profile), not
// one of the whole file, which grows with the cases. An agent that cannot
// be read so — an alias of an anchor elsewhere in the file, a suite in
// flow style — is decoded from the whole file, as is one with errors, so
// that they are reported as they always were.
func (p *parser) inlineAgent() (*agentfile.File, error) {
	if data, ok := p.agentSection(); ok {
		if doc, err := yamlx.Parse(p.s.Path, data); err == nil {
			if af, err := p.agentFiles().ParseEmbeddedDoc(doc, "agent"); err == nil {
				return af, nil
			}
		}
	}
	return p.agentFiles().ParseEmbeddedDoc(p.doc, "agent")
}

// agentSection is the suite file with every line blank but those from
// the agent: key to the next top-level key; false unless the top level is
// a block mapping whose keys start lines of their own.
func (p *parser) agentSection() ([]byte, bool) {
	m, ok := p.doc.Root.(*ast.MappingNode)
	if !ok || m.IsFlowStyle {
		return nil, false
	}
	from, to, prev := 0, 0, 0
	for i, v := range m.Values {
		pos := v.Key.GetToken().Position
		if pos.Column != 1 || pos.Line <= prev {
			return nil, false
		}
		prev = pos.Line
		if v.Key.GetToken().Value == "agent" {
			from, to = pos.Line, math.MaxInt
			if i+1 < len(m.Values) {
				to = m.Values[i+1].Key.GetToken().Position.Line - 1
			}
		}
	}
	if from == 0 {
		return nil, false
	}
	out := make([]byte, 0, len(p.data))
	line := 1
	for rest := p.data; len(rest) > 0; line++ {
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		if line >= from && line <= to {
			out = append(out, rest[:n]...)
		} else if rest[n-1] == '\n' {
			out = append(out, '\n')
		}
		rest = rest[n:]
	}
	return out, true
}

// graphs reads the agents served in process to url-less async subagents.
func (p *parser) graphs(raw map[string]node) {
	if len(raw) == 0 {
		return
	}
	p.s.Graphs = map[string]AgentSource{}
	for _, id := range slices.Sorted(maps.Keys(raw)) {
		at := "graphs." + id
		switch n := raw[id].n.(type) {
		case *ast.StringNode:
			if strings.TrimSpace(n.Value) == "" {
				p.fail(p.errAt(at, "the agent file path is empty"))
				continue
			}
			path := p.resolve(n.Value)
			af, err := p.agentFiles().Load(path)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					err = p.errAt(at, "agent file %s does not exist", path)
				}
				p.fail(err)
				continue
			}
			p.s.Graphs[id] = AgentSource{File: path, Spec: af}
		case ast.MapNode:
			name, ok := factoryRef(n)
			if !ok || strings.TrimSpace(name) == "" {
				p.fail(p.errAt(at, "want an agent file path or {factory: name}"))
				continue
			}
			p.s.Graphs[id] = AgentSource{Factory: name}
		default:
			p.fail(p.errAt(at, "want an agent file path or {factory: name}, got %s", yamlx.Kind(raw[id].n)))
		}
	}
}

// checkGraphs reports the url-less async subagents of the suite's agents
// (the suite's, its cases' and its graphs') whose graph_id the suite does
// not serve: nothing would run their tasks.
func (p *parser) checkGraphs() {
	check := func(af *agentfile.File, where, whose string) {
		if af == nil {
			return
		}
		for i, sd := range af.SubAgents {
			if sd.GraphID == "" || sd.URL != "" || sd.URLEnv != "" {
				continue
			}
			if _, ok := p.s.Graphs[sd.GraphID]; ok {
				continue
			}
			served := "the suite serves no graphs"
			if len(p.s.Graphs) > 0 {
				served = "graphs: serves " + strings.Join(slices.Sorted(maps.Keys(p.s.Graphs)), ", ")
			}
			p.fail(p.errAt(where, "%sasync subagent %q (subagents[%d]) has no url, so its graph %q runs in process, but %s (add graphs: {%s: AGENT_FILE})", whose, sd.Name, i, sd.GraphID, served, sd.GraphID))
		}
	}
	check(p.s.Agent.Spec, "agent", "")
	for _, c := range p.s.Cases {
		if c.Agent != nil {
			check(c.Agent, "cases", "case "+c.ID+": ")
		}
	}
	for _, id := range slices.Sorted(maps.Keys(p.s.Graphs)) {
		check(p.s.Graphs[id].Spec, "graphs."+id, "")
	}
}

// agentFiles is the registry the suite's agent file is read with.
func (p *parser) agentFiles() *agentfile.Registry {
	if p.files == nil {
		reg := p.reg
		if reg == nil {
			reg = global
		}
		p.files = reg.AgentFiles()
	}
	return p.files
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
// registered, the agent file's and the suite's.
func (p *parser) providerNames() []string {
	names := provider.BuiltinNames()
	names = append(names, p.agentFiles().Providers()...)
	if af := p.s.Agent.Spec; af != nil {
		names = slices.AppendSeq(names, maps.Keys(af.Providers))
	}
	names = slices.AppendSeq(names, maps.Keys(p.s.Providers))
	slices.Sort(names)
	return slices.Compact(names)
}

// knownProvider reports whether model specs may use the provider; when
// the agent or the providers did not load, every provider passes, since
// the missing ones may have declared it.
func (p *parser) knownProvider(name string) bool {
	return p.broken["agent"] || p.broken["providers"] || slices.Contains(p.providerNames(), name)
}

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

// models reads the models under test: specs, or mappings of a spec and
// its facts ({spec, context_window, max_output, prices}) and whether the
// agent streams from it (stream: true|false, see Suite.Streams).
func (p *parser) models(raws []node) {
	if len(raws) == 0 {
		p.fail(p.errAt("models", "missing key models: list the model specs under test, e.g. [anthropic:claude-sonnet-4-6]"))
		p.broken["models"] = true
		return
	}
	seen := map[string]bool{}
	aliases := map[string]bool{}
	p.s.Aliases = map[string]string{}
	for i, rn := range raws {
		at := fmt.Sprintf("models[%d]", i)
		var spec string
		if s, ok := rn.n.(*ast.StringNode); ok {
			if r, bad := yamlx.BidiControl(s.Value); bad {
				p.fail(p.errAt(at, "model %q holds the bidirectional control character U+%04X, which makes it read differently from what it is", s.Value, r))
				p.broken["models"] = true
				continue
			}
		}
		switch n := rn.n.(type) {
		case *ast.StringNode:
			spec = n.Value
		case ast.MapNode:
			var m modelEntry
			if err := p.doc.DecodeNode(rn.n, &m); err != nil {
				p.fail(err)
				p.broken["models"] = true
				continue
			}
			d := m.Declaration
			if d.Spec == "" {
				p.fail(p.errAt(at, "a model entry needs a spec (provider:model)"))
				p.broken["models"] = true
				continue
			}
			if m.Alias != "" {
				switch {
				case !safeName().MatchString(m.Alias):
					p.fail(p.errAt(at+".alias", "alias %q may only hold letters, digits, '.', '_' and '-'", m.Alias))
					p.broken["models"] = true
					continue
				case aliases[m.Alias]:
					p.fail(p.errAt(at+".alias", "alias %s is given to two models", m.Alias))
					p.broken["models"] = true
					continue
				}
				aliases[m.Alias] = true
				p.s.Aliases[d.Spec] = m.Alias
			}
			// An entry that only gives an alias or stream: declares no model facts.
			if (m.Alias == "" && m.Stream == nil) || d.ContextWindow != 0 || d.MaxOutput != 0 || d.Prices != nil {
				if err := d.Validate(); err != nil {
					p.fail(p.declarationErr(at, err))
					p.broken["models"] = true
					continue
				}
				p.s.ModelInfo = append(p.s.ModelInfo, d)
			}
			if m.Stream != nil {
				if p.s.ModelStream == nil {
					p.s.ModelStream = map[string]bool{}
				}
				p.s.ModelStream[d.Spec] = *m.Stream
			}
			spec = d.Spec
		default:
			p.fail(p.errAt(at, "want a model spec (provider:model) or {spec, alias, stream, context_window, prices}, got %s", yamlx.Kind(rn.n)))
			p.broken["models"] = true
			continue
		}
		specAt := at
		if _, isMap := rn.n.(ast.MapNode); isMap {
			specAt += ".spec"
		}
		if err := p.checkSpec(spec, specAt); err != nil {
			p.fail(err)
			p.broken["models"] = true
			continue
		}
		if seen[spec] {
			p.fail(p.errAt(at, "model %s is listed twice", spec))
			continue
		}
		seen[spec] = true
		p.s.Models = append(p.s.Models, spec)
	}
	for _, m := range p.s.Models {
		if aliases[m] && p.s.Aliases[m] != m {
			p.fail(p.errAt("models", "%s is both a model and another model's alias", m))
			p.broken["models"] = true
		}
	}
}

// modelEntry is a models entry written as a mapping: the model's facts
// the role (alias) it plays in the suite, and whether it streams.
type modelEntry struct {
	catalog.Declaration `yaml:",inline"`
	Alias               string `yaml:"alias"`
	Stream              *bool  `yaml:"stream"`
}

// Role is the name a model plays in the suite: its alias, or the model
// spec itself when it has none. Compare pairs cells by role.
func (s *Suite) Role(model string) string {
	if a := s.Aliases[model]; a != "" {
		return a
	}
	return model
}

// Streams reports whether a cell's agent streams its model calls, as Deep
// Agents apps do: the model entry's stream: when it sets one, else the
// profile entry's, else the suite's, else false. The most specific setting
// wins, and the model comes first because whether a model (or the server
// in front of it) streams well is a property of the model.
func (s *Suite) Streams(model string, p *Profile) bool {
	if v, ok := s.ModelStream[model]; ok {
		return v
	}
	if p != nil && p.Stream != nil {
		return *p.Stream
	}
	return s.Stream != nil && *s.Stream
}

// declarationErr positions a catalog.Declaration problem at its key.
func (p *parser) declarationErr(at string, err error) error {
	var de *catalog.DeclarationError
	if errors.As(err, &de) {
		if de.Key != "" {
			at += "." + de.Key
		}
		return p.errAt(at, "%s", de.Msg)
	}
	return p.errAt(at, "%v", err)
}

// catalog builds the suite's model catalog and warns about the model specs
// it does not know: their cost is unknown and summarization cannot trigger
// on their context window, and a near miss is most likely a typo.
func (p *parser) buildCatalog() {
	s := p.s
	var decls []catalog.Declaration
	if af := s.Agent.Spec; af != nil {
		decls = append(decls, af.ModelInfo...)
	}
	cat, err := catalog.Default().With(append(decls, s.ModelInfo...)...)
	if err != nil {
		// Each declaration was validated where it was read.
		cat = catalog.Default()
	}
	s.catalog = cat
	type use struct{ spec, at string }
	var uses []use
	for i, m := range s.Models {
		uses = append(uses, use{m, fmt.Sprintf("models[%d]", i)})
	}
	if s.Grader != nil {
		uses = append(uses, use{s.Grader.Model, "grader.model"})
	}
	for _, u := range uses {
		if cat.Knows(u.spec) {
			continue
		}
		msg := fmt.Sprintf("%s is not in the catalog", u.spec)
		if near, ok := cat.Suggest(u.spec); ok {
			msg += fmt.Sprintf("; did you mean %s?", near)
		} else {
			msg += "."
		}
		msg += fmt.Sprintf(" Its cost is unknown and summarization cannot use its context window; if the spec is right, declare them: {spec: %s, context_window: …, prices: {input_per_mtok: …, output_per_mtok: …}}", u.spec)
		s.Warnings = append(s.Warnings, p.errAt(u.at, "%s", msg).Error())
	}
}

func (p *parser) profiles(raws []rawProfile) {
	seen := map[string]bool{}
	for i, rp := range raws {
		pr, err := p.profile(i, rp, seen)
		if err != nil {
			p.fail(err)
			continue
		}
		p.s.Profiles = append(p.s.Profiles, pr)
	}
}

func (p *parser) profile(i int, rp rawProfile, seen map[string]bool) (*Profile, error) {
	at := fmt.Sprintf("profiles[%d]", i)
	if rp.Name == "" {
		return nil, p.errAt(at, "a profile needs a name")
	}
	if !safeName().MatchString(rp.Name) {
		return nil, p.errAt(at+".name", "profile name %q may only hold letters, digits, '.', '_' and '-' (it becomes part of file names)", rp.Name)
	}
	if seen[rp.Name] {
		return nil, p.errAt(at+".name", "profile %q is listed twice", rp.Name)
	}
	seen[rp.Name] = true
	pr := &Profile{Name: rp.Name, Stream: rp.Stream}
	switch {
	case rp.File != "" && rp.Profile.present():
		return nil, p.errAt(at, "give a profile file or an inline profile, not both")
	case rp.File != "":
		pr.File = p.resolve(rp.File)
		c, err := profile.LoadConfigFile(pr.File)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, p.errAt(at+".file", "profile file %s does not exist", pr.File)
			}
			return nil, err
		}
		pr.Config = c
	case rp.Profile.present():
		c, err := profile.DecodeConfigNode(p.s.Path, rp.Profile.n, at+".profile")
		if err != nil {
			return nil, err
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
			return nil, p.errAt(key, "%v", err)
		}
		pr.harness = h
	}
	return pr, nil
}

func (p *parser) rateLimit(name string, raw rawRateLimit) error {
	at := "rate_limits." + name
	if !p.knownProvider(name) {
		return p.errAt(at, "unknown provider %q (known: %s)", name, strings.Join(p.providerNames(), ", "))
	}
	var l provider.RateLimit
	for _, f := range []struct {
		key string
		v   *float64
		to  *float64
	}{{"requests_per_minute", raw.RequestsPerMinute, &l.RequestsPerMinute}, {"tokens_per_minute", raw.TokensPerMinute, &l.TokensPerMinute}} {
		if f.v == nil {
			continue
		}
		if !(*f.v > 0) || math.IsInf(*f.v, 0) {
			return p.errAt(at+"."+f.key, "%s must be a positive number, got %v", f.key, *f.v)
		}
		*f.to = *f.v
	}
	if l == (provider.RateLimit{}) {
		return p.errAt(at, "give requests_per_minute, tokens_per_minute or both")
	}
	p.s.RateLimits[name] = l
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
		l.MaxSteps = int(*raw.MaxSteps)
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
	if raw.ProviderTimeout != "" {
		d, err := time.ParseDuration(raw.ProviderTimeout)
		if err != nil || d <= 0 {
			return p.errAt("limits.provider_timeout", "not a positive duration: %q (e.g. 90s; the default is %s)", raw.ProviderTimeout, DefaultProviderTimeout)
		}
		l.ProviderTimeout = d
	}
	if raw.ProviderRetries != nil {
		if *raw.ProviderRetries < 0 {
			return p.errAt("limits.provider_retries", "provider_retries must not be negative, got %d", *raw.ProviderRetries)
		}
		n := int(*raw.ProviderRetries)
		l.ProviderRetries = &n
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

// cases reads the cases: a list whose entries are cases or datasets
// ({file: cases.jsonl, …template}), or one dataset alone. Each entry's
// problems are recorded and the others still read.
func (p *parser) cases(raw node) {
	var items []ast.Node
	switch n := raw.n.(type) {
	case nil, *ast.NullNode:
	case *ast.SequenceNode:
		items = n.Values
	case ast.MapNode:
		if !hasKey(n, "file") {
			p.fail(p.errAt("cases", "want a list of cases, or a dataset {file: cases.jsonl}"))
			return
		}
		items = []ast.Node{raw.n}
	default:
		p.fail(p.errAt("cases", "want a list of cases, got %s", yamlx.Kind(n)))
		return
	}
	if len(items) == 0 {
		p.fail(p.errAt("cases", "missing key cases: a suite needs at least one case"))
		return
	}
	p.caseIDs = map[string]string{}
	for i, item := range items {
		at := fmt.Sprintf("cases[%d]", i)
		if _, isSeq := raw.n.(*ast.SequenceNode); !isSeq {
			at = "cases"
		}
		if m, ok := item.(ast.MapNode); ok && hasKey(m, "file") {
			p.dataset(item, at, i)
			continue
		}
		var rc rawCase
		if err := p.decodeCase(item, &rc); err != nil {
			p.fail(err)
			continue
		}
		c, err := p.caseFrom(&rc, at, i)
		if err != nil {
			p.fail(err)
			if _, taken := p.caseIDs[rc.ID]; rc.ID != "" && !taken {
				// A later case with the same id is still a duplicate.
				p.caseIDs[rc.ID] = at
			}
			continue
		}
		c.Source = fmt.Sprintf("%s:%d", p.s.Path, p.errAt(at, "").(*yamlx.Error).Line)
		p.addCase(c, at, func(prev string) error {
			return p.errAt(sub(at, "id"), "duplicate case id %q (also %s)", c.ID, prev)
		})
	}
}

// addCase adds c unless its id is taken, which dup reports; where names c
// in a later duplicate's error.
func (p *parser) addCase(c *Case, where string, dup func(prev string) error) {
	if prev, taken := p.caseIDs[c.ID]; taken {
		p.fail(dup(prev))
		return
	}
	p.caseIDs[c.ID] = where
	p.s.Cases = append(p.s.Cases, c)
}

// hasKey reports whether a mapping has the key.
func hasKey(m ast.MapNode, key string) bool {
	it := m.MapRange()
	for it.Next() {
		if it.Key().GetToken().Value == key {
			return true
		}
	}
	return false
}

// sub joins a key path and a key below it; at "" is the document's root.
func sub(at, key string) string {
	if at == "" || key == "" {
		return at + key
	}
	return at + "." + key
}

// caseFrom checks one case decoded at key at and builds it; index is its
// entry in the suite's cases.
func (p *parser) caseFrom(rc *rawCase, at string, index int) (*Case, error) {
	c := &Case{index: index, Files: rc.Files, Tags: slices.Clone(rc.Tags), AllowUnused: p.s.AllowUnused}
	if rc.AllowUnused != nil {
		c.AllowUnused = *rc.AllowUnused
	}
	if rc.ID == "" {
		return nil, p.errAt(at, "a case needs an id")
	}
	if !safeName().MatchString(rc.ID) {
		return nil, p.errAt(sub(at, "id"), "case id %q may only hold letters, digits, '.', '_' and '-' (it becomes part of file names)", rc.ID)
	}
	c.ID = rc.ID
	switch n := rc.Input.n.(type) {
	case *ast.StringNode:
		c.Input = n.Value
	case *ast.LiteralNode:
		c.Input = n.Value.Value
	case nil:
		return nil, p.errAt(at, "case %s needs an input (the user's message)", rc.ID)
	default:
		return nil, p.errAt(sub(at, "input"), "want the user's message as a string, got %s", yamlx.Kind(n))
	}
	if strings.TrimSpace(c.Input) == "" {
		return nil, p.errAt(sub(at, "input"), "the input is empty")
	}
	for _, path := range slices.Sorted(maps.Keys(rc.Files)) {
		if !strings.HasPrefix(path, "/") {
			return nil, p.errAt(sub(at, "files"), "file path %q must be absolute (start with /)", path)
		}
		if r, bad := yamlx.BidiControl(path); bad {
			return nil, p.errAt(sub(at, "files"), "file path %q holds the bidirectional control character U+%04X, which makes it read differently from what it is", path, r)
		}
		if rest, ok := strings.CutPrefix(rc.Files[path], rubrics.IncludePrefix); ok {
			content, err := p.include(rest)
			if err != nil {
				return nil, p.errAt(sub(sub(at, "files"), path), "%v", err)
			}
			c.Files[path] = content
		}
	}
	var err error
	if c.History, err = p.history(rc.Messages, sub(at, "messages")); err != nil {
		return nil, err
	}
	if rc.Agent.present() {
		if err := p.caseAgent(c, rc.Agent, sub(at, "agent")); err != nil {
			return nil, err
		}
	}
	if c.Tools, err = p.tools(rc.Tools, sub(at, "tools")); err != nil {
		return nil, err
	}
	if err := p.rubric(c, rc.Rubric, sub(at, "rubric")); err != nil {
		return nil, err
	}
	for _, list := range []struct {
		key string
		n   node
	}{{"checks", rc.Checks}, {"expect", rc.Expect}} {
		if !list.n.present() {
			continue
		}
		if _, isNull := list.n.n.(*ast.NullNode); isNull {
			continue
		}
		checks, err := rubrics.DecodeChecksOpts(p.doc.File, list.n.n, sub(at, list.key), rubrics.DecodeOptions{
			Custom: p.reg.checkDecoders(p.doc), Include: p.include, Dir: p.s.Dir, NonGating: list.key == "expect",
		})
		if err != nil {
			return nil, err
		}
		c.Checks = append(c.Checks, checks...)
	}
	c.Epochs = p.s.Epochs
	if rc.Epochs != nil {
		if *rc.Epochs < 1 {
			return nil, p.errAt(sub(at, "epochs"), "epochs must be at least 1, got %d", *rc.Epochs)
		}
		c.Epochs = int(*rc.Epochs)
	}
	for j, m := range rc.Models {
		for spec, alias := range p.s.Aliases {
			if alias == m {
				m = spec // a case may name a model by its alias
			}
		}
		if !p.broken["models"] && !slices.Contains(p.s.Models, m) {
			return nil, p.errAt(fmt.Sprintf("%s[%d]", sub(at, "models"), j), "model %s is not one of the suite's models (%s)", m, strings.Join(p.s.Models, ", "))
		}
		c.Models = append(c.Models, m)
	}
	if rc.Cassette != "" {
		cells := len(c.models(p.s)) * len(p.s.Profiles) * c.Epochs
		if cells != 1 {
			return nil, p.errAt(sub(at, "cassette"), "a case with its own cassette must have exactly one cell (one model, one profile, one epoch); it has %d", cells)
		}
		c.Cassette = p.resolve(rc.Cassette)
	}
	return c, nil
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
			return p.s.caseErr(needs, "rubric", "case %s has a rubric but the suite has no grader: add grader: {model: provider:model}", needs.ID)
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
		g.MaxIterations = int(*raw.MaxIterations)
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
