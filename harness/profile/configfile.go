package profile

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/internal/yamlx"
)

// LoadConfigFile reads a profile file, YAML or JSON (JSON is read as the
// YAML it is). Every problem is reported as a *ConfigError naming the file,
// line, column and key; several problems are joined.
func LoadConfigFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig reads a profile document; file names it in errors. An empty
// document is an empty config.
func ParseConfig(file string, data []byte) (*Config, error) {
	f, err := yamlx.ParseFile(file, data)
	if err != nil {
		se := yamlx.FromError(file, err)
		return nil, &ConfigError{File: file, Line: se.Line, Column: se.Column, Err: fmt.Errorf("%w: %s", errConfigSyntax, se.Msg)}
	}
	var body ast.Node
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			d := &decoder{file: file}
			d.fail(doc.Body, "", errors.New("a profile file holds one document; found a second one"))
			return nil, d.err()
		}
		body = doc.Body
	}
	return DecodeConfigNode(file, body, "")
}

// DecodeConfigNode reads a profile from a YAML node, for files that embed a
// profile (an agent file's `profile:` key); file names it in errors and key,
// the node's path in that file ("" for a whole document), comes first in the
// key of every error. A nil node or null is an empty config.
func DecodeConfigNode(file string, node ast.Node, key string) (*Config, error) {
	d := &decoder{file: file, root: key, anchors: map[string]ast.Node{}}
	c := d.config(node)
	if err := d.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// UnmarshalYAML lets go-yaml decode a Config strictly, with positions.
func (c *Config) UnmarshalYAML(node ast.Node) error {
	parsed, err := DecodeConfigNode("", node, "")
	if err != nil {
		return err
	}
	*c = *parsed
	return nil
}

type decoder struct {
	file string
	// root is the path of the decoded node in its file.
	root    string
	errs    []error
	anchors map[string]ast.Node
}

func (d *decoder) fail(n ast.Node, key string, err error) {
	line, col := yamlx.Position(n)
	if d.root != "" {
		if key == "" {
			key = d.root
		} else {
			key = d.root + "." + key
		}
	}
	d.errs = append(d.errs, &ConfigError{File: d.file, Line: line, Column: col, Key: key, Err: err})
}

func (d *decoder) err() error { return errors.Join(d.errs...) }

// resolve strips anchors and tags and follows aliases; tag is the innermost
// explicit tag ("!!str"), if any.
func (d *decoder) resolve(n ast.Node) (node ast.Node, tag string) {
	for i := 0; i < 32 && n != nil; i++ {
		switch x := n.(type) {
		case *ast.TagNode:
			tag = x.Start.Value
			n = x.Value
		case *ast.AnchorNode:
			if x.Name != nil && d.anchors != nil {
				d.anchors[x.Name.String()] = x.Value
			}
			n = x.Value
		case *ast.AliasNode:
			target, ok := d.anchors[x.Value.String()]
			if !ok {
				return x, tag
			}
			n = target
		default:
			return n, tag
		}
	}
	return n, tag
}

func isNull(n ast.Node) bool {
	_, null := n.(*ast.NullNode)
	return n == nil || null
}

// str reads a scalar string. A plain scalar that YAML reads as a number or a
// boolean is not a string unless tagged !!str, as in Deep Agents' type checks.
func (d *decoder) str(n ast.Node) (string, bool) {
	n, tag := d.resolve(n)
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.LiteralNode:
		return x.Value.Value, true
	}
	if tag == "!!str" && n != nil {
		if tk := n.GetToken(); tk != nil {
			return tk.Value, true
		}
	}
	return "", false
}

// entries returns the key/value pairs of a mapping, reporting non-string and
// duplicate keys.
func (d *decoder) entries(n ast.Node, path string) ([]*ast.MappingValueNode, []string, bool) {
	var values []*ast.MappingValueNode
	switch x := n.(type) {
	case *ast.MappingNode:
		values = x.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{x}
	default:
		return nil, nil, false
	}
	var keys []string
	var kept []*ast.MappingValueNode
	seen := map[string]bool{}
	for _, mv := range values {
		k, ok := d.str(mv.Key)
		if !ok {
			d.fail(mv.Key, path, fmt.Errorf("keys must be strings, got %s", yamlx.Kind(mv.Key)))
			continue
		}
		if seen[k] {
			d.fail(mv.Key, join(path, k), errors.New("key appears more than once"))
			continue
		}
		seen[k] = true
		keys = append(keys, k)
		kept = append(kept, mv)
	}
	return kept, keys, true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) config(n ast.Node) *Config {
	c := &Config{}
	n, _ = d.resolve(n)
	if isNull(n) {
		return c
	}
	values, keys, ok := d.entries(n, "")
	if !ok {
		d.fail(n, "", fmt.Errorf("a profile must be a mapping of %s, got %s", strings.Join(configKeys, ", "), yamlx.Kind(n)))
		return c
	}
	for i, mv := range values {
		key := keys[i]
		switch key {
		case "base_system_prompt":
			c.BaseSystemPrompt = d.optString(mv.Value, key)
		case "system_prompt_suffix":
			c.SystemPromptSuffix = d.optString(mv.Value, key)
		case "tool_description_overrides":
			c.ToolDescriptionOverrides = d.stringMap(mv.Value, key)
		case "excluded_tools":
			c.ExcludedTools = d.stringList(mv.Value, key, nil)
		case "excluded_middleware":
			c.ExcludedMiddleware = d.stringList(mv.Value, key, checkConfigExclusion)
		case "general_purpose_subagent":
			c.GeneralPurposeSubagent = d.generalPurpose(mv.Value, key)
		case "todo_system_prompt":
			c.TodoSystemPrompt = d.optString(mv.Value, key)
		default:
			msg := fmt.Sprintf("unknown key %q; a profile file may use %s", key, strings.Join(configKeys, ", "))
			if key == "extra_middleware" {
				msg += " (extra middleware is code: register it from Go)"
			}
			d.fail(mv.Key, key, errors.New(msg))
		}
	}
	c.ExcludedTools = sortedSet(c.ExcludedTools)
	c.ExcludedMiddleware = sortedSet(c.ExcludedMiddleware)
	return c
}

func (d *decoder) optString(n ast.Node, key string) *string {
	r, _ := d.resolve(n)
	if isNull(r) {
		return nil
	}
	s, ok := d.str(n)
	if !ok {
		d.fail(r, key, fmt.Errorf("must be a string or null, got %s", yamlx.Kind(r)))
		return nil
	}
	return &s
}

func (d *decoder) stringMap(n ast.Node, key string) map[string]string {
	r, _ := d.resolve(n)
	if isNull(r) {
		return nil
	}
	values, keys, ok := d.entries(r, key)
	if !ok {
		d.fail(r, key, fmt.Errorf("must be a mapping of tool names to descriptions, got %s", yamlx.Kind(r)))
		return nil
	}
	out := make(map[string]string, len(values))
	for i, mv := range values {
		v, ok := d.str(mv.Value)
		if !ok {
			vr, _ := d.resolve(mv.Value)
			d.fail(vr, join(key, keys[i]), fmt.Errorf("must be a string, got %s", yamlx.Kind(vr)))
			continue
		}
		out[keys[i]] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (d *decoder) stringList(n ast.Node, key string, check func(string) error) []string {
	r, _ := d.resolve(n)
	if isNull(r) {
		return nil
	}
	seq, ok := r.(*ast.SequenceNode)
	if !ok {
		d.fail(r, key, fmt.Errorf("must be a list of strings, got %s", yamlx.Kind(r)))
		return nil
	}
	var out []string
	for i, item := range seq.Values {
		path := fmt.Sprintf("%s[%d]", key, i)
		s, ok := d.str(item)
		if !ok {
			ir, _ := d.resolve(item)
			d.fail(ir, path, fmt.Errorf("must be a string, got %s", yamlx.Kind(ir)))
			continue
		}
		if check != nil {
			if err := check(s); err != nil {
				d.fail(item, path, err)
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

func (d *decoder) generalPurpose(n ast.Node, key string) *GeneralPurposeSubagent {
	r, _ := d.resolve(n)
	if isNull(r) {
		return nil
	}
	values, keys, ok := d.entries(r, key)
	if !ok {
		d.fail(r, key, fmt.Errorf("must be a mapping with %s, got %s", strings.Join(gpKeys, ", "), yamlx.Kind(r)))
		return nil
	}
	gp := &GeneralPurposeSubagent{}
	for i, mv := range values {
		path := join(key, keys[i])
		switch keys[i] {
		case "enabled":
			vr, _ := d.resolve(mv.Value)
			switch b := vr.(type) {
			case *ast.NullNode:
			case *ast.BoolNode:
				v := b.Value
				gp.Enabled = &v
			default:
				d.fail(vr, path, fmt.Errorf("must be true, false or null, got %s", yamlx.Kind(vr)))
			}
		case "description":
			gp.Description = d.optString(mv.Value, path)
		case "system_prompt":
			gp.SystemPrompt = d.optString(mv.Value, path)
		default:
			d.fail(mv.Key, path, fmt.Errorf("unknown key %q; general_purpose_subagent may use %s", keys[i], strings.Join(gpKeys, ", ")))
		}
	}
	return gp
}

// checkConfigExclusion reports a malformed or scaffolding entry at its own
// line; NewHarnessProfile reports scaffolding entries together instead.
func checkConfigExclusion(name string) error {
	if err := CheckExclusionName(name); err != nil {
		return err
	}
	if isRequired(name) {
		return fmt.Errorf("%w: %q; to hide its tools use excluded_tools instead", ErrScaffolding, name)
	}
	return nil
}
