package catalog

import (
	"fmt"
	"math"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/dageval/dageval/harness/llm"
)

// Declaration is what a suite or an agent file says about a model: the
// facts of a model the catalog does not list (a local model, one released
// after the catalog's version), or figures that replace the listed ones.
// Summarization triggers on the context window and costs use the prices,
// so a model without them is summarised at a fixed token count and its
// cost is unknown.
type Declaration struct {
	// Spec is the model, provider:model.
	Spec string `yaml:"spec" json:"spec"`
	// ContextWindow is the most tokens a call may use; 0 keeps what the
	// catalog lists.
	ContextWindow int `yaml:"context_window" json:"context_window,omitempty"`
	// MaxOutput is the most tokens one answer may have; 0 keeps the listed value.
	MaxOutput int `yaml:"max_output" json:"max_output,omitempty"`
	// Prices are the model's prices; nil keeps the listed ones.
	Prices *Prices `yaml:"prices" json:"prices,omitempty"`
}

// Prices are USD per million tokens. The keys carry their unit because a
// user writing a price in a suite should not have to look it up.
type Prices struct {
	InputPerMTok      float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok     float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
	CacheReadPerMTok  float64 `yaml:"cache_read_per_mtok" json:"cache_read_per_mtok,omitempty"`
	CacheWritePerMTok float64 `yaml:"cache_write_per_mtok" json:"cache_write_per_mtok,omitempty"`
}

// DeclarationError is a problem with one key of a Declaration ("" for the
// declaration as a whole), so that file readers can position it.
type DeclarationError struct {
	Key string
	Msg string
}

func (e *DeclarationError) Error() string {
	if e.Key == "" {
		return e.Msg
	}
	return e.Key + ": " + e.Msg
}

// Validate checks a declaration; its errors are *DeclarationError.
func (d Declaration) Validate() error {
	bad := func(key, format string, args ...any) error {
		return &DeclarationError{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if _, err := llm.ParseSpec(d.Spec); err != nil {
		return bad("spec", "%v", err)
	}
	if d.ContextWindow < 0 {
		return bad("context_window", "must not be negative, got %d", d.ContextWindow)
	}
	if d.MaxOutput < 0 {
		return bad("max_output", "must not be negative, got %d", d.MaxOutput)
	}
	if d.ContextWindow > 0 && d.MaxOutput > d.ContextWindow {
		return bad("max_output", "%d is more than the context window (%d)", d.MaxOutput, d.ContextWindow)
	}
	if p := d.Prices; p != nil {
		for _, f := range []struct {
			key string
			v   float64
		}{{"input_per_mtok", p.InputPerMTok}, {"output_per_mtok", p.OutputPerMTok}, {"cache_read_per_mtok", p.CacheReadPerMTok}, {"cache_write_per_mtok", p.CacheWritePerMTok}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return bad("prices."+f.key, "must be a non-negative number of US dollars per million tokens, got %v", f.v)
			}
		}
	}
	if d.ContextWindow == 0 && d.MaxOutput == 0 && d.Prices == nil {
		return bad("", "the declaration gives no facts: set context_window, max_output or prices")
	}
	return nil
}

// With returns a catalog that also knows the declared models; c is not
// changed. A declaration of a listed model (by id, alias or dated id)
// replaces the figures it gives and keeps the others; later declarations of
// the same model win over earlier ones. Declared prices are used even for
// self-hosted providers, whose calls otherwise cost nothing.
func (c *Catalog) With(decls ...Declaration) (*Catalog, error) {
	if len(decls) == 0 {
		return c, nil
	}
	n := &Catalog{version: c.version, currency: c.currency, models: make([]Model, len(c.models)), index: make(map[string]int, len(c.index)+len(decls)),
		selfHosted: c.selfHosted, declaredPrice: map[int]bool{}, providers: c.providers}
	for i, m := range c.models {
		n.models[i] = cloneModel(m)
	}
	for k, v := range c.index {
		n.index[k] = v
	}
	for k, v := range c.declaredPrice {
		n.declaredPrice[k] = v
	}
	for _, d := range decls {
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("catalog: model %s: %w", d.Spec, err)
		}
		s, _ := llm.ParseSpec(d.Spec)
		i, ok := n.find(s)
		if !ok {
			i = len(n.models)
			n.models = append(n.models, Model{Provider: s.Provider, ID: s.Model, Verified: true, Source: "declared"})
			n.index[s.Provider+":"+s.Model] = i
		}
		m := &n.models[i]
		if d.ContextWindow > 0 {
			m.ContextWindow = d.ContextWindow
		}
		if d.MaxOutput > 0 {
			m.MaxOutput = d.MaxOutput
		}
		if p := d.Prices; p != nil {
			m.Price = &Price{Input: p.InputPerMTok, Output: p.OutputPerMTok, CacheRead: p.CacheReadPerMTok, CacheWrite: p.CacheWritePerMTok}
			// The user's own figures are as good as the user says.
			m.Verified = true
			n.declaredPrice[i] = true
		}
	}
	return n, nil
}

// ContextWindow returns a model's context window in tokens, and false when
// the catalog does not know it. It has the shape of
// middleware.SummarizationOptions.ContextWindow.
func (c *Catalog) ContextWindow(id llm.Identity) (int, bool) {
	m, err := c.Lookup(id.String())
	if err != nil || m.ContextWindow <= 0 {
		return 0, false
	}
	return m.ContextWindow, true
}

// Suggest returns the listed spec closest to a spec the catalog does not
// know ("openai:gpt5" → "openai:gpt-5"), by edit distance over ids and
// aliases, for "did you mean" messages. It returns false when nothing is
// close enough to be a likely typo.
func (c *Catalog) Suggest(spec string) (string, bool) {
	s, err := llm.ParseSpec(spec)
	if err != nil {
		return "", false
	}
	want := strings.ToLower(s.Provider + ":" + s.Model)
	best, bestD := "", math.MaxInt
	for _, m := range c.models {
		for _, key := range append([]string{m.ID}, m.Aliases...) {
			cand := m.Provider + ":" + key
			d := levenshtein.ComputeDistance(want, strings.ToLower(cand))
			if d < bestD {
				best, bestD = cand, d
			}
		}
	}
	// A typo changes a few characters; anything further is another model.
	if best == "" || bestD == 0 || bestD > 3 || bestD*3 > len(s.Model) {
		return "", false
	}
	return best, true
}

// Knows reports whether the catalog lists the model (by id, alias or dated id).
func (c *Catalog) Knows(spec string) bool {
	_, err := c.Lookup(spec)
	return err == nil
}
