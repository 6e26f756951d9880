package catalog

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/internal/yamlx"
)

//go:embed models.yaml
var embedded []byte

// Default reads embeddedFile (models_gen.go), models.yaml as a Go value
// that the compiler lays out, so that a command that sizes or prices a
// model only indexes it at start-up instead of decoding a file (0.5 ms).
// TestModelsGoIsCurrent fails when the two drift apart.
//
//go:generate go test -run ^TestModelsGoIsCurrent$ -update

// Errors returned by Lookup and Cost. Both are wrapped with the spec and the
// catalog version, so callers branch with errors.Is.
var (
	// ErrUnknownModel: the catalog has no entry for the model.
	ErrUnknownModel = errors.New("catalog: unknown model")
	// ErrUnpriced: the catalog knows the model but has no price for it.
	ErrUnpriced = errors.New("catalog: model has no price")
)

// Price is a list price in USD per million tokens.
type Price struct {
	Input      float64 `yaml:"input" json:"input"`
	Output     float64 `yaml:"output" json:"output"`
	CacheRead  float64 `yaml:"cache_read" json:"cache_read"`
	CacheWrite float64 `yaml:"cache_write" json:"cache_write"`
}

// Model is one catalog entry.
type Model struct {
	Provider string   `yaml:"provider" json:"provider"`
	ID       string   `yaml:"id" json:"id"`
	Aliases  []string `yaml:"aliases,omitempty" json:"aliases,omitempty"`
	// ContextWindow is the most tokens (input plus output) a call may use; 0 if unknown.
	ContextWindow int `yaml:"context_window" json:"context_window"`
	// MaxOutput is the most tokens one answer may have; 0 if unknown.
	MaxOutput int `yaml:"max_output,omitempty" json:"max_output,omitempty"`
	// Price is nil when the catalog does not price the model.
	Price *Price `yaml:"price,omitempty" json:"price,omitempty"`
	// Verified is false when the price rests on a single or conflicting source.
	Verified bool `yaml:"verified,omitempty" json:"verified,omitempty"`
	// Source says where the figures come from.
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
}

// Spec returns the model's canonical provider:model spec.
func (m Model) Spec() string { return m.Provider + ":" + m.ID }

// Cost is what a usage costs under one catalog entry, in USD.
type Cost struct {
	// Model is the canonical spec the usage was priced under.
	Model string `json:"model"`
	// USD is the total; the other fields split it by token kind.
	USD        float64 `json:"usd"`
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
	// Verified is false when the price is an estimate (see Model.Verified).
	Verified bool `json:"verified"`
	// SelfHosted is true for models run on the user's own hardware, which
	// cost nothing per token.
	SelfHosted bool `json:"self_hosted,omitempty"`
	// Version is the catalog version that priced the usage.
	Version string `json:"version"`
}

// Catalog is a parsed model table. It is immutable and safe for concurrent use.
type Catalog struct {
	version    string
	currency   string
	models     []Model
	index      map[string]int // provider:id and provider:alias → models index
	selfHosted map[string]bool
	// declaredPrice marks entries whose price a suite or agent file
	// declared (see With): they are priced even on self-hosted providers.
	declaredPrice map[int]bool
	providers     map[string]string // provider alias → the provider whose models it reaches
}

type file struct {
	Version    string   `yaml:"version" json:"version"`
	Currency   string   `yaml:"currency" json:"currency"`
	SelfHosted []string `yaml:"self_hosted" json:"self_hosted,omitempty"`
	// ProviderAliases name providers that reach another provider's models
	// under their own spec prefix, e.g. google_genai: for gemini:.
	ProviderAliases map[string]string `yaml:"provider_aliases" json:"provider_aliases,omitempty"`
	Models          []Model           `yaml:"models" json:"models"`
}

var defaultCatalog = sync.OnceValues(decodeEmbedded)

func decodeEmbedded() (*Catalog, error) {
	return build("models.yaml", &embeddedFile, func(string) int { return 0 })
}

// Default returns the catalog embedded in dageval. The embedded file is
// checked by the package tests, so an error here means a broken build.
func Default() *Catalog {
	c, err := defaultCatalog()
	if err != nil {
		panic(err)
	}
	return c
}

// Version is the version (a date) of the embedded catalog.
func Version() string { return Default().Version() }

// Lookup finds a model in the embedded catalog; see Catalog.Lookup.
func Lookup(spec string) (Model, error) { return Default().Lookup(spec) }

// ContextWindow returns a model's context window in tokens from the embedded
// catalog, and false when the catalog does not know it. It has the shape of
// middleware.SummarizationOptions.ContextWindow, so summarization can trigger
// at a fraction of the window.
func ContextWindow(id llm.Identity) (int, bool) { return Default().ContextWindow(id) }

// CostOf prices usage with the embedded catalog; see Catalog.Cost.
func CostOf(spec string, u llm.Usage) (Cost, error) { return Default().Cost(spec, u) }

// Parse reads a catalog file. Errors name the file, the line and the field.
// The file goes through the yamlx gate (size, nesting depth, alias
// expansion) like every other YAML a user brings: a catalog may come with a
// pull request, and 40 000 nested brackets would otherwise take gigabytes
// in go-yaml's parser before any error.
func Parse(name string, data []byte) (*Catalog, error) {
	af, err := yamlx.ParseFile(name, data)
	if err != nil {
		return nil, err
	}
	var f file
	if len(af.Docs) > 0 && af.Docs[0].Body != nil {
		if err := yaml.NodeToValue(af.Docs[0].Body, &f, yaml.Strict()); err != nil {
			return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, false))
		}
	}
	return build(name, &f, lineFinder(af))
}

// build checks a decoded catalog file and indexes it; lineOf gives the
// line of a YAML path for errors.
func build(name string, f *file, lineOf func(path string) int) (*Catalog, error) {
	if f.Version == "" {
		return nil, fmt.Errorf("%s: version is required (the date the prices were checked)", name)
	}
	if f.Currency != "USD" {
		return nil, fmt.Errorf("%s:%d: currency %q is not supported; prices must be in USD", name, lineOf("$.currency"), f.Currency)
	}
	c := &Catalog{version: f.Version, currency: f.Currency, index: map[string]int{}, selfHosted: map[string]bool{}, providers: map[string]string{}}
	for alias, target := range f.ProviderAliases {
		if alias == "" || target == "" || alias == target {
			return nil, fmt.Errorf("%s:%d: provider_aliases: %q → %q must name two different providers", name, lineOf("$.provider_aliases"), alias, target)
		}
		c.providers[alias] = target
	}
	for _, p := range f.SelfHosted {
		c.selfHosted[p] = true
	}
	for i, m := range f.Models {
		at := func(field string) string {
			path := fmt.Sprintf("$.models[%d]", i)
			if field != "" {
				path += "." + field
			}
			return fmt.Sprintf("%s:%d: models[%d]", name, lineOf(path), i)
		}
		if m.Provider == "" || m.ID == "" {
			return nil, fmt.Errorf("%s: provider and id are required", at(""))
		}
		if m.ContextWindow < 0 || m.MaxOutput < 0 {
			return nil, fmt.Errorf("%s (%s): context_window and max_output must not be negative", at("context_window"), m.Spec())
		}
		if p := m.Price; p != nil {
			for _, f := range []struct {
				field string
				v     float64
			}{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}} {
				field, v := f.field, f.v
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s (%s): price.%s must be a non-negative number, got %v", at("price."+field), m.Spec(), field, v)
				}
			}
		}
		for _, key := range append([]string{m.ID}, m.Aliases...) {
			k := m.Provider + ":" + key
			if j, dup := c.index[k]; dup {
				return nil, fmt.Errorf("%s: %s is already listed by models[%d]", at(""), k, j)
			}
			c.index[k] = i
		}
		c.models = append(c.models, m)
	}
	return c, nil
}

// lineFinder returns a function giving the line of a YAML path in the
// parsed file, 0 if unknown.
func lineFinder(f *ast.File) func(path string) int {
	return func(path string) int {
		p, perr := yaml.PathString(path)
		if perr != nil {
			return 0
		}
		n, nerr := p.FilterFile(f)
		if nerr != nil || n == nil || n.GetToken() == nil {
			return 0
		}
		return n.GetToken().Position.Line
	}
}

// Version is the catalog's version, the date its figures were checked.
func (c *Catalog) Version() string { return c.version }

// Models returns every entry in file order.
func (c *Catalog) Models() []Model { return slices.Clone(c.models) }

// datedSuffix matches the snapshot dates providers append to model ids
// ("-20250929", "-2024-08-06").
var datedSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`) })

// Lookup finds the entry for a provider:model spec: by id, then by alias,
// then by the id without a snapshot date suffix; a provider alias
// (google_genai for gemini) finds the other provider's entries. A model that is not listed
// is an error wrapping ErrUnknownModel, never a zero-valued entry.
func (c *Catalog) Lookup(spec string) (Model, error) {
	s, err := llm.ParseSpec(spec)
	if err != nil {
		return Model{}, fmt.Errorf("catalog: %w", err)
	}
	if i, ok := c.find(s); ok {
		return cloneModel(c.models[i]), nil
	}
	return Model{}, fmt.Errorf("%w: %s is not in model catalog %s", ErrUnknownModel, spec, c.version)
}

// find looks a spec up under its own provider, then under the provider
// its provider aliases, so a model declared under the alias wins.
func (c *Catalog) find(s llm.Spec) (int, bool) {
	if i, ok := c.findUnder(s.Provider, s.Model); ok {
		return i, true
	}
	if target, ok := c.providers[s.Provider]; ok {
		return c.findUnder(target, s.Model)
	}
	return 0, false
}

func (c *Catalog) findUnder(provider, model string) (int, bool) {
	if i, ok := c.index[provider+":"+model]; ok {
		return i, true
	}
	if provider == "bedrock" {
		if base := bedrockBase(model); base != model {
			if i, ok := c.index[provider+":"+base]; ok {
				return i, true
			}
		}
	}
	if base := datedSuffix().ReplaceAllString(model, ""); base != model {
		if i, ok := c.index[provider+":"+base]; ok {
			return i, true
		}
	}
	return 0, false
}

// Bedrock names one model many ways: an ARN ending in a model or
// inference-profile id, and inference profiles prefixed by a geography.
var (
	bedrockARN = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^arn:aws[a-z-]*:bedrock:[^:]*:[0-9]*:(?:foundation-model|inference-profile|application-inference-profile)/`)
	})
	bedrockGeo = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:us|us-gov|eu|apac|au|jp|ca|amer)\.`) })
)

// bedrockBase is the id a Bedrock model is priced under: without an ARN
// prefix, and without a geographic profile's prefix, since geographic
// profiles cost what the in-region model does. The global profile's prefix
// stays: it is priced apart.
func bedrockBase(id string) string {
	return bedrockGeo().ReplaceAllString(bedrockARN().ReplaceAllString(id, ""), "")
}

func cloneModel(m Model) Model {
	m.Aliases = slices.Clone(m.Aliases)
	if m.Price != nil {
		p := *m.Price
		m.Price = &p
	}
	return m
}

// Cost prices one or more calls' usage. Models of self-hosted providers
// (ollama, vllm, llamacpp) cost 0 with SelfHosted set. An unknown model is an
// error wrapping ErrUnknownModel and a listed model without a price one
// wrapping ErrUnpriced; neither is ever reported as a zero cost.
func (c *Catalog) Cost(spec string, u llm.Usage) (Cost, error) {
	s, err := llm.ParseSpec(spec)
	if err != nil {
		return Cost{}, fmt.Errorf("catalog: %w", err)
	}
	i, ok := c.find(s)
	if c.selfHosted[s.Provider] && !(ok && c.declaredPrice[i]) {
		name := spec
		if ok {
			name = c.models[i].Spec()
		}
		return Cost{Model: name, Verified: true, SelfHosted: true, Version: c.version}, nil
	}
	if !ok {
		return Cost{}, fmt.Errorf("%w: %s is not in model catalog %s, so its cost is unknown", ErrUnknownModel, spec, c.version)
	}
	m := c.models[i]
	if m.Price == nil {
		return Cost{}, fmt.Errorf("%w: %s is listed in model catalog %s without a price", ErrUnpriced, m.Spec(), c.version)
	}
	p := m.Price
	cost := Cost{
		Model:      m.Spec(),
		Input:      perMillion(u.InputTokens, p.Input),
		Output:     perMillion(u.OutputTokens, p.Output),
		CacheRead:  perMillion(u.CacheReadTokens, p.CacheRead),
		CacheWrite: perMillion(u.CacheWriteTokens, p.CacheWrite),
		Verified:   m.Verified,
		Version:    c.version,
	}
	cost.USD = cost.Input + cost.Output + cost.CacheRead + cost.CacheWrite
	return cost, nil
}

func perMillion(tokens int, usdPerMillion float64) float64 {
	return float64(tokens) * usdPerMillion / 1e6
}

// String renders the cost for humans, e.g. "$0.001335" or "$0.0200 (unverified price)".
func (c Cost) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "$%.6f", c.USD)
	var notes []string
	if c.SelfHosted {
		notes = append(notes, "self-hosted")
	} else if !c.Verified {
		notes = append(notes, "unverified price")
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	return b.String()
}
