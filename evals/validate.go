package evals

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/internal/yamlx"
)

// Validate checks what Load cannot check alone, without running anything:
// the agent factory or Go tools the suite names are registered, every tool
// the agent declares has a behaviour in every case (and every behaviour
// names a declared tool), the agent assembles with every model and profile,
// and, in replay mode, every cell's cassette exists. Options supply the
// mode, filter, epochs and the Go tools and factories of the run.
func (s *Suite) Validate(ctx context.Context, o Options) error {
	r, err := s.newRunner(o)
	if err != nil {
		return err
	}
	cells, err := s.Cells(o.Filter, o.Epochs)
	if err != nil {
		return err
	}
	return r.validate(ctx, cells)
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

func (r *runner) validate(ctx context.Context, cells []Cell) error {
	s := r.s
	if s.Agent.Factory != "" {
		if _, ok := r.o.agentFactory(s.Agent.Factory); !ok {
			return s.errAt("agent.factory", "no agent factory is registered as %q (register it with evals.RegisterAgent in Go; the dageval command has none)", s.Agent.Factory)
		}
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	if err := r.validateAssembly(ctx, cells); err != nil {
		return err
	}
	if r.mode == recorder.ModeReplay {
		return r.validateCassettes(cells)
	}
	return nil
}

func (r *runner) validateTools() error {
	s := r.s
	checkGo := func(b *ToolBehavior) error {
		if b.Go == "" {
			return nil
		}
		if _, ok := r.o.goTool(b.Go); !ok {
			return s.errAt(b.at+".go", "no Go tool is registered as %q (register it with evals.RegisterTool; the dageval command has none)", b.Go)
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		if err := checkGo(s.Tools[name]); err != nil {
			return err
		}
	}
	for _, c := range s.Cases {
		for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
			if err := checkGo(c.Tools[name]); err != nil {
				return err
			}
		}
	}
	af := s.Agent.Spec
	if af == nil {
		return nil // a factory's tools are only known when it runs
	}
	var declared []string
	for _, d := range af.Tools {
		declared = append(declared, d.Name)
	}
	list := strings.Join(declared, ", ")
	if list == "" {
		list = "none"
	}
	for _, name := range slices.Sorted(maps.Keys(s.Tools)) {
		if !slices.Contains(declared, name) {
			return s.errAt(s.Tools[name].at, "the agent declares no tool %q (declared tools: %s)", name, list)
		}
	}
	for i, c := range s.Cases {
		for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
			if !slices.Contains(declared, name) {
				return s.errAt(c.Tools[name].at, "the agent declares no tool %q (declared tools: %s)", name, list)
			}
		}
		for _, name := range declared {
			if s.behaviour(c, name) != nil {
				continue
			}
			if _, ok := r.o.goTool(name); ok {
				continue
			}
			at := fmt.Sprintf("cases[%d]", i)
			if len(c.Tools) > 0 {
				at += ".tools"
			}
			return s.errAt(at, "tool %s, declared by the agent, has no behaviour in case %s: give it one under tools: (mock, exec or go) in the suite or the case", name, c.ID)
		}
	}
	return nil
}

// validateAssembly assembles the agent once per model × profile (with the
// grader when the suite has one), so that a profile excluding a middleware
// that is not there, or a model the resolver cannot build, stops the run
// before any cell does. Assembling calls no model.
func (r *runner) validateAssembly(ctx context.Context, cells []Cell) error {
	s := r.s
	if s.Agent.Spec == nil {
		return nil // a factory is only called for real cells
	}
	cfg := r.providerConfig()
	cfg.HTTPClient, cfg.Replay = &http.Client{Transport: noCalls{}}, r.mode == recorder.ModeReplay
	resolve, err := r.newResolver(cfg)
	if err != nil {
		return err
	}
	var grader *middleware.RubricMiddleware
	if s.Grader != nil {
		gm, err := resolve(s.Grader.Model)
		if err != nil {
			return s.errAt("grader.model", "%v", err)
		}
		if grader, err = r.newGrader(gm); err != nil {
			return s.errAt("grader", "%v", err)
		}
	}
	done := map[[2]string]bool{}
	for _, c := range cells {
		k := [2]string{c.Model, c.Profile}
		if done[k] {
			continue
		}
		done[k] = true
		if _, err := r.buildAgent(ctx, c, resolve, grader); err != nil {
			var ye *yamlx.Error
			if errors.As(err, &ye) {
				return err
			}
			at := "agent"
			for j, p := range s.Profiles {
				if p.Name == c.Profile && p.Config != nil {
					at = fmt.Sprintf("profiles[%d]", j)
				}
			}
			return s.errAt(at, "the agent does not assemble with model %s and profile %s: %v", c.Model, c.Profile, err)
		}
	}
	return nil
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
		if len(missing) == 0 && c.CaseDef.Cassette != "" {
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
