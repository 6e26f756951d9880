package rubrics

import (
	"encoding/json"
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
	return DecodeChecksOpts(file, node, key, DecodeOptions{Custom: custom})
}

// DecodeOptions are what decoding checks needs from the suite around them.
type DecodeOptions struct {
	// Custom decodes the kinds registered in Go.
	Custom map[string]CheckDecoder
	// Include reads the file a "file://path" expected value names; nil
	// leaves such values as they are written.
	Include func(path string) (string, error)
	// Dir is where code assertions run (the suite's directory).
	Dir string
	// NonGating makes every check informational (a case's expect: list).
	NonGating bool
}

// DecodeChecksOpts is DecodeChecks with options.
func DecodeChecksOpts(file string, node ast.Node, key string, o DecodeOptions) ([]Check, error) {
	d := newDecoder(file)
	d.custom, d.include, d.dir = o.Custom, o.Include, o.Dir
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
		if o.NonGating {
			c = NonGating(c)
		}
		out = append(out, c)
	}
	return out, nil
}

// DecodeCheck decodes one check (a one-key mapping) from a YAML node.
func DecodeCheck(file string, node ast.Node, key string) (Check, error) {
	return newDecoder(file).check(node, key)
}

// gatingKey is the key beside a check's kind that makes it informational:
// {tool_called: {…}, gating: false}.
const gatingKey = "gating"

func (d *decoder) check(n ast.Node, key string) (Check, error) {
	entries, err := d.mapping(n, key)
	if err != nil {
		return nil, d.errf(n, key, "a check is a one-key mapping such as {tool_called: get_weather}; got %s", yamlx.Kind(d.resolve(n)))
	}
	gating := true
	var kinds []entry
	for _, e := range entries {
		if e.key != gatingKey {
			kinds = append(kinds, e)
			continue
		}
		if gating, err = d.boolean(e.val, join(key, gatingKey)); err != nil {
			return nil, err
		}
		if gating {
			return nil, d.errf(e.val, join(key, gatingKey), "gating: true is the default; write gating: false to make the check informational, or remove the key")
		}
	}
	if len(kinds) != 1 {
		names := make([]string, len(kinds))
		for i, e := range kinds {
			names[i] = e.key
		}
		return nil, d.errf(n, key, "a check has exactly one kind, got %d keys (%s); write each check as its own list item", len(kinds), strings.Join(names, ", "))
	}
	c, err := d.checkKind(kinds[0], key)
	if err != nil {
		return nil, err
	}
	if !gating {
		c = NonGating(c)
	}
	return c, nil
}

func (d *decoder) checkKind(e entry, key string) (Check, error) {
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
	case KindNot:
		inner, err := d.check(e.val, k)
		if err != nil {
			return nil, err
		}
		if !IsGating(inner) {
			return nil, d.errf(e.val, k, "put gating: false beside not, not inside it")
		}
		return &NotCheck{Check: inner}, nil
	case KindAssistantText:
		return d.assistantText(e.val, k)
	case KindToolResult:
		return d.toolResult(e.val, k)
	case KindState:
		return d.state(e.val, k)
	case KindFileEquals:
		return d.fileEquals(e.val, k)
	case KindFileAbsent:
		p, err := d.pathSpec(e.val, k)
		return &FileAbsentCheck{Path: p}, err
	case KindFileExcludes:
		return d.fileExcludes(e.val, k)
	case KindTurns:
		b, err := d.bounds(e.val, k)
		return &TurnsCheck{Bounds: b}, err
	case KindToolCallCount:
		return d.toolCallCount(e.val, k)
	case KindSameTurn:
		return d.sameTurn(e.val, k)
	case KindScript:
		return d.script(e.val, k)
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

// textKeys are the keys of a text condition set (TextMatch).
var textKeys = []string{"contains", "contains_any", "not_contains", "starts_with", "regex", "equals", "json_schema",
	"is_json", "contains_json", "is_xml", "is_sql", "levenshtein", "rouge_n", "bleu", "ignore_case"}

func (d *decoder) finalAnswer(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, append(slices.Clone(textKeys), "from")...)
	if err != nil {
		return nil, err
	}
	c := &FinalAnswerCheck{}
	if c.TextMatch, err = d.textMatch(f, key); err != nil {
		return nil, err
	}
	if e, ok := f["from"]; ok {
		k := join(key, "from")
		if c.From, err = d.str(e.val, k); err != nil {
			return nil, err
		}
		if c.From != FromLastText && c.From != FromLastMessage {
			return nil, d.errf(e.val, k, "from must be %s (the last non-empty assistant text, the default) or %s (the last assistant message, even when empty, as Deep Agents reads it), got %q", FromLastText, FromLastMessage, c.From)
		}
	}
	if err := c.TextMatch.Validate(); err != nil {
		return nil, d.errf(n, key, "final_answer %v", err)
	}
	return c, nil
}

// textMatch decodes the text conditions among a check's fields.
func (d *decoder) textMatch(f map[string]entry, key string) (TextMatch, error) {
	var m TextMatch
	var err error
	for _, list := range []struct {
		name string
		dst  *[]string
	}{{"contains", &m.Contains}, {"contains_any", &m.ContainsAny}, {"not_contains", &m.NotContains}} {
		if e, ok := f[list.name]; ok {
			if *list.dst, err = d.texts(e.val, join(key, list.name)); err != nil {
				return m, err
			}
		}
	}
	if e, ok := f["starts_with"]; ok {
		if m.StartsWith, err = d.text(e.val, join(key, "starts_with")); err != nil {
			return m, err
		}
	}
	if e, ok := f["regex"]; ok {
		if m.Regex, err = d.regex(e.val, join(key, "regex")); err != nil {
			return m, err
		}
	}
	if e, ok := f["equals"]; ok {
		s, err := d.text(e.val, join(key, "equals"))
		if err != nil {
			return m, err
		}
		m.Equals = &s
	}
	if e, ok := f["json_schema"]; ok {
		if m.JSONSchema, err = d.schema(e.val, join(key, "json_schema")); err != nil {
			return m, err
		}
	}
	for _, flag := range []struct {
		name string
		dst  *bool
	}{{"is_json", &m.IsJSON}, {"is_xml", &m.IsXML}, {"is_sql", &m.IsSQL}, {"ignore_case", &m.IgnoreCase}} {
		if e, ok := f[flag.name]; ok {
			if *flag.dst, err = d.boolean(e.val, join(key, flag.name)); err != nil {
				return m, err
			}
		}
	}
	if e, ok := f["contains_json"]; ok {
		k := join(key, "contains_json")
		if _, isMap := d.resolve(e.val).(ast.MapNode); isMap {
			cf, _, err := d.fields(e.val, k, "schema")
			if err != nil {
				return m, err
			}
			se, ok := cf["schema"]
			if !ok {
				return m, d.errf(e.val, k, "want true, or {schema: {…}} for JSON that a schema validates")
			}
			if m.ContainsJSONSchema, err = d.schema(se.val, join(k, "schema")); err != nil {
				return m, err
			}
		} else if m.ContainsJSON, err = d.boolean(e.val, k); err != nil {
			return m, d.errf(e.val, k, "want true, or {schema: {…}}, got %s", yamlx.Kind(d.resolve(e.val)))
		}
	}
	if e, ok := f["levenshtein"]; ok {
		k := join(key, "levenshtein")
		lf, _, err := d.fields(e.val, k, "value", "max_distance")
		if err != nil {
			return m, err
		}
		l := &LevenshteinMatch{}
		ve, ok := lf["value"]
		if !ok {
			return m, d.errf(e.val, k, "missing key value (the text to compare with)")
		}
		if l.Value, err = d.text(ve.val, join(k, "value")); err != nil {
			return m, err
		}
		if me, ok := lf["max_distance"]; ok {
			v, err := d.integer(me.val, join(k, "max_distance"))
			if err != nil {
				return m, err
			}
			if v < 0 {
				return m, d.errf(me.val, join(k, "max_distance"), "must not be negative, got %d", v)
			}
			l.MaxDistance = &v
		}
		m.Levenshtein = l
	}
	if e, ok := f["rouge_n"]; ok {
		k := join(key, "rouge_n")
		rf, _, err := d.fields(e.val, k, "reference", "n", "threshold")
		if err != nil {
			return m, err
		}
		r := &RougeMatch{}
		if r.Reference, err = d.reference(rf, e.val, k); err != nil {
			return m, err
		}
		if ne, ok := rf["n"]; ok {
			if r.N, err = d.integer(ne.val, join(k, "n")); err != nil {
				return m, err
			}
			if r.N < 1 || r.N > 4 {
				return m, d.errf(ne.val, join(k, "n"), "n must be between 1 and 4, got %d", r.N)
			}
		}
		if r.Threshold, err = d.threshold(rf, k); err != nil {
			return m, err
		}
		m.RougeN = r
	}
	if e, ok := f["bleu"]; ok {
		k := join(key, "bleu")
		bf, _, err := d.fields(e.val, k, "reference", "threshold")
		if err != nil {
			return m, err
		}
		b := &BLEUMatch{}
		if b.Reference, err = d.reference(bf, e.val, k); err != nil {
			return m, err
		}
		if b.Threshold, err = d.threshold(bf, k); err != nil {
			return m, err
		}
		m.BLEU = b
	}
	return m, nil
}

func (d *decoder) reference(f map[string]entry, n ast.Node, key string) (string, error) {
	e, ok := f["reference"]
	if !ok {
		return "", d.errf(n, key, "missing key reference (the text to compare with)")
	}
	return d.text(e.val, join(key, "reference"))
}

func (d *decoder) threshold(f map[string]entry, key string) (float64, error) {
	e, ok := f["threshold"]
	if !ok {
		return 0, nil
	}
	k := join(key, "threshold")
	t, err := d.float(e.val, k)
	if err != nil {
		return 0, err
	}
	if !(t > 0 && t <= 1) {
		return 0, d.errf(e.val, k, "must be greater than 0 and at most 1, got %v", t)
	}
	return t, nil
}

func (d *decoder) schema(n ast.Node, key string) (json.RawMessage, error) {
	if _, ok := d.resolve(n).(ast.MapNode); !ok {
		return nil, d.errf(n, key, "want a JSON Schema mapping, got %s", yamlx.Kind(d.resolve(n)))
	}
	raw, err := d.json(n, key)
	if err != nil {
		return nil, err
	}
	if _, err := tool.ParseSchema(raw); err != nil {
		return nil, d.errf(n, key, "%v", err)
	}
	return raw, nil
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
		m.Name, m.at = name, key
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
	m.at = join(key, "name")
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
	m, f, err := d.callMatcher(n, key, "agent", "times", "min", "max", "turn")
	if err != nil {
		return nil, err
	}
	c := &ToolCalledCheck{Call: m}
	if c.Agent, err = d.scope(f, key); err != nil {
		return nil, err
	}
	if e, ok := f["turn"]; ok {
		if c.Turn, err = d.positiveInt(e.val, join(key, "turn")); err != nil {
			return nil, err
		}
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
