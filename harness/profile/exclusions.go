package profile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
)

// requiredMiddleware names the scaffolding every deep agent needs: its file
// tools and its task tool. Profiles hide their tools with excluded_tools.
var requiredMiddleware = []string{middleware.FilesystemName, middleware.SubAgentName}

// RequiredMiddleware returns the names of the middleware a profile may not
// exclude, sorted.
func RequiredMiddleware() []string { return slices.Clone(requiredMiddleware) }

func isRequired(name string) bool { return slices.Contains(requiredMiddleware, name) }

var middlewareInterface = reflect.TypeFor[agent.Middleware]()

// CheckExclusionName reports whether s can be a name entry of
// excluded_middleware: not blank, no ":" (class paths are not supported), and
// no leading "_" (underscore names are internal, such as the tool-exclusion
// middleware that enforces excluded_tools). It does not check scaffolding.
func CheckExclusionName(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%w: entry %q is empty; name a middleware, e.g. \"SummarizationMiddleware\"", ErrInvalidExclusion, s)
	case strings.Contains(s, ":"):
		return fmt.Errorf("%w: entry %q contains ':'; class-path (\"module:Type\") entries are not supported, use the middleware's name", ErrInvalidExclusion, s)
	case strings.HasPrefix(s, "_"):
		return fmt.Errorf("%w: entry %q cannot start with '_': underscore names are internal middleware that cannot be excluded", ErrInvalidExclusion, s)
	}
	return nil
}

// validateExclusions checks every entry and reports all scaffolding entries
// together in one error, so a profile author fixes them in one go.
func validateExclusions(names []string, types []reflect.Type) error {
	var errs []error
	var scaffolding []string
	for _, n := range names {
		if err := CheckExclusionName(n); err != nil {
			errs = append(errs, err)
			continue
		}
		if isRequired(n) {
			scaffolding = append(scaffolding, fmt.Sprintf("%q (string)", n))
		}
	}
	for i, t := range types {
		switch {
		case t == nil:
			errs = append(errs, fmt.Errorf("%w: ExcludedMiddlewareTypes[%d] is nil", ErrInvalidExclusion, i))
		case !t.Implements(middlewareInterface):
			errs = append(errs, fmt.Errorf("%w: type %s does not implement agent.Middleware", ErrInvalidExclusion, t))
		case isRequired(baseTypeName(t)) || isRequired(typeMiddlewareName(t)):
			scaffolding = append(scaffolding, typeLabel(t))
		}
	}
	if len(scaffolding) > 0 {
		slices.Sort(scaffolding)
		errs = append(errs, scaffoldingError(scaffolding))
	}
	return errors.Join(errs...)
}

func scaffoldingError(labels []string) error {
	return fmt.Errorf("%w: %s; to hide their tools use excluded_tools instead", ErrScaffolding, strings.Join(labels, ", "))
}

// typeLabel names a type in messages and descriptions ("*middleware.Summarization").
func typeLabel(t reflect.Type) string { return t.String() }

func baseTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// zeroMiddleware returns a zero value of t as a Middleware, or false. Pointer
// types get a pointer to a zero value so that methods reading fields work.
func zeroMiddleware(t reflect.Type) (mw agent.Middleware, ok bool) {
	if t == nil || !t.Implements(middlewareInterface) {
		return nil, false
	}
	var v reflect.Value
	if t.Kind() == reflect.Pointer {
		v = reflect.New(t.Elem())
	} else {
		v = reflect.New(t).Elem()
	}
	mw, ok = v.Interface().(agent.Middleware)
	return mw, ok
}

// typeMiddlewareName is the Name() a zero value of t reports, or "" when
// that cannot be asked safely.
func typeMiddlewareName(t reflect.Type) (name string) {
	mw, ok := zeroMiddleware(t)
	if !ok {
		return ""
	}
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	return mw.Name()
}

// ExclusionMatcher applies one profile's middleware exclusions to the stacks
// that share the profile and remembers what matched, so that Verify can
// report entries that matched nothing in any of them. The main profile uses
// one matcher for the main and general-purpose stacks; each declarative
// subagent with its own profile uses its own. Not safe for concurrent use.
type ExclusionMatcher struct {
	p            *HarnessProfile
	matchedTypes map[reflect.Type]bool
	matchedNames map[string]bool
}

// NewExclusionMatcher returns a matcher for the profile's exclusions.
func (p *HarnessProfile) NewExclusionMatcher() *ExclusionMatcher {
	return &ExclusionMatcher{p: p, matchedTypes: map[reflect.Type]bool{}, matchedNames: map[string]bool{}}
}

// Filter returns a new slice holding the stack without the excluded
// middleware. A middleware is dropped when its dynamic type is exactly an
// excluded type, or else when its Name() is an excluded name. Run it before
// and after the caller's middleware are merged in, so the caller cannot bring
// an excluded entry back. It fails with ErrAmbiguousExclusion when one name
// entry matches two different types in this stack.
func (m *ExclusionMatcher) Filter(stack []agent.Middleware) ([]agent.Middleware, error) {
	out := make([]agent.Middleware, 0, len(stack))
	if !m.p.hasExclusions() {
		return append(out, stack...), nil
	}
	var byName map[string][]reflect.Type
	var removed []string
	logRemoved := slog.Default().Enabled(context.Background(), slog.LevelDebug)
	for _, mw := range stack {
		t := reflect.TypeOf(mw)
		if slices.Contains(m.p.excludedTypes, t) {
			m.matchedTypes[t] = true
			if logRemoved {
				removed = append(removed, mw.Name())
			}
			continue
		}
		name := mw.Name()
		if _, ok := slices.BinarySearch(m.p.excludedNames, name); ok {
			m.matchedNames[name] = true
			if byName == nil {
				byName = map[string][]reflect.Type{}
			}
			if !slices.Contains(byName[name], t) {
				byName[name] = append(byName[name], t)
			}
			if logRemoved {
				removed = append(removed, name)
			}
			continue
		}
		out = append(out, mw)
	}
	var ambiguous []string
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if ts := byName[name]; len(ts) > 1 {
			labels := make([]string, len(ts))
			for i, t := range ts {
				labels[i] = typeLabel(t)
			}
			slices.Sort(labels)
			ambiguous = append(ambiguous, fmt.Sprintf("%q matched %s", name, strings.Join(labels, " and ")))
		}
	}
	if len(ambiguous) > 0 {
		return nil, fmt.Errorf("%w: %s; use a type exclusion (ExcludedMiddlewareTypes) to say which one to remove", ErrAmbiguousExclusion, strings.Join(ambiguous, "; "))
	}
	if len(removed) > 0 {
		slog.Debug("profile: excluded middleware removed from stack", "removed", removed)
	}
	return out, nil
}

// Verify fails with ErrUnmatchedExclusion when, after every Filter call that
// shares this matcher, some exclusion matched no middleware.
func (m *ExclusionMatcher) Verify() error {
	if !m.p.hasExclusions() {
		return nil
	}
	var labels []string
	for _, t := range m.p.excludedTypes {
		if !m.matchedTypes[t] {
			labels = append(labels, typeLabel(t))
		}
	}
	for _, n := range m.p.excludedNames {
		if !m.matchedNames[n] && !isRequired(n) && !strings.HasPrefix(n, "_") {
			labels = append(labels, fmt.Sprintf("%q", n))
		}
	}
	if len(labels) == 0 {
		return nil
	}
	slices.Sort(labels)
	return fmt.Errorf("%w: %s; check the spelling, or drop entries for middleware this agent does not use", ErrUnmatchedExclusion, strings.Join(labels, ", "))
}
