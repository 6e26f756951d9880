package rubrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/dageval/dageval/internal/yamlx"
)

// FieldError is a problem in a YAML document, located by file, line, column
// and key path (for example "criteria[1].weight"). It is the project's YAML
// error, so its message reads like the others: "file:line:col: key: msg".
type FieldError = yamlx.Error

// ParseYAML parses a single-document YAML source into its root node, with
// syntax errors reported as *FieldError. An empty document is an error.
func ParseYAML(file string, src []byte) (ast.Node, error) {
	f, err := yamlx.ParseFile(file, src)
	if err != nil {
		return nil, yamlx.FromError(file, err)
	}
	var docs []ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if _, ok := d.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		docs = append(docs, d.Body)
	}
	switch len(docs) {
	case 0:
		return nil, &FieldError{File: file, Line: 1, Column: 1, Msg: "the document is empty"}
	case 1:
		return docs[0], nil
	}
	l, c := position(docs[1])
	return nil, &FieldError{File: file, Line: l, Column: c, Msg: "only one YAML document is allowed per file"}
}

// position is where a node starts. A mapping's own token is the colon of
// its first entry, so mappings are located by their first key.
func position(n ast.Node) (line, col int) {
	if n == nil {
		return 0, 0
	}
	switch m := n.(type) {
	case *ast.MappingNode:
		if len(m.Values) > 0 && !m.IsFlowStyle {
			return position(m.Values[0])
		}
	case *ast.MappingValueNode:
		return position(m.Key)
	}
	return yamlx.Position(n)
}

// decoder turns YAML nodes into our types, strictly: unknown keys and wrong
// types are errors that name the file, position and key.
type decoder struct {
	file    string
	anchors map[string]ast.Node
	// custom decodes the check kinds registered in Go (DecodeChecksWith).
	custom map[string]CheckDecoder
	// include reads file:// expected values; nil leaves them as written.
	include func(path string) (string, error)
	// dir is where code assertions run.
	dir string
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, anchors: map[string]ast.Node{}}
}

func (d *decoder) errf(n ast.Node, key, format string, args ...any) error {
	l, c := position(n)
	return &FieldError{File: d.file, Line: l, Column: c, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// resolve follows anchors, aliases and tags to the node that holds the value.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch v := n.(type) {
		case *ast.AnchorNode:
			d.anchors[v.Name.GetToken().Value] = v.Value
			n = v.Value
		case *ast.AliasNode:
			target, ok := d.anchors[v.Value.GetToken().Value]
			if !ok {
				return n
			}
			n = target
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return n
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return n == nil || ok
}

// entry is one key of a mapping.
type entry struct {
	key     string
	keyNode ast.Node
	val     ast.Node
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func index(prefix string, i int) string { return fmt.Sprintf("%s[%d]", prefix, i) }

// mapping returns the entries of a mapping node in document order.
func (d *decoder) mapping(n ast.Node, key string) ([]entry, error) {
	r := d.resolve(n)
	mn, ok := r.(ast.MapNode)
	if !ok {
		return nil, d.errf(n, key, "want a mapping, got %s", yamlx.Kind(r))
	}
	var out []entry
	it := mn.MapRange()
	for it.Next() {
		k := it.Key()
		if _, merge := k.(*ast.MergeKeyNode); merge {
			return nil, d.errf(k, key, "merge keys (<<) are not supported")
		}
		name := k.GetToken().Value
		if s, ok := d.resolve(k).(*ast.StringNode); ok {
			name = s.Value
		}
		out = append(out, entry{key: name, keyNode: k, val: it.Value()})
	}
	return out, nil
}

// fields returns a mapping's entries by key, rejecting keys not in allowed.
func (d *decoder) fields(n ast.Node, key string, allowed ...string) (map[string]entry, []entry, error) {
	entries, err := d.mapping(n, key)
	if err != nil {
		return nil, nil, err
	}
	m := make(map[string]entry, len(entries))
	for _, e := range entries {
		if !slices.Contains(allowed, e.key) {
			return nil, nil, d.errf(e.keyNode, join(key, e.key), "unknown key %q (known keys: %s)", e.key, strings.Join(allowed, ", "))
		}
		m[e.key] = e
	}
	return m, entries, nil
}

func (d *decoder) sequence(n ast.Node, key string) ([]ast.Node, error) {
	r := d.resolve(n)
	seq, ok := r.(*ast.SequenceNode)
	if !ok {
		return nil, d.errf(n, key, "want a list, got %s", yamlx.Kind(r))
	}
	return seq.Values, nil
}

func (d *decoder) str(n ast.Node, key string) (string, error) {
	switch v := d.resolve(n).(type) {
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	default:
		return "", d.errf(n, key, "want a string, got %s", yamlx.Kind(v))
	}
}

// text is str for free text, where a number or boolean written without
// quotes means its literal text (contains: 21 looks for "21"), and
// "file://path" means the content of that file when the decoder reads
// includes (the suite's expected values).
func (d *decoder) text(n ast.Node, key string) (string, error) {
	switch v := d.resolve(n).(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, nil
	}
	s, err := d.str(n, key)
	if err != nil {
		return "", err
	}
	if rest, ok := strings.CutPrefix(s, IncludePrefix); ok && d.include != nil {
		content, err := d.include(rest)
		if err != nil {
			return "", d.errf(n, key, "%v", err)
		}
		return content, nil
	}
	return s, nil
}

// IncludePrefix starts an expected value, seeded file or mock result that
// is the content of a file: "file://expected/answer.md", relative to the
// suite file.
const IncludePrefix = "file://"

// texts accepts one text or a list of texts.
func (d *decoder) texts(n ast.Node, key string) ([]string, error) {
	if seq, ok := d.resolve(n).(*ast.SequenceNode); ok {
		out := make([]string, 0, len(seq.Values))
		for i, v := range seq.Values {
			s, err := d.text(v, index(key, i))
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, d.errf(n, key, "the list is empty")
		}
		return out, nil
	}
	switch d.resolve(n).(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
	default:
		return nil, d.errf(n, key, "want a string or a list of strings, got %s", yamlx.Kind(d.resolve(n)))
	}
	s, err := d.text(n, key)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func (d *decoder) float(n ast.Node, key string) (float64, error) {
	switch v := d.resolve(n).(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), nil
		case uint64:
			return float64(x), nil
		}
	case *ast.FloatNode:
		if math.IsInf(v.Value, 0) || math.IsNaN(v.Value) {
			return 0, d.errf(n, key, "want a finite number, got %s", v.GetToken().Value)
		}
		return v.Value, nil
	case *ast.InfinityNode, *ast.NanNode:
		return 0, d.errf(n, key, "want a finite number, got %s", v.GetToken().Value)
	case *ast.StringNode:
		// go-yaml leaves some plain numbers as strings (1e308); a quoted
		// string stays a string.
		if tk := v.GetToken(); tk != nil && tk.Type == token.StringType {
			f, err := strconv.ParseFloat(v.Value, 64)
			if err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, nil
			}
			if errors.Is(err, strconv.ErrRange) {
				return 0, d.errf(n, key, "want a finite number, got %s (out of range)", v.Value)
			}
		}
	}
	return 0, d.errf(n, key, "want a number, got %s", yamlx.Kind(d.resolve(n)))
}

func (d *decoder) integer(n ast.Node, key string) (int, error) {
	v, ok := d.resolve(n).(*ast.IntegerNode)
	if !ok {
		return 0, d.errf(n, key, "want a whole number, got %s", yamlx.Kind(d.resolve(n)))
	}
	switch x := v.Value.(type) {
	case int64:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return int(x), nil
		}
	case uint64:
		if x <= math.MaxInt32 {
			return int(x), nil
		}
	}
	return 0, d.errf(n, key, "the number %s is out of range", v.GetToken().Value)
}

func (d *decoder) boolean(n ast.Node, key string) (bool, error) {
	v, ok := d.resolve(n).(*ast.BoolNode)
	if !ok {
		return false, d.errf(n, key, "want true or false, got %s", yamlx.Kind(d.resolve(n)))
	}
	return v.Value, nil
}

// json converts a YAML value to compact JSON, keeping mapping keys in
// document order so that details read like the file.
func (d *decoder) json(n ast.Node, key string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := d.writeJSON(&buf, n, key, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (d *decoder) writeJSON(buf *bytes.Buffer, n ast.Node, key string, depth int) error {
	if depth > 100 {
		return d.errf(n, key, "the value is nested too deeply")
	}
	r := d.resolve(n)
	switch v := r.(type) {
	case nil, *ast.NullNode:
		buf.WriteString("null")
	case *ast.BoolNode:
		buf.WriteString(strconv.FormatBool(v.Value))
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			buf.WriteString(strconv.FormatInt(x, 10))
		case uint64:
			buf.WriteString(strconv.FormatUint(x, 10))
		default:
			return d.errf(n, key, "cannot read the number %s", v.GetToken().Value)
		}
	case *ast.FloatNode:
		buf.WriteString(strconv.FormatFloat(v.Value, 'g', -1, 64))
	case *ast.InfinityNode, *ast.NanNode:
		return d.errf(n, key, "%s has no JSON equivalent", v.GetToken().Value)
	case *ast.StringNode, *ast.LiteralNode:
		s, _ := d.str(v, key)
		raw, _ := json.Marshal(s)
		buf.Write(raw)
	case *ast.SequenceNode:
		buf.WriteByte('[')
		for i, item := range v.Values {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := d.writeJSON(buf, item, index(key, i), depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case ast.MapNode:
		entries, err := d.mapping(r, key)
		if err != nil {
			return err
		}
		buf.WriteByte('{')
		for i, e := range entries {
			if i > 0 {
				buf.WriteByte(',')
			}
			raw, _ := json.Marshal(e.key)
			buf.Write(raw)
			buf.WriteByte(':')
			if err := d.writeJSON(buf, e.val, join(key, e.key), depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return d.errf(n, key, "cannot use %s here", yamlx.Kind(v))
	}
	return nil
}
