// Package yamlx decodes user-authored YAML strictly and reports every problem with its file, line, column and key.
package yamlx

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Error is a problem at a place in a YAML file.
type Error struct {
	File   string
	Line   int
	Column int
	// Key is the path of the offending key, e.g. "cases[2].checks[0].tool_called".
	Key string
	Msg string
}

// Error renders "file:line:col: key: msg", leaving out what is unknown: an
// empty file or key, a zero line or column.
func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString(e.File)
	if e.Line > 0 {
		if sb.Len() > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			sb.WriteByte(':')
			sb.WriteString(strconv.Itoa(e.Column))
		}
	}
	if sb.Len() > 0 {
		sb.WriteString(": ")
	}
	if e.Key != "" {
		sb.WriteString(e.Key)
		sb.WriteString(": ")
	}
	sb.WriteString(e.Msg)
	return sb.String()
}

// Doc is a parsed YAML document that remembers where each key is.
type Doc struct {
	File  string
	Root  ast.Node
	paths map[string]*token.Position // path → position of its key (or value for list items)
	// byPos maps the position of a token to its innermost path, to name
	// the key of an error go-yaml places at a token. Only errors need it,
	// and it holds an entry for every token of the file, so a parsed
	// document builds it on its first error (see keyAt).
	byPos     map[[2]int]string
	byPosOnce sync.Once
	// lazyPos says byPos is to be built from Root (documents from Parse).
	lazyPos bool
	// dec decodes parts of the document: it has seen the whole of it, so
	// that an alias in one case finds the anchor in another (a decoder
	// given only a part reports "could not find alias").
	dec *yaml.Decoder
	// anchors maps each anchor's name to its value, to move an error found
	// in an anchored value to the alias that brought it where it is wrong.
	anchors map[string]ast.Node
}

// ReadFile parses a YAML file.
func ReadFile(path string) (*Doc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses one YAML document; file names it in errors.
func Parse(file string, data []byte) (*Doc, error) {
	f, err := ParseFile(file, data)
	if err != nil {
		return nil, err
	}
	d := &Doc{File: file, paths: map[string]*token.Position{}, lazyPos: true}
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if d.Root != nil {
			return nil, &Error{File: file, Line: pos(doc.Body).Line, Column: pos(doc.Body).Column, Msg: "the file holds more than one YAML document"}
		}
		d.Root = doc.Body
	}
	if d.Root != nil {
		d.index(d.Root, "")
	}
	return d, nil
}

// Position is the line and column of a node's token (0, 0 when it has none).
func Position(n ast.Node) (line, col int) {
	p := pos(n)
	return p.Line, p.Column
}

func pos(n ast.Node) *token.Position {
	if n == nil {
		return &token.Position{}
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position
	}
	return &token.Position{}
}

// startPos is where a node begins in the text: a block mapping's token is
// its first colon, so use its first key instead.
func startPos(n ast.Node) *token.Position {
	switch x := n.(type) {
	case *ast.MappingNode:
		if len(x.Values) > 0 {
			return pos(x.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return pos(x.Key)
	}
	return pos(n)
}

// index records where each key path is, and the anchors.
func (d *Doc) index(n ast.Node, path string) {
	if n == nil {
		return
	}
	switch x := n.(type) {
	case *ast.MappingNode:
		for _, v := range x.Values {
			d.index(v, path)
		}
	case *ast.MappingValueNode:
		child := childPath(path, x.Key)
		d.paths[child] = pos(x.Key)
		d.index(x.Value, child)
	case *ast.SequenceNode:
		for i, v := range x.Values {
			child := path + "[" + strconv.Itoa(i) + "]"
			d.paths[child] = startPos(v)
			d.index(v, child)
		}
	case *ast.TagNode:
		d.index(x.Value, path)
	case *ast.AnchorNode:
		if d.anchors == nil {
			d.anchors = map[string]ast.Node{}
		}
		d.anchors[x.Name.GetToken().Value] = x.Value
		d.index(x.Value, path)
	}
}

// childPath is the path of a mapping's key below path.
func childPath(path string, k ast.MapKeyNode) string {
	key := k.String()
	if s, ok := k.(*ast.StringNode); ok {
		key = s.Value
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// keyAt is the innermost key path of the token at line:col ("" when none).
func (d *Doc) keyAt(line, col int) string {
	d.byPosOnce.Do(func() {
		if d.lazyPos && d.Root != nil {
			d.byPos = map[[2]int]string{}
			d.indexPositions(d.Root, "")
		}
	})
	return d.byPos[[2]int{line, col}]
}

// indexPositions fills byPos, walking the tree as index does.
func (d *Doc) indexPositions(n ast.Node, path string) {
	if n == nil {
		return
	}
	p := pos(n)
	if _, seen := d.byPos[[2]int{p.Line, p.Column}]; !seen || path != "" {
		d.byPos[[2]int{p.Line, p.Column}] = path
	}
	switch x := n.(type) {
	case *ast.MappingNode:
		for _, v := range x.Values {
			d.indexPositions(v, path)
		}
	case *ast.MappingValueNode:
		child := childPath(path, x.Key)
		kp := pos(x.Key)
		d.byPos[[2]int{kp.Line, kp.Column}] = child
		d.indexPositions(x.Value, child)
	case *ast.SequenceNode:
		for i, v := range x.Values {
			d.indexPositions(v, path+"["+strconv.Itoa(i)+"]")
		}
	case *ast.TagNode:
		d.indexPositions(x.Value, path)
	case *ast.AnchorNode:
		d.indexPositions(x.Value, path)
	}
}

// Decode decodes the document into v, refusing unknown keys and duplicate keys.
func (d *Doc) Decode(v any) error {
	if d.Root == nil {
		return nil
	}
	return d.DecodeNode(d.Root, v)
}

// DecodeNode decodes one node (found with Node) into v, strictly. Its
// aliases may name anchors anywhere in the document; a value that is
// wrong only where an alias puts it is reported at the alias.
func (d *Doc) DecodeNode(n ast.Node, v any) error {
	if n == nil {
		return nil
	}
	if d.dec == nil {
		d.dec = yaml.NewDecoder(strings.NewReader(""), yaml.Strict())
		if d.Root != nil && d.anchors != nil {
			// Decoding the whole document once registers every anchor;
			// the limits have bounded what its aliases expand to. A
			// document without anchors (most) skips this second decode.
			var all any
			_ = d.dec.DecodeFromNode(d.Root, &all)
		}
	}
	if err := d.dec.DecodeFromNode(n, v); err != nil {
		return d.atAlias(n, wrap(d.File, err, d))
	}
	return nil
}

// atAlias moves an error inside an anchored value that lies outside n to
// the alias in n that uses it: the anchor's value is fine where it is
// written, and wrong where the alias puts it.
func (d *Doc) atAlias(n ast.Node, e *Error) *Error {
	if e.Line == 0 || d.anchors == nil || within(n, e.Line, e.Column) {
		return e
	}
	var at *ast.AliasNode
	ast.Walk(visitFunc(func(x ast.Node) bool {
		if a, ok := x.(*ast.AliasNode); ok && at == nil {
			if val := d.anchors[a.Value.GetToken().Value]; val != nil && within(val, e.Line, e.Column) {
				at = a
			}
		}
		return at == nil
	}), n)
	if at == nil {
		return e
	}
	p := pos(at)
	key := d.keyAt(p.Line, p.Column)
	name := at.Value.GetToken().Value
	msg := e.Msg
	if e.Key != "" && e.Key != key {
		msg = e.Key + ": " + msg
	}
	return &Error{File: e.File, Line: p.Line, Column: p.Column, Key: key,
		Msg: fmt.Sprintf("through alias *%s (anchored at line %d): %s", name, e.Line, msg)}
}

// within reports whether a node or one below it is at line:col.
func within(n ast.Node, line, col int) bool {
	found := false
	ast.Walk(visitFunc(func(x ast.Node) bool {
		if p := pos(x); p.Line == line && p.Column == col {
			found = true
		}
		return !found
	}), n)
	return found
}

type visitFunc func(ast.Node) bool

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if n == nil || !f(n) {
		return nil
	}
	return f
}

// Node returns the value node at path ("cases[1].input"), or nil.
func (d *Doc) Node(path string) ast.Node {
	if d.Root == nil {
		return nil
	}
	if path == "" {
		return d.Root
	}
	p, err := yaml.PathString("$." + path)
	if err != nil {
		return nil
	}
	n, err := p.FilterNode(d.Root)
	if err != nil {
		return nil
	}
	return n
}

// Has reports whether the document sets path.
func (d *Doc) Has(path string) bool {
	_, ok := d.paths[path]
	return ok
}

// Positions is the document reduced to where its keys are: Errorf and Has
// answer as d's do, and the syntax tree, which holds every token of the
// file, is left to the collector. A loaded file that only reports problems
// at its keys from then on keeps this instead of d.
func (d *Doc) Positions() *Doc { return &Doc{File: d.File, paths: d.paths} }

// Errorf reports a problem with the key at path; the position is the key's
// (or, for a path that is not in the file, its nearest parent's).
func (d *Doc) Errorf(path, format string, args ...any) *Error {
	e := &Error{File: d.File, Key: path, Msg: fmt.Sprintf(format, args...)}
	for p := path; ; {
		if ps, ok := d.paths[p]; ok {
			e.Line, e.Column = ps.Line, ps.Column
			break
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return e
}

// At reports a problem at a node, naming its key when the document knows it.
func (d *Doc) At(n ast.Node, format string, args ...any) *Error {
	p := pos(n)
	return &Error{File: d.File, Line: p.Line, Column: p.Column, Key: d.keyAt(p.Line, p.Column), Msg: fmt.Sprintf(format, args...)}
}

// FromError turns an error from go-yaml's parser or decoder into an *Error
// at the token it names; an error that names none keeps its text.
func FromError(file string, err error) *Error { return wrap(file, err, nil) }

// wrap turns a go-yaml error into an *Error.
func wrap(file string, err error, d *Doc) *Error {
	var own *Error
	if errors.As(err, &own) {
		if own.File == "" {
			own.File = file
		}
		if own.Key == "" && d != nil {
			own.Key = d.keyAt(own.Line, own.Column)
		}
		return own
	}
	var ye interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if errors.As(err, &ye) {
		e := &Error{File: file, Msg: cleanMessage(ye.GetMessage())}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
			if d != nil {
				e.Key = d.keyAt(e.Line, e.Column)
			}
		}
		return e
	}
	return &Error{File: file, Msg: err.Error()}
}

// cleanMessage rewrites go-yaml's Go-centric messages for people who write YAML.
func cleanMessage(m string) string {
	if got, want, ok := strings.Cut(strings.TrimSuffix(m, " is expected"), " was used where "); ok && !strings.Contains(got, " ") && !strings.Contains(want, " ") {
		// "string was used where sequence is expected"
		return fmt.Sprintf("got %s, want %s", nodeWord(got), nodeWord(want))
	}
	if strings.HasPrefix(m, "unknown field ") {
		return strings.Replace(m, "unknown field", "unknown key", 1)
	}
	if i := strings.Index(m, " into Go struct field "); i >= 0 {
		// "cannot unmarshal string into Go struct field Suite.epochs of type int"
		rest := m[i+len(" into Go struct field "):]
		if j := strings.LastIndex(rest, " of type "); j >= 0 {
			want := rest[j+len(" of type "):]
			got := strings.TrimPrefix(m[:i], "cannot unmarshal ")
			if strings.HasPrefix(got, "[]") || strings.HasPrefix(got, "map[") {
				got = goTypeWord(got) // not "[]interface {}"
			}
			return fmt.Sprintf("got %s, want %s", got, goTypeWord(want))
		}
	}
	return m
}

// nodeWord names one of go-yaml's node types.
func nodeWord(t string) string {
	switch t {
	case "sequence":
		return "a list"
	case "mapping":
		return "a mapping"
	case "string":
		return "a string"
	case "int", "integer", "float":
		return "a number"
	case "bool", "boolean":
		return "true or false"
	case "null":
		return "nothing (null)"
	}
	return t
}

func goTypeWord(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	}
	return t
}

// NodeError builds a positioned error inside a custom UnmarshalYAML(ast.Node)
// method; Doc.Decode fills in the file and key.
func NodeError(n ast.Node, format string, args ...any) *Error {
	p := pos(n)
	return &Error{Line: p.Line, Column: p.Column, Msg: fmt.Sprintf(format, args...)}
}

// Kind names a node's type for messages such as "want a list, got a string".
func Kind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "nothing (null)"
	case ast.MapNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.AliasNode:
		return "an alias to an unknown anchor"
	}
	return n.Type().String()
}

// Int is a whole number in a YAML file. go-yaml would truncate 2.9 to 2
// and 0.5 to 0 (and then report "got 0"); Int refuses both with what the
// file says.
type Int int

// UnmarshalYAML accepts integers only.
func (i *Int) UnmarshalYAML(n ast.Node) error {
	if a, ok := n.(*ast.AnchorNode); ok {
		n = a.Value
	}
	if t, ok := n.(*ast.TagNode); ok {
		n = t.Value
	}
	in, ok := n.(*ast.IntegerNode)
	if !ok {
		what := Kind(n)
		switch n.(type) {
		case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode, *ast.StringNode:
			what = strconv.Quote(n.GetToken().Value)
			if _, isStr := n.(*ast.StringNode); !isStr {
				what = n.GetToken().Value
			}
		}
		return NodeError(n, "want a whole number, got %s", what)
	}
	switch v := in.Value.(type) {
	case int64:
		if v > math.MaxInt32 || v < math.MinInt32 {
			return NodeError(n, "%d is out of range", v)
		}
		*i = Int(v)
	case uint64:
		// go-yaml holds a number written without a sign as a uint64.
		if v > math.MaxInt32 {
			return NodeError(n, "%d is out of range", v)
		}
		*i = Int(v)
	default:
		return NodeError(n, "want a whole number, got %s", in.GetToken().Value)
	}
	return nil
}

// BidiControl returns the first bidirectional control character in s
// (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F): in a name they make a
// file or tool read differently on screen from what it is.
func BidiControl(s string) (rune, bool) {
	for _, r := range s {
		if (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F {
			return r, true
		}
	}
	return 0, false
}
