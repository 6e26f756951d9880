package rubrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// ArgMode says how expected arguments are compared with a call's arguments.
type ArgMode string

// Argument comparison modes.
const (
	// ArgsSubset: every expected key is present with a matching value
	// (recursively for objects); other keys may be present too.
	ArgsSubset ArgMode = "subset"
	// ArgsExact: the arguments equal the expected value (as JSON values).
	ArgsExact ArgMode = "exact"
	// ArgsIgnore: arguments are not compared.
	ArgsIgnore ArgMode = "ignore"
)

// ArgsMatcher matches a tool call's arguments. All its parts must hold.
type ArgsMatcher struct {
	// Mode compares Value with the arguments; empty means ArgsSubset when
	// Value is set and ArgsIgnore when it is not.
	Mode ArgMode `json:"mode,omitempty"`
	// Value is the expected arguments (a JSON object).
	Value json.RawMessage `json:"value,omitempty"`
	// Paths check single values inside the arguments.
	Paths []PathMatch `json:"paths,omitempty"`
}

// PathMatch checks the value at a JSON path ("$.city", "$.items[0]['id']";
// a bare key such as "city" means "$.city"). The value must exist; Equals,
// when set, must equal it; Regex, when set, must match it (a string value
// as is, any other value as compact JSON).
type PathMatch struct {
	Path   string          `json:"path"`
	Equals json.RawMessage `json:"equals,omitempty"`
	Regex  string          `json:"regex,omitempty"`
}

func (m ArgsMatcher) mode() ArgMode {
	if m.Mode != "" {
		return m.Mode
	}
	if len(m.Value) > 0 {
		return ArgsSubset
	}
	return ArgsIgnore
}

// IsZero reports whether the matcher accepts any arguments.
func (m ArgsMatcher) IsZero() bool { return m.mode() == ArgsIgnore && len(m.Paths) == 0 }

// Validate checks modes, JSON and regular expressions.
func (m ArgsMatcher) Validate() error {
	switch m.mode() {
	case ArgsSubset, ArgsExact:
		if len(m.Value) == 0 {
			return fmt.Errorf("args mode %s needs expected args", m.Mode)
		}
		if !json.Valid(m.Value) {
			return errors.New("expected args are not valid JSON")
		}
	case ArgsIgnore:
		if len(m.Value) > 0 {
			return errors.New("args mode ignore cannot have expected args")
		}
	default:
		return fmt.Errorf("unknown args mode %q (want subset, exact or ignore)", m.Mode)
	}
	for _, p := range m.Paths {
		if _, err := parsePath(p.Path); err != nil {
			return err
		}
		if p.Equals != nil && !json.Valid(p.Equals) {
			return fmt.Errorf("%s: expected value is not valid JSON", p.Path)
		}
		if p.Regex != "" {
			if _, err := regexp.Compile(p.Regex); err != nil {
				return fmt.Errorf("%s: %v", p.Path, err)
			}
		}
	}
	return nil
}

// Match reports whether args satisfy the matcher, and if not, why.
func (m ArgsMatcher) Match(args json.RawMessage) (bool, string) {
	if m.IsZero() {
		return true, ""
	}
	actual, err := decodeJSON(args)
	if err != nil {
		return false, "the arguments are not valid JSON"
	}
	switch m.mode() {
	case ArgsExact, ArgsSubset:
		want, err := decodeJSON(m.Value)
		if err != nil {
			return false, "the expected args are not valid JSON"
		}
		if m.mode() == ArgsExact && !reflect.DeepEqual(want, actual) {
			return false, "args differ"
		}
		if m.mode() == ArgsSubset && !subsetJSON(want, actual) {
			return false, "args do not include the expected ones"
		}
	}
	for _, p := range m.Paths {
		segs, err := parsePath(p.Path)
		if err != nil {
			return false, err.Error()
		}
		v, ok := lookup(actual, segs)
		if !ok {
			return false, p.Path + " is missing"
		}
		if p.Equals != nil {
			want, err := decodeJSON(p.Equals)
			if err != nil || !reflect.DeepEqual(want, v) {
				return false, p.Path + " differs"
			}
		}
		if p.Regex != "" {
			re, err := regexp.Compile(p.Regex)
			if err != nil || !re.MatchString(valueText(v)) {
				return false, p.Path + " does not match /" + p.Regex + "/"
			}
		}
	}
	return true, ""
}

// String describes the matcher in details ("" when it accepts anything).
func (m ArgsMatcher) String() string {
	var parts []string
	switch m.mode() {
	case ArgsExact:
		parts = append(parts, "args = "+compactText(m.Value))
	case ArgsSubset:
		parts = append(parts, "args ⊇ "+compactText(m.Value))
	}
	for _, p := range m.Paths {
		if p.Equals != nil {
			parts = append(parts, p.Path+" = "+compactText(p.Equals))
		}
		if p.Regex != "" {
			parts = append(parts, p.Path+" ~ /"+p.Regex+"/")
		}
		if p.Equals == nil && p.Regex == "" {
			parts = append(parts, p.Path+" present")
		}
	}
	return strings.Join(parts, ", ")
}

func decodeJSON(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// subsetJSON reports whether want is contained in got: objects by key
// (recursively), arrays element by element with equal length, scalars equal.
func subsetJSON(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !subsetJSON(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subsetJSON(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

func compactText(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

// pathSeg is one step of a JSON path: an object key or an array index.
type pathSeg struct {
	key   string
	index int
	isIdx bool
}

// parsePath parses the JSON path subset we support: $, .key, ['key'],
// ["key"] and [n].
func parsePath(p string) ([]pathSeg, error) {
	s := strings.TrimSpace(p)
	if s == "" {
		return nil, errors.New("empty JSON path")
	}
	switch {
	case strings.HasPrefix(s, "$"):
		s = s[1:]
	case strings.HasPrefix(s, "[") || strings.HasPrefix(s, "."):
	default:
		s = "." + s
	}
	var segs []pathSeg
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			if end == 0 {
				return nil, fmt.Errorf("JSON path %q: empty key", p)
			}
			segs = append(segs, pathSeg{key: s[:end]})
			s = s[end:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("JSON path %q: unclosed [", p)
			}
			inner := s[1:end]
			s = s[end+1:]
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				segs = append(segs, pathSeg{key: inner[1 : len(inner)-1]})
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("JSON path %q: [%s] is neither an index nor a quoted key", p, inner)
			}
			segs = append(segs, pathSeg{index: n, isIdx: true})
		default:
			return nil, fmt.Errorf("JSON path %q: unexpected %q", p, s[0])
		}
	}
	return segs, nil
}

func lookup(v any, segs []pathSeg) (any, bool) {
	for _, s := range segs {
		if s.isIdx {
			arr, ok := v.([]any)
			if !ok || s.index >= len(arr) {
				return nil, false
			}
			v = arr[s.index]
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[s.key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// CallMatcher matches one tool call: by name ("*" for any tool), arguments,
// and, for task calls, the subagent run the call started.
type CallMatcher struct {
	Name string      `json:"name"`
	Args ArgsMatcher `json:"args,omitzero"`
	// Subagent, when set, must hold for the run the (task) call started.
	Subagent *TrajectoryCheck `json:"subagent,omitempty"`

	// at is the key of the tool name in the suite, for validation's errors.
	at string
}

// Validate checks the matcher.
func (m CallMatcher) Validate() error {
	if strings.TrimSpace(m.Name) == "" {
		return errors.New("the tool name is empty")
	}
	if err := m.Args.Validate(); err != nil {
		return err
	}
	if m.Subagent != nil {
		return m.Subagent.Validate()
	}
	return nil
}

// Match reports whether the call satisfies the matcher.
func (m CallMatcher) Match(c ToolCall) bool {
	if m.Name != "*" && m.Name != c.Name {
		return false
	}
	if ok, _ := m.Args.Match(c.Args); !ok {
		return false
	}
	if m.Subagent != nil {
		if c.Subagent == nil {
			return false
		}
		score, _ := m.Subagent.score(c.Subagent.Calls)
		return score >= m.Subagent.threshold()-scoreEpsilon
	}
	return true
}

// String describes the matcher: "get_weather", "get_weather(args ⊇ {…})".
func (m CallMatcher) String() string {
	var parts []string
	if a := m.Args.String(); a != "" {
		parts = append(parts, a)
	}
	if m.Subagent != nil {
		parts = append(parts, "subagent "+string(m.Subagent.Mode)+" ["+matchersText(m.Subagent.Calls)+"]")
	}
	if len(parts) == 0 {
		return m.Name
	}
	return m.Name + "(" + strings.Join(parts, "; ") + ")"
}

func matchersText(ms []CallMatcher) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return strings.Join(out, ", ")
}

// callText renders an actual call for details: name(compact args).
func callText(c ToolCall) string {
	args := compactText(c.Args)
	if args == "" || args == "{}" {
		return c.Name
	}
	return c.Name + args
}

func callsText(cs []ToolCall) string {
	if len(cs) == 0 {
		return "(none)"
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = callText(c)
	}
	return strings.Join(out, ", ")
}
