package evals

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/internal/yamlx"
	"github.com/dageval/dageval/rubrics"
)

// Validate checks what Load cannot check alone, without running anything:
// the agent factory or Go tools the suite names are registered, every tool
// the agent declares has a behaviour in every case (and every behaviour
// names a declared tool), the agent assembles with every model and profile,
// in replay mode every cell's cassette exists and parses (a corrupt
// cassette is reported with its file and line), and in record mode every
// model's provider has what a call needs (its API key, the variables its
// base_url and headers name), so that a recording that cannot reach its
// provider stops before it touches a cassette. Options supply the
// mode, filter, epochs and the Go tools and factories of the run. Every
// problem found is reported, sorted by file and line.
func (s *Suite) Validate(ctx context.Context, o Options) error {
	r, err := s.newRunner(o)
	if err != nil {
		return err
	}
	cells, err := s.Cells(o.Filter, o.Epochs)
	if err != nil {
		return err
	}
	return joinErrors(append(r.validate(ctx, cells, true), r.parseCassettes(cells)...))
}

// ValidateFile loads the suite at path and validates it, reporting every
// problem at once: those of the suite file, its agent, profile, rubric and
// dataset files, and those Validate finds in the parts that loaded. The
// suite is returned when it is valid.
func ValidateFile(ctx context.Context, path string, o Options) (*Suite, error) {
	return (*Registry)(nil).ValidateFile(ctx, path, o)
}

// ValidateFile is the package-level ValidateFile with the registry's
// checks, tools and agent factories.
func (reg *Registry) ValidateFile(ctx context.Context, path string, o Options) (*Suite, error) {
	s, errs := loadSuite(path, reg)
	if s == nil {
		return nil, joinErrors(errs)
	}
	loaded := len(errs) == 0
	if r, err := s.newRunner(o); err != nil {
		errs = append(errs, err)
	} else if !loaded {
		errs = append(errs, r.validate(ctx, nil, false)...)
	} else if cells, err := s.Cells(o.Filter, o.Epochs); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, r.validate(ctx, cells, true)...)
		errs = append(errs, r.parseCassettes(cells)...)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return s, nil
}

// errAt reports a problem at a key of the suite file.
func (s *Suite) errAt(path, format string, args ...any) error {
	if s.doc == nil {
		return fmt.Errorf("%s: %s: %s", s.Path, path, fmt.Sprintf(format, args...))
	}
	e := s.doc.Errorf(path, format, args...)
	if e.Line == 0 {
		e.Line, e.Column = 1, 1
	}
	return e
}

// caseErr reports a problem with a case at a key below it ("" for the case
// itself): in the suite file for an inline case, at its row for a case
// from a dataset.
func (s *Suite) caseErr(c *Case, key, format string, args ...any) error {
	if c.row != nil {
		return &yamlx.Error{File: c.row.File, Line: c.row.Line, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	return s.errAt(sub(fmt.Sprintf("cases[%d]", c.index), key), format, args...)
}

// validate returns every problem it finds. loaded says the suite loaded
// without problems; when it did not, the agent is not assembled nor the
// cassettes looked for, since both follow from the parts that are broken.
func (r *runner) validate(ctx context.Context, cells []Cell, loaded bool) []error {
	s := r.s
	var errs []error
	if s.Agent.Factory != "" {
		if _, ok := r.o.agentFactory(s.Agent.Factory); !ok {
			errs = append(errs, s.errAt("agent.factory", "no agent factory is registered as %q (%s; register one on an evals.Registry, or with cli.WithAgent in a program built on cli.Main)",
				s.Agent.Factory, r.o.registered((*Registry).Agents, slices.Sorted(maps.Keys(r.o.Agents)))))
		}
	}
	toolErrs := r.validateTools()
	errs = append(errs, toolErrs...)
	if !loaded {
		return errs
	}
	if len(toolErrs) == 0 {
		// The agent cannot assemble without its tools' behaviours, and
		// saying so again for every model and profile would bury these.
		errs = append(errs, r.validateAssembly(ctx, cells)...)
	}
	if r.mode == recorder.ModeReplay {
		if err := r.validateCassettes(cells); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (r *runner) validateTools() []error {
	s := r.s
	var errs []error
	checkGo := func(b *ToolBehavior) {
		if b.Go == "" {
			return
		}
		if _, ok := r.o.goTool(b.Go); !ok {
			errs = append(errs, s.errAt(b.at+".go", "no Go tool is registered as %q (%s; register one on an evals.Registry, or with cli.WithTool in a program built on cli.Main)",
				b.Go, r.o.registered((*Registry).Tools, slices.Sorted(maps.Keys(r.o.Tools)))))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		checkGo(s.Tools[name])
	}
	for _, c := range s.Cases {
		for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
			checkGo(c.Tools[name])
		}
	}
	if s.Agent.Spec == nil {
		return errs // a factory's tools are only known when it runs
	}
	declaredBy := func(c *Case) []string {
		var out []string
		if af := s.agentOf(c); af != nil {
			for _, d := range af.Tools {
				out = append(out, d.Name)
			}
		}
		return out
	}
	listOf := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	// A suite-wide behaviour may be for a tool only some cases' agents declare.
	anyDeclared := declaredBy(nil)
	for _, c := range s.Cases {
		for _, n := range declaredBy(c) {
			if !slices.Contains(anyDeclared, n) {
				anyDeclared = append(anyDeclared, n)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		if !slices.Contains(anyDeclared, name) {
			errs = append(errs, s.errAt(s.Tools[name].at, "the agent declares no tool %q%s (declared tools: %s)", name, didYouMean(name, anyDeclared), listOf(anyDeclared)))
		}
	}
	for _, c := range s.Cases {
		declared := declaredBy(c)
		for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
			if !slices.Contains(declared, name) {
				whose := "the agent"
				if c.Agent != nil {
					whose = "the agent of case " + c.ID
				}
				errs = append(errs, r.toolErr(c, c.Tools[name].at, "%s declares no tool %q%s (declared tools: %s)", whose, name, didYouMean(name, declared), listOf(declared)))
			}
		}
		for _, name := range declared {
			if s.behaviour(c, name) != nil || s.broken["tools"] || goDeclared(s.agentOf(c), name) {
				continue
			}
			if _, ok := r.o.goTool(name); ok {
				continue
			}
			key := ""
			if len(c.Tools) > 0 {
				key = "tools"
			}
			errs = append(errs, s.caseErr(c, key, "tool %s, declared by the agent, has no behaviour in case %s: give it one under tools: (mock, exec or go) in the suite or the case", name, c.ID))
		}
	}
	return errs
}

// goDeclared reports whether the agent file gives the tool a Go behaviour
// itself (tools: [{go: name}]), which needs none from the suite.
func goDeclared(af *agentfile.File, name string) bool {
	if af == nil {
		return false
	}
	for _, d := range af.Tools {
		if d.Name == name {
			return d.Impl() != nil
		}
	}
	return false
}

// didYouMean is ", did you mean NAME?" for the known name nearest to a
// misspelled one, or "" when none is near: a typo changes a few characters.
func didYouMean(name string, known []string) string {
	best, bestD := "", math.MaxInt
	for _, k := range known {
		if d := levenshtein.ComputeDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || bestD == 0 || bestD > 3 || bestD*3 > len(name) {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

// sentence ends a message part with a full stop.
func sentence(s string) string {
	if s == "" {
		return "."
	}
	return s
}

// validateToolNames checks that every tool a case's checks name is one the
// case's assembled agent has, in any of its stacks: a check of a tool the
// agent lacks says nothing (tool_not_called: serach always passes).
func (r *runner) validateToolNames(c *Case, tools []string) []error {
	var errs []error
	for _, ch := range c.Checks {
		for _, ref := range rubrics.ToolRefsOf(ch) {
			if slices.Contains(tools, ref.Name) {
				continue
			}
			errs = append(errs, r.toolErr(c, ref.Key, "the agent of case %s has no tool %q%s A check of a tool the agent lacks judges nothing (its tools: %s)",
				c.ID, ref.Name, sentence(didYouMean(ref.Name, tools)), strings.Join(tools, ", ")))
		}
	}
	return errs
}

// toolErr reports a problem with a case's tool behaviour, whose key (at) is
// a suite key for an inline case and a key of the row for a dataset's.
func (r *runner) toolErr(c *Case, at, format string, args ...any) error {
	if c.row != nil {
		return &yamlx.Error{File: c.row.File, Line: c.row.Line, Key: at, Msg: fmt.Sprintf(format, args...)}
	}
	return r.s.errAt(at, format, args...)
}

// validateAssembly assembles the agent once per model × profile (with the
// grader when the suite has one), so that a profile excluding a middleware
// that is not there, or a model the resolver cannot build, stops the run
// before any cell does. Assembling calls no model.
func (r *runner) validateAssembly(ctx context.Context, cells []Cell) []error {
	s := r.s
	if s.Agent.Spec == nil {
		return nil // a factory is only called for real cells
	}
	cfg := r.providerConfig()
	cfg.HTTPClient, cfg.Replay = &http.Client{Transport: noCalls{}}, r.mode == recorder.ModeReplay
	built, err := r.newResolver(cfg)
	if err != nil {
		return []error{err}
	}
	var errs []error
	var models []resolvedModel
	resolve := func(spec string) (llm.ChatModel, error) {
		m, err := built(spec)
		if err == nil {
			models = append(models, resolvedModel{spec, m})
		}
		return m, err
	}
	var grader *middleware.RubricMiddleware
	if s.Grader != nil {
		gm, err := resolve(s.Grader.Model)
		if err != nil {
			return []error{s.errAt("grader.model", "%v", err)}
		}
		if grader, err = r.newGrader(gm); err != nil {
			return []error{s.errAt("grader", "%v", err)}
		}
	}
	// The agent is assembled once per model × profile × agent (the suite's,
	// or a case's override of it), and each case's checks are held to the
	// tools its agent has under some model and profile.
	type key struct {
		model, profile string
		agent          any
	}
	done := map[key][]string{}
	toolsOf := map[*Case][]string{}
	var order []*Case
	for _, c := range cells {
		var agentKey any = s.Agent.Spec
		if c.CaseDef.Agent != nil {
			agentKey = c.CaseDef
		}
		k := key{c.Model, c.Profile, agentKey}
		if _, seen := toolsOf[c.CaseDef]; !seen {
			order = append(order, c.CaseDef)
			toolsOf[c.CaseDef] = []string{}
		}
		if tools, ok := done[k]; ok {
			toolsOf[c.CaseDef] = union(toolsOf[c.CaseDef], tools)
			continue
		}
		done[k] = nil
		b, err := r.buildAgent(ctx, c, resolve, grader)
		if err == nil && b.graphs != nil {
			b.graphs.Close() // assembled to be checked, never run
		}
		if err == nil {
			// An agent that cannot be described without running (its
			// backend needs starting) is not held to its tools here.
			if tools, derr := assembledTools(ctx, b); derr == nil {
				done[k] = tools
				toolsOf[c.CaseDef] = union(toolsOf[c.CaseDef], tools)
			}
		}
		if err != nil {
			var ye *yamlx.Error
			if errors.As(err, &ye) {
				errs = append(errs, err)
				continue
			}
			at := "agent"
			for j, p := range s.Profiles {
				if p.Name == c.Profile && p.Config != nil {
					at = fmt.Sprintf("profiles[%d]", j)
				}
			}
			if c.CaseDef.Agent != nil {
				errs = append(errs, s.caseErr(c.CaseDef, "agent", "the agent of case %s does not assemble with model %s and profile %s: %v", c.CaseDef.ID, c.Model, c.Profile, err))
				continue
			}
			errs = append(errs, s.errAt(at, "the agent does not assemble with model %s and profile %s: %v", c.Model, c.Profile, err))
		}
	}
	for _, c := range order {
		if tools := toolsOf[c]; len(tools) > 0 {
			errs = append(errs, r.validateToolNames(c, tools)...)
		}
	}
	if r.mode == recorder.ModeRecord {
		errs = append(errs, r.validateCredentials(models)...)
	}
	return errs
}

// assembledTools lists the tools of every stack of an assembled agent.
func assembledTools(ctx context.Context, b *builtAgent) ([]string, error) {
	as, err := b.agent.Describe(ctx, harness.DescribeOptions{OmitBuiltinToolSchemas: true})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, st := range as.Stacks {
		for _, t := range st.Tools {
			out = union(out, []string{t.Name})
		}
	}
	return out, nil
}

// union adds the names of b missing from a, keeping a's order.
func union(a, b []string) []string {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	return a
}

type resolvedModel struct {
	spec  string
	model llm.ChatModel
}

// validateCredentials checks that every model a recording will call can
// authenticate. Record mode calls every model; record-missing calls only
// what its cassettes lack, and a call it cannot make records nothing, so
// the cassette stays as it was; live mode keeps nothing, and each cell
// errors with the missing setting.
func (r *runner) validateCredentials(models []resolvedModel) []error {
	s := r.s
	var errs []error
	seen := map[string]bool{}
	for _, rm := range models {
		if seen[rm.spec] {
			continue
		}
		seen[rm.spec] = true
		cfg, ok := providerConfigOf(rm.model)
		if !ok {
			continue
		}
		if _, _, err := cfg.Credentials(); err != nil {
			at := "models"
			if _, declared := s.Providers[cfg.Provider]; declared {
				at = "providers." + cfg.Provider
			}
			errs = append(errs, s.errAt(at, "mode %s (%s) calls model %s, which cannot reach its provider: %v; nothing was called and no cassette was touched", r.mode, r.modeReason, rm.spec, err))
		}
	}
	return errs
}

// providerConfigOf finds the provider configuration under a model and the
// wrappers the runner puts around it.
func providerConfigOf(m llm.ChatModel) (provider.Config, bool) {
	for {
		switch v := m.(type) {
		case interface{ Config() provider.Config }:
			return v.Config(), true
		case interface{ Unwrap() llm.ChatModel }:
			m = v.Unwrap()
		default:
			return provider.Config{}, false
		}
	}
}

// noCalls is the transport of validation's models, which must never be called.
type noCalls struct{}

func (noCalls) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("evals: validation never calls a model")
}

func (r *runner) validateCassettes(cells []Cell) error {
	s := r.s
	var missing []string
	at := "cassettes"
	for _, c := range cells {
		if _, err := os.Stat(c.Cassette); err == nil {
			continue
		}
		if len(missing) == 0 && c.CaseDef.Cassette != "" && c.CaseDef.row == nil {
			at = fmt.Sprintf("cases[%d].cassette", c.CaseDef.index)
		}
		rel, err := filepath.Rel(s.Dir, c.Cassette)
		if err != nil {
			rel = c.Cassette
		}
		missing = append(missing, filepath.ToSlash(rel))
	}
	if len(missing) == 0 {
		return nil
	}
	shown := missing
	if len(shown) > 5 {
		shown = append(slices.Clone(shown[:5]), fmt.Sprintf("… and %d more", len(missing)-5))
	}
	return s.errAt(at, "%d of %d cells have no cassette to replay (%s): %s; record them with --mode record-missing (outside CI) or run --mode live",
		len(missing), len(cells), r.modeReason, strings.Join(shown, ", "))
}

// parseCassettes reads every cassette the cells would replay, so that an
// empty, truncated or wrong-version cassette is found before a run rather
// than as an errored cell. A run does not call it (the replay parses each
// cassette anyway, and reports a bad one as a cassette_invalid cell);
// Validate does. Each problem is reported as file:line: message.
func (r *runner) parseCassettes(cells []Cell) []error {
	if r.mode != recorder.ModeReplay && r.mode != recorder.ModeRecordMissing {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, c := range cells {
		if seen[c.Cassette] {
			continue
		}
		seen[c.Cassette] = true
		if _, err := os.Stat(c.Cassette); err != nil {
			continue // missing cassettes are validateCassettes' to report
		}
		if err := parseCassette(c.Cassette); err != nil {
			err.Msg += fmt.Sprintf(" (the cassette of cell %s; restore it or re-record it with DAGEVAL_RECORD=1)", cellLabel(c.CellKey))
			errs = append(errs, err)
		}
	}
	return errs
}

// parseCassette is the one call into the cassette parser. Its error names
// the file and line (line 1 when the parser knows none, as for an empty
// file), so that editors and CI annotations can jump to it.
func parseCassette(path string) *yamlx.Error {
	_, err := cassette.Read(path)
	var pe *cassette.ParseError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return &yamlx.Error{File: pe.File, Line: max(pe.Line, 1), Column: pe.Column, Msg: pe.Msg}
	}
	return &yamlx.Error{File: path, Line: 1, Msg: err.Error()}
}

func cellLabel(k CellKey) string {
	return fmt.Sprintf("%s/%s/%s/e%d", k.Case, k.Model, k.Profile, k.Epoch)
}
