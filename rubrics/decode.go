package rubrics

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/internal/yamlx"
)

// ParseChecks parses a YAML list of checks, each a one-key mapping from the
// check kind to its spec, as a suite case writes them:
//
//	checks:
//	  - final_answer: {contains: sunny}
//	  - tool_called: {name: get_weather, args: {city: Paris}}
//	  - trajectory: {mode: in_order, calls: [get_weather, write_file]}
//	  - file_contains: {path: /notes/paris.md, text: sunny}
//	  - max_steps: 40
//	  - no_error: true
//
// (the file holds the list itself, without the checks key).
func ParseChecks(file string, src []byte) ([]Check, error) {
	root, err := ParseYAML(file, src)
	if err != nil {
		return nil, err
	}
	return DecodeChecks(file, root, "")
}

// DecodeChecks decodes a list of checks from a YAML node; file and key
// locate it in errors (key is the node's path, e.g. "cases[2].checks").
func DecodeChecks(file string, node ast.Node, key string) ([]Check, error) {
	return DecodeChecksWith(file, node, key, nil)
}

// CheckDecoder builds a check of a kind that is not built in (one written
// in Go and registered by name) from its spec, the value under its kind;
// key locates the spec in errors ("cases[2].checks[0].my_check").
type CheckDecoder func(spec ast.Node, key string) (Check, error)

// DecodeChecksWith is DecodeChecks that also accepts the kinds in custom.
// A custom kind never replaces a built-in one.
func DecodeChecksWith(file string, node ast.Node, key string, custom map[string]CheckDecoder) ([]Check, error) {
	d := newDecoder(file)
	d.custom = custom
	items, err := d.sequence(node, key)
	if err != nil {
		return nil, err
	}
	out := make([]Check, 0, len(items))
	for i, item := range items {
		c, err := d.check(item, index(key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// DecodeCheck decodes one check (a one-key mapping) from a YAML node.
func DecodeCheck(file string, node ast.Node, key string) (Check, error) {
	return newDecoder(file).check(node, key)
}

func (d *decoder) check(n ast.Node, key string) (Check, error) {
	entries, err := d.mapping(n, key)
	if err != nil {
		return nil, d.errf(n, key, "a check is a one-key mapping such as {tool_called: get_weather}; got %s", yamlx.Kind(d.resolve(n)))
	}
	if len(entries) != 1 {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.key
		}
		return nil, d.errf(n, key, "a check has exactly one kind, got %d keys (%s); write each check as its own list item", len(entries), strings.Join(names, ", "))
	}
	e := entries[0]
	k := join(key, e.key)
	switch e.key {
	case KindFinalAnswer:
		return d.finalAnswer(e.val, k)
	case KindToolCalled:
		return d.toolCalled(e.val, k)
	case KindToolNotCalled:
		return d.toolNotCalled(e.val, k)
	case KindTrajectory:
		return d.trajectory(e.val, k, true)
	case KindFileExists:
		return d.fileExists(e.val, k)
	case KindFileContains:
		return d.fileContains(e.val, k)
	case KindMaxSteps:
		n, err := d.positiveInt(e.val, k)
		return &MaxStepsCheck{Limit: n}, err
	case KindMaxTokens:
		n, err := d.positiveInt(e.val, k)
		return &MaxTokensCheck{Limit: n}, err
	case KindMaxCostUSD:
		f, err := d.float(e.val, k)
		if err != nil {
			return nil, err
		}
		if !(f > 0) || math.IsInf(f, 0) {
			return nil, d.errf(e.val, k, "must be a positive amount in US dollars, got %v", f)
		}
		return &MaxCostCheck{LimitUSD: f}, nil
	case KindNoError:
		return d.noError(e.val, k)
	}
	if dec, ok := d.custom[e.key]; ok {
		return dec(e.val, k)
	}
	known := Kinds()
	for _, name := range slices.Sorted(maps.Keys(d.custom)) {
		known = append(known, name)
	}
	return nil, d.errf(e.keyNode, k, "unknown check %q (known checks: %s)", e.key, strings.Join(known, ", "))
}

func (d *decoder) positiveInt(n ast.Node, key string) (int, error) {
	v, err := d.integer(n, key)
	if err != nil {
		return 0, err
	}
	if v < 1 {
		return 0, d.errf(n, key, "must be at least 1, got %d", v)
	}
	return v, nil
}

func (d *decoder) noError(n ast.Node, key string) (Check, error) {
	r := d.resolve(n)
	if isNull(r) {
		return NoErrorCheck{}, nil
	}
	if b, ok := r.(*ast.BoolNode); ok {
		if !b.Value {
			return nil, d.errf(n, key, "no_error: false checks nothing; remove the check instead")
		}
		return NoErrorCheck{}, nil
	}
	if _, _, err := d.fields(n, key); err != nil {
		return nil, d.errf(n, key, "want true or {}, got %s", yamlx.Kind(r))
	}
	return NoErrorCheck{}, nil
}

func (d *decoder) regex(n ast.Node, key string) (string, error) {
	s, err := d.str(n, key)
	if err != nil {
		return "", err
	}
	if _, err := regexp.Compile(s); err != nil {
		return "", d.errf(n, key, "invalid regular expression: %v", err)
	}
	return s, nil
}

func (d *decoder) finalAnswer(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, "contains", "not_contains", "regex", "equals", "json_schema", "ignore_case")
	if err != nil {
		return nil, err
	}
	c := &FinalAnswerCheck{}
	if e, ok := f["contains"]; ok {
		if c.Contains, err = d.texts(e.val, join(key, "contains")); err != nil {
			return nil, err
		}
	}
	if e, ok := f["not_contains"]; ok {
		if c.NotContains, err = d.texts(e.val, join(key, "not_contains")); err != nil {
			return nil, err
		}
	}
	if e, ok := f["regex"]; ok {
		if c.Regex, err = d.regex(e.val, join(key, "regex")); err != nil {
			return nil, err
		}
	}
	if e, ok := f["equals"]; ok {
		s, err := d.text(e.val, join(key, "equals"))
		if err != nil {
			return nil, err
		}
		c.Equals = &s
	}
	if e, ok := f["json_schema"]; ok {
		k := join(key, "json_schema")
		if _, ok := d.resolve(e.val).(ast.MapNode); !ok {
			return nil, d.errf(e.val, k, "want a JSON Schema mapping, got %s", yamlx.Kind(d.resolve(e.val)))
		}
		if c.JSONSchema, err = d.json(e.val, k); err != nil {
			return nil, err
		}
		if _, err := tool.ParseSchema(c.JSONSchema); err != nil {
			return nil, d.errf(e.val, k, "%v", err)
		}
	}
	if e, ok := f["ignore_case"]; ok {
		if c.IgnoreCase, err = d.boolean(e.val, join(key, "ignore_case")); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, d.errf(n, key, "%v", err)
	}
	return c, nil
}

var callKeys = []string{"name", "args", "args_mode", "args_path", "args_regex", "subagent"}

// callMatcher decodes a tool name or a mapping with name, args and friends.
// extra lists further keys the caller handles; their entries are returned.
func (d *decoder) callMatcher(n ast.Node, key string, extra ...string) (CallMatcher, map[string]entry, error) {
	var m CallMatcher
	if _, ok := d.resolve(n).(*ast.StringNode); ok {
		name, _ := d.str(n, key)
		if strings.TrimSpace(name) == "" {
			return m, nil, d.errf(n, key, "the tool name is empty")
		}
		m.Name = name
		return m, map[string]entry{}, nil
	}
	if _, ok := d.resolve(n).(ast.MapNode); !ok {
		return m, nil, d.errf(n, key, "want a tool name or a mapping with name and args, got %s", yamlx.Kind(d.resolve(n)))
	}
	f, _, err := d.fields(n, key, append(append([]string{}, callKeys...), extra...)...)
	if err != nil {
		return m, nil, err
	}
	e, ok := f["name"]
	if !ok {
		return m, nil, d.errf(n, key, "missing key name (the tool's name)")
	}
	if m.Name, err = d.str(e.val, join(key, "name")); err != nil {
		return m, nil, err
	}
	if strings.TrimSpace(m.Name) == "" {
		return m, nil, d.errf(e.val, join(key, "name"), "the tool name is empty")
	}
	if e, ok := f["args"]; ok {
		k := join(key, "args")
		if _, ok := d.resolve(e.val).(ast.MapNode); !ok {
			return m, nil, d.errf(e.val, k, "want a mapping of argument names to values, got %s", yamlx.Kind(d.resolve(e.val)))
		}
		if m.Args.Value, err = d.json(e.val, k); err != nil {
			return m, nil, err
		}
	}
	if e, ok := f["args_mode"]; ok {
		k := join(key, "args_mode")
		s, err := d.str(e.val, k)
		if err != nil {
			return m, nil, err
		}
		switch ArgMode(s) {
		case ArgsSubset, ArgsExact:
			if len(m.Args.Value) == 0 {
				return m, nil, d.errf(e.val, k, "args_mode %s needs args", s)
			}
		case ArgsIgnore:
			if len(m.Args.Value) > 0 {
				return m, nil, d.errf(e.val, k, "args_mode ignore contradicts the args given")
			}
		default:
			return m, nil, d.errf(e.val, k, "unknown args_mode %q (want subset, exact or ignore)", s)
		}
		m.Args.Mode = ArgMode(s)
	}
	for _, field := range []string{"args_path", "args_regex"} {
		e, ok := f[field]
		if !ok {
			continue
		}
		paths, err := d.pathMatches(e.val, join(key, field), field == "args_regex")
		if err != nil {
			return m, nil, err
		}
		m.Args.Paths = append(m.Args.Paths, paths...)
	}
	if e, ok := f["subagent"]; ok {
		k := join(key, "subagent")
		if m.Name != "task" && m.Name != "*" {
			return m, nil, d.errf(e.keyNode, k, "only task calls start subagents; this matcher is for %s", m.Name)
		}
		sub, err := d.trajectory(e.val, k, false)
		if err != nil {
			return m, nil, err
		}
		m.Subagent = sub
	}
	return m, f, nil
}

// pathText normalises a bare key ("city") to a JSON path ("$.city").
func pathText(p string) string {
	s := strings.TrimSpace(p)
	switch {
	case strings.HasPrefix(s, "$"):
		return s
	case strings.HasPrefix(s, "[") || strings.HasPrefix(s, "."):
		return "$" + s
	}
	return "$." + s
}

func (d *decoder) scope(f map[string]entry, key string) (string, error) {
	e, ok := f["agent"]
	if !ok {
		return "", nil
	}
	s, err := d.str(e.val, join(key, "agent"))
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) == "" {
		return "", d.errf(e.val, join(key, "agent"), "the agent is empty (use main, all, a subagent type or an agent path)")
	}
	return s, nil
}

func (d *decoder) toolCalled(n ast.Node, key string) (Check, error) {
	m, f, err := d.callMatcher(n, key, "agent", "times", "min", "max")
	if err != nil {
		return nil, err
	}
	c := &ToolCalledCheck{Call: m}
	if c.Agent, err = d.scope(f, key); err != nil {
		return nil, err
	}
	if e, ok := f["times"]; ok {
		if _, has := f["min"]; has {
			return nil, d.errf(e.keyNode, join(key, "times"), "times cannot be combined with min")
		}
		if _, has := f["max"]; has {
			return nil, d.errf(e.keyNode, join(key, "times"), "times cannot be combined with max")
		}
		t, err := d.positiveInt(e.val, join(key, "times"))
		if err != nil {
			return nil, err
		}
		c.Min, c.Max = t, t
	}
	if e, ok := f["min"]; ok {
		if c.Min, err = d.positiveInt(e.val, join(key, "min")); err != nil {
			return nil, err
		}
	}
	if e, ok := f["max"]; ok {
		if c.Max, err = d.positiveInt(e.val, join(key, "max")); err != nil {
			return nil, err
		}
		if c.Max < c.min() {
			return nil, d.errf(e.val, join(key, "max"), "max (%d) is below min (%d)", c.Max, c.min())
		}
	}
	return c, nil
}

func (d *decoder) toolNotCalled(n ast.Node, key string) (Check, error) {
	m, f, err := d.callMatcher(n, key, "agent")
	if err != nil {
		return nil, err
	}
	c := &ToolNotCalledCheck{Call: m}
	if c.Agent, err = d.scope(f, key); err != nil {
		return nil, err
	}
	return c, nil
}

// trajectory decodes a trajectory spec; top says whether agent may be given
// (a nested subagent expectation already names its run).
func (d *decoder) trajectory(n ast.Node, key string, top bool) (*TrajectoryCheck, error) {
	keys := []string{"mode", "calls", "threshold"}
	if top {
		keys = append(keys, "agent")
	}
	f, _, err := d.fields(n, key, keys...)
	if err != nil {
		return nil, err
	}
	c := &TrajectoryCheck{}
	e, ok := f["mode"]
	if !ok {
		return nil, d.errf(n, key, "missing key mode (one of %s)", modeList())
	}
	mode, err := d.str(e.val, join(key, "mode"))
	if err != nil {
		return nil, err
	}
	c.Mode = TrajectoryMode(mode)
	known := false
	for _, m := range trajectoryModes {
		known = known || m == c.Mode
	}
	if !known {
		return nil, d.errf(e.val, join(key, "mode"), "unknown mode %q (one of %s)", mode, modeList())
	}
	e, ok = f["calls"]
	if !ok {
		return nil, d.errf(n, key, "missing key calls (the expected tool calls)")
	}
	ck := join(key, "calls")
	items, err := d.sequence(e.val, ck)
	if err != nil {
		return nil, err
	}
	for i, item := range items {
		m, _, err := d.callMatcher(item, index(ck, i))
		if err != nil {
			return nil, err
		}
		c.Calls = append(c.Calls, m)
	}
	if c.Mode == TrajectoryBefore && len(c.Calls) < 2 {
		return nil, d.errf(e.val, ck, "mode before needs at least two calls: each must come before the next")
	}
	if e, ok := f["threshold"]; ok {
		k := join(key, "threshold")
		if c.Threshold, err = d.float(e.val, k); err != nil {
			return nil, err
		}
		if !(c.Threshold > 0 && c.Threshold <= 1) {
			return nil, d.errf(e.val, k, "must be greater than 0 and at most 1, got %v", c.Threshold)
		}
	}
	if top {
		if c.Agent, err = d.scope(f, key); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, d.errf(n, key, "%v", err)
	}
	return c, nil
}

func (d *decoder) fileExists(n ast.Node, key string) (Check, error) {
	if _, ok := d.resolve(n).(*ast.StringNode); ok {
		p, _ := d.str(n, key)
		return &FileExistsCheck{Path: p}, d.checkPath(n, key, p)
	}
	f, _, err := d.fields(n, key, "path")
	if err != nil {
		return nil, err
	}
	e, ok := f["path"]
	if !ok {
		return nil, d.errf(n, key, "missing key path")
	}
	p, err := d.str(e.val, join(key, "path"))
	if err != nil {
		return nil, err
	}
	return &FileExistsCheck{Path: p}, d.checkPath(e.val, join(key, "path"), p)
}

func (d *decoder) checkPath(n ast.Node, key, p string) error {
	if !strings.HasPrefix(p, "/") {
		return d.errf(n, key, "path %q must be absolute (start with /)", p)
	}
	return nil
}

func (d *decoder) fileContains(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, "path", "text", "regex")
	if err != nil {
		return nil, err
	}
	c := &FileContainsCheck{}
	e, ok := f["path"]
	if !ok {
		return nil, d.errf(n, key, "missing key path")
	}
	if c.Path, err = d.str(e.val, join(key, "path")); err != nil {
		return nil, err
	}
	if err := d.checkPath(e.val, join(key, "path"), c.Path); err != nil {
		return nil, err
	}
	if e, ok := f["text"]; ok {
		if c.Text, err = d.texts(e.val, join(key, "text")); err != nil {
			return nil, err
		}
	}
	if e, ok := f["regex"]; ok {
		if c.Regex, err = d.regex(e.val, join(key, "regex")); err != nil {
			return nil, err
		}
	}
	if len(c.Text) == 0 && c.Regex == "" {
		return nil, d.errf(n, key, "file_contains needs text or regex")
	}
	return c, nil
}

// pathMatches reads an args_path (value equality) or args_regex mapping of
// JSON paths to expectations.
func (d *decoder) pathMatches(n ast.Node, key string, regex bool) ([]PathMatch, error) {
	entries, err := d.mapping(n, key)
	if err != nil {
		return nil, err
	}
	var out []PathMatch
	for _, pe := range entries {
		pk := join(key, pe.key)
		if _, err := parsePath(pe.key); err != nil {
			return nil, d.errf(pe.keyNode, pk, "%v", err)
		}
		pm := PathMatch{Path: pathText(pe.key)}
		if regex {
			if pm.Regex, err = d.regex(pe.val, pk); err != nil {
				return nil, err
			}
		} else if pm.Equals, err = d.json(pe.val, pk); err != nil {
			return nil, err
		}
		out = append(out, pm)
	}
	return out, nil
}
