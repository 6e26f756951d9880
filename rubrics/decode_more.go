package rubrics

import (
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/internal/yamlx"
)

func (d *decoder) mode(f map[string]entry, key string) (string, error) {
	e, ok := f["match"]
	if !ok {
		return "", nil
	}
	k := join(key, "match")
	m, err := d.str(e.val, k)
	if err != nil {
		return "", err
	}
	if err := checkMode(m); err != nil {
		return "", d.errf(e.val, k, "%v", err)
	}
	return m, nil
}

func (d *decoder) assistantText(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, append(slices.Clone(textKeys), "match")...)
	if err != nil {
		return nil, err
	}
	c := &AssistantTextCheck{}
	if c.TextMatch, err = d.textMatch(f, key); err != nil {
		return nil, err
	}
	if c.Match, err = d.mode(f, key); err != nil {
		return nil, err
	}
	if err := c.TextMatch.Validate(); err != nil {
		return nil, d.errf(n, key, "assistant_text %v", err)
	}
	return c, nil
}

func (d *decoder) toolResult(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, append(slices.Clone(textKeys), "match", "tool", "agent")...)
	if err != nil {
		return nil, err
	}
	c := &ToolResultCheck{}
	if c.TextMatch, err = d.textMatch(f, key); err != nil {
		return nil, err
	}
	if c.Match, err = d.mode(f, key); err != nil {
		return nil, err
	}
	if c.Agent, err = d.scope(f, key); err != nil {
		return nil, err
	}
	if e, ok := f["tool"]; ok {
		c.toolAt = join(key, "tool")
		if c.Tool, err = d.str(e.val, c.toolAt); err != nil {
			return nil, err
		}
		if strings.TrimSpace(c.Tool) == "" {
			return nil, d.errf(e.val, c.toolAt, "the tool name is empty")
		}
	}
	if err := c.TextMatch.Validate(); err != nil {
		return nil, d.errf(n, key, "tool_result %v", err)
	}
	return c, nil
}

func (d *decoder) state(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, "path", "equals", "regex")
	if err != nil {
		return nil, err
	}
	e, ok := f["path"]
	if !ok {
		return nil, d.errf(n, key, "missing key path (a JSON path into {todos, values, structured_response}, e.g. $.todos[0].status)")
	}
	k := join(key, "path")
	p, err := d.str(e.val, k)
	if err != nil {
		return nil, err
	}
	if _, err := parsePath(p); err != nil {
		return nil, d.errf(e.val, k, "%v", err)
	}
	c := &StateCheck{PathMatch: PathMatch{Path: pathText(p)}}
	if e, ok := f["equals"]; ok {
		if c.Equals, err = d.json(e.val, join(key, "equals")); err != nil {
			return nil, err
		}
	}
	if e, ok := f["regex"]; ok {
		if c.Regex, err = d.regex(e.val, join(key, "regex")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// pathSpec reads a file path given alone or as {path}.
func (d *decoder) pathSpec(n ast.Node, key string) (string, error) {
	if _, ok := d.resolve(n).(*ast.StringNode); ok {
		p, _ := d.str(n, key)
		return p, d.checkPath(n, key, p)
	}
	f, _, err := d.fields(n, key, "path")
	if err != nil {
		return "", err
	}
	return d.filePath(f, n, key)
}

func (d *decoder) filePath(f map[string]entry, n ast.Node, key string) (string, error) {
	e, ok := f["path"]
	if !ok {
		return "", d.errf(n, key, "missing key path")
	}
	p, err := d.str(e.val, join(key, "path"))
	if err != nil {
		return "", err
	}
	return p, d.checkPath(e.val, join(key, "path"), p)
}

func (d *decoder) fileEquals(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, "path", "content")
	if err != nil {
		return nil, err
	}
	c := &FileEqualsCheck{}
	if c.Path, err = d.filePath(f, n, key); err != nil {
		return nil, err
	}
	e, ok := f["content"]
	if !ok {
		return nil, d.errf(n, key, "missing key content (the file's exact content; file://path reads it from a file)")
	}
	if c.Content, err = d.text(e.val, join(key, "content")); err != nil {
		return nil, err
	}
	return c, nil
}

func (d *decoder) fileExcludes(n ast.Node, key string) (Check, error) {
	f, _, err := d.fields(n, key, "path", "text")
	if err != nil {
		return nil, err
	}
	c := &FileExcludesCheck{}
	if c.Path, err = d.filePath(f, n, key); err != nil {
		return nil, err
	}
	e, ok := f["text"]
	if !ok {
		return nil, d.errf(n, key, "missing key text (what the file must not hold)")
	}
	if c.Text, err = d.texts(e.val, join(key, "text")); err != nil {
		return nil, err
	}
	return c, nil
}

// bounds reads a count: a whole number (exact) or {min, max}.
func (d *decoder) bounds(n ast.Node, key string, extra ...string) (Bounds, error) {
	b, _, err := d.boundsWith(n, key, extra...)
	return b, err
}

func (d *decoder) boundsWith(n ast.Node, key string, extra ...string) (Bounds, map[string]entry, error) {
	if _, ok := d.resolve(n).(*ast.IntegerNode); ok {
		v, err := d.integer(n, key)
		if err != nil {
			return Bounds{}, nil, err
		}
		if v < 0 {
			return Bounds{}, nil, d.errf(n, key, "a count cannot be negative, got %d", v)
		}
		return Bounds{Min: v, Max: v}, map[string]entry{}, nil
	}
	f, _, err := d.fields(n, key, append([]string{"count", "min", "max"}, extra...)...)
	if err != nil {
		return Bounds{}, nil, err
	}
	read := func(name string) (int, bool, error) {
		e, ok := f[name]
		if !ok {
			return 0, false, nil
		}
		v, err := d.integer(e.val, join(key, name))
		if err == nil && v < 0 {
			err = d.errf(e.val, join(key, name), "a count cannot be negative, got %d", v)
		}
		return v, true, err
	}
	count, hasCount, err := read("count")
	if err != nil {
		return Bounds{}, nil, err
	}
	minV, hasMin, err := read("min")
	if err != nil {
		return Bounds{}, nil, err
	}
	maxV, hasMax, err := read("max")
	if err != nil {
		return Bounds{}, nil, err
	}
	b := Bounds{Min: minV, Max: NoMax}
	switch {
	case hasCount && (hasMin || hasMax):
		return b, nil, d.errf(f["count"].keyNode, join(key, "count"), "count cannot be combined with min or max")
	case hasCount:
		b = Bounds{Min: count, Max: count}
	case hasMax:
		if maxV < minV {
			return b, nil, d.errf(f["max"].val, join(key, "max"), "max (%d) is below min (%d)", maxV, minV)
		}
		b.Max = maxV
	case hasMin:
		if minV == 0 {
			return b, nil, d.errf(f["min"].val, join(key, "min"), "min 0 with no max checks nothing")
		}
	default:
		return b, nil, d.errf(n, key, "want a count, or {count}, {min}, {max} or {min, max}")
	}
	return b, f, nil
}

func (d *decoder) toolCallCount(n ast.Node, key string) (Check, error) {
	b, f, err := d.boundsWith(n, key, "tool", "agent")
	if err != nil {
		return nil, err
	}
	c := &ToolCallCountCheck{Bounds: b}
	if c.Agent, err = d.scope(f, key); err != nil {
		return nil, err
	}
	if e, ok := f["tool"]; ok {
		c.toolAt = join(key, "tool")
		if c.Tool, err = d.str(e.val, c.toolAt); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (d *decoder) sameTurn(n ast.Node, key string) (Check, error) {
	var items []ast.Node
	c := &SameTurnCheck{}
	ck := key
	if seq, ok := d.resolve(n).(*ast.SequenceNode); ok {
		items = seq.Values
	} else {
		f, _, err := d.fields(n, key, "calls", "turn", "agent")
		if err != nil {
			return nil, err
		}
		e, ok := f["calls"]
		if !ok {
			return nil, d.errf(n, key, "missing key calls (the calls made together)")
		}
		ck = join(key, "calls")
		if items, err = d.sequence(e.val, ck); err != nil {
			return nil, err
		}
		if e, ok := f["turn"]; ok {
			if c.Turn, err = d.positiveInt(e.val, join(key, "turn")); err != nil {
				return nil, err
			}
		}
		if c.Agent, err = d.scope(f, key); err != nil {
			return nil, err
		}
	}
	for i, item := range items {
		m, _, err := d.callMatcher(item, index(ck, i))
		if err != nil {
			return nil, err
		}
		c.Calls = append(c.Calls, m)
	}
	if len(c.Calls) < 2 {
		return nil, d.errf(n, key, "same_turn needs at least two calls (for one call in a given turn, use tool_called with turn)")
	}
	return c, nil
}

// script reads a code assertion: {command, timeout, env}. A string command
// is split at spaces and never given to a shell, so nothing a dataset row
// puts into it is interpreted.
func (d *decoder) script(n ast.Node, key string) (Check, error) {
	if _, ok := d.resolve(n).(ast.MapNode); !ok {
		n = d.resolve(n)
		if _, isStr := n.(*ast.StringNode); !isStr {
			if _, isSeq := n.(*ast.SequenceNode); !isSeq {
				return nil, d.errf(n, key, "want {command, timeout, env} or a command, got %s", yamlx.Kind(n))
			}
		}
		return d.scriptFrom(map[string]entry{"command": {key: "command", val: n}}, n, key, key)
	}
	f, _, err := d.fields(n, key, "command", "timeout", "env")
	if err != nil {
		return nil, err
	}
	return d.scriptFrom(f, n, key, join(key, "command"))
}

func (d *decoder) scriptFrom(f map[string]entry, n ast.Node, key, cmdKey string) (Check, error) {
	c := &ScriptCheck{Timeout: DefaultScriptTimeout, Dir: d.dir}
	e, ok := f["command"]
	if !ok {
		return nil, d.errf(n, key, "missing key command (a list of arguments, or a string split at spaces; no shell runs it)")
	}
	switch v := d.resolve(e.val).(type) {
	case *ast.StringNode:
		c.Argv = strings.Fields(v.Value)
	case *ast.SequenceNode:
		for i, item := range v.Values {
			s, err := d.str(item, index(cmdKey, i))
			if err != nil {
				return nil, err
			}
			c.Argv = append(c.Argv, s)
		}
	default:
		return nil, d.errf(e.val, cmdKey, "want a list of arguments or a string, got %s", yamlx.Kind(v))
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, d.errf(e.val, cmdKey, "the command is empty")
	}
	if e, ok := f["timeout"]; ok {
		k := join(key, "timeout")
		s, err := d.str(e.val, k)
		if err != nil {
			return nil, err
		}
		t, err := time.ParseDuration(s)
		if err != nil || t <= 0 {
			return nil, d.errf(e.val, k, "not a positive duration: %q (e.g. 10s)", s)
		}
		c.Timeout = t
	}
	if e, ok := f["env"]; ok {
		k := join(key, "env")
		entries, err := d.mapping(e.val, k)
		if err != nil {
			return nil, err
		}
		c.Env = map[string]string{}
		for _, ee := range entries {
			if ee.key == "" || strings.ContainsAny(ee.key, "=\x00") {
				return nil, d.errf(ee.keyNode, join(k, ee.key), "invalid environment variable name %q", ee.key)
			}
			if c.Env[ee.key], err = d.text(ee.val, join(k, ee.key)); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}
