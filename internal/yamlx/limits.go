package yamlx

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Limits bound what one YAML file may cost before it is parsed and before
// its aliases are expanded: a small file must not be able to take the
// process down (a chain of aliases grows ninefold a level, thousands of
// nested brackets make the parser recurse and copy).
type Limits struct {
	// MaxBytes is the largest file read.
	MaxBytes int64
	// MaxDepth is the deepest nesting of mappings and lists.
	MaxDepth int
	// MaxAliasBytes is how much the aliases may add to the document when
	// they are expanded: each alias costs what its anchor holds, counted
	// as its scalars' text plus 16 bytes a node, nested aliases included.
	MaxAliasBytes int64
}

// The defaults are far above what a hand-written suite, agent file, rubric
// or profile needs and far below what hurts; cassettes hold recorded
// bodies, so they may be bigger.
const (
	DefaultMaxBytes         = 8 << 20
	DefaultMaxDepth         = 100
	DefaultMaxAliasBytes    = 4 << 20
	DefaultCassetteMaxBytes = 64 << 20
)

// The environment variables that override the limits.
const (
	EnvMaxBytes         = "DAGEVAL_YAML_MAX_BYTES"
	EnvMaxDepth         = "DAGEVAL_YAML_MAX_DEPTH"
	EnvMaxAliasBytes    = "DAGEVAL_YAML_MAX_ALIAS_BYTES"
	EnvCassetteMaxBytes = "DAGEVAL_CASSETTE_MAX_BYTES"
)

// nodeCost is what one node costs in MaxAliasBytes beyond its text: a
// decoded node is a Go value, not only its bytes.
const nodeCost = 16

// UserLimits are the limits for suites, agent files, rubrics and profiles:
// the defaults, overridden by the environment.
func UserLimits() (Limits, error) {
	return fromEnv(Limits{MaxBytes: DefaultMaxBytes, MaxDepth: DefaultMaxDepth, MaxAliasBytes: DefaultMaxAliasBytes}, EnvMaxBytes)
}

// CassetteLimits are the limits for cassettes: a larger size
// (DAGEVAL_CASSETTE_MAX_BYTES), the same depth and alias limits.
func CassetteLimits() (Limits, error) {
	return fromEnv(Limits{MaxBytes: DefaultCassetteMaxBytes, MaxDepth: DefaultMaxDepth, MaxAliasBytes: DefaultMaxAliasBytes}, EnvCassetteMaxBytes)
}

func fromEnv(l Limits, sizeVar string) (Limits, error) {
	for _, v := range []struct {
		name string
		set  func(int64)
	}{
		{sizeVar, func(n int64) { l.MaxBytes = n }},
		{EnvMaxDepth, func(n int64) { l.MaxDepth = int(min(n, math.MaxInt32)) }},
		{EnvMaxAliasBytes, func(n int64) { l.MaxAliasBytes = n }},
	} {
		s := strings.TrimSpace(os.Getenv(v.name))
		if s == "" {
			continue
		}
		n, err := parseSize(s)
		if err != nil {
			return l, fmt.Errorf("%s=%q: %v", v.name, s, err)
		}
		v.set(n)
	}
	return l, nil
}

// parseSize reads a positive whole number, optionally with a KiB, MiB or
// GiB suffix (K, M, G for short).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a positive whole number, optionally with KiB, MiB or GiB")
	}
	return n * mult, nil
}

// bom is the UTF-8 byte order mark some editors put at a file's start.
var bom = []byte("\ufeff")

// StripBOM drops a UTF-8 byte order mark at the start of data.
func StripBOM(data []byte) []byte { return bytes.TrimPrefix(data, bom) }

// CheckSize refuses data larger than lim.MaxBytes, at the line and column
// where the limit is crossed.
func CheckSize(file string, data []byte, lim Limits, envVar string) error {
	if int64(len(data)) <= lim.MaxBytes {
		return nil
	}
	line, col := lineCol(data, lim.MaxBytes)
	return &Error{File: file, Line: line, Column: col, Msg: fmt.Sprintf("the file is %s, which exceeds the limit of %s for a YAML file (set %s to raise it)", sizeWords(int64(len(data))), sizeWords(lim.MaxBytes), envVar)}
}

// ParseFile is go-yaml's parser.ParseBytes bounded by the user limits: the
// size before anything is read, the nesting depth on the tokens before they
// are parsed, and the aliases' expansion on the tree before anything
// decodes it. A byte order mark at the start is dropped.
func ParseFile(file string, data []byte) (*ast.File, error) {
	lim, err := UserLimits()
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	return ParseFileWith(file, data, lim)
}

// ParseFileWith is ParseFile with the given limits.
func ParseFileWith(file string, data []byte, lim Limits) (*ast.File, error) {
	if err := CheckSize(file, data, lim, EnvMaxBytes); err != nil {
		return nil, err
	}
	tokens := lexer.Tokenize(string(StripBOM(data)))
	if err := checkDepth(file, tokens, lim.MaxDepth); err != nil {
		return nil, err
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, wrap(file, err, nil)
	}
	if err := checkAliases(file, f, lim.MaxAliasBytes); err != nil {
		return nil, err
	}
	return f, nil
}

// checkDepth estimates the nesting on the tokens, before the parser (whose
// recursion is what deep nesting exhausts) sees them: a flow collection
// nests one level per bracket, a block one level per indentation step of
// its keys and list dashes.
func checkDepth(file string, tokens token.Tokens, maxDepth int) error {
	type level struct {
		col int
		key bool
	}
	var block []level
	flow := 0
	for _, tk := range tokens {
		if flow == 0 && tk.Position != nil {
			dash := tk.Type == token.SequenceEntryType || tk.Type == token.MappingKeyType
			key := tk.Next != nil && tk.Next.Type == token.MappingValueType
			if dash || key {
				col := tk.Position.Column
				// A dash under a key at the same column is the key's value.
				for len(block) > 0 {
					top := block[len(block)-1]
					if top.col < col || (top.col == col && top.key && dash) {
						break
					}
					block = block[:len(block)-1]
				}
				block = append(block, level{col: col, key: key})
			}
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
		if len(block)+flow > maxDepth {
			line, col := 0, 0
			if tk.Position != nil {
				line, col = tk.Position.Line, tk.Position.Column
			}
			return &Error{File: file, Line: line, Column: col, Msg: fmt.Sprintf("the nesting of mappings and lists exceeds the limit of %d levels (set %s to raise it)", maxDepth, EnvMaxDepth)}
		}
	}
	return nil
}

// checkAliases adds up what the aliases stand for, each anchor's cost
// counted once (so that a chain of aliases costs its walk, not its
// expansion), and refuses the document at the alias that crosses the limit.
func checkAliases(file string, f *ast.File, maxAlias int64) error {
	w := &aliasWalk{anchors: map[string]int64{}, max: maxAlias}
	for _, doc := range f.Docs {
		if doc == nil {
			continue
		}
		w.cost(doc.Body)
		if w.over != nil {
			p := pos(w.over)
			return &Error{File: file, Line: p.Line, Column: p.Column, Msg: fmt.Sprintf("the aliases expand to more than %s, which exceeds the limit for what aliases may add (set %s to raise it)", sizeWords(maxAlias), EnvMaxAliasBytes)}
		}
	}
	return nil
}

type aliasWalk struct {
	anchors map[string]int64
	added   int64
	max     int64
	over    ast.Node
}

// add is saturating addition: a chain of doubling aliases overflows int64.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (w *aliasWalk) cost(n ast.Node) int64 {
	if n == nil || w.over != nil {
		return 0
	}
	switch x := n.(type) {
	case *ast.MappingNode:
		c := int64(nodeCost)
		for _, v := range x.Values {
			c = add(c, w.cost(v))
		}
		return c
	case *ast.MappingValueNode:
		return add(w.cost(x.Key), w.cost(x.Value))
	case *ast.SequenceNode:
		c := int64(nodeCost)
		for _, v := range x.Values {
			c = add(c, w.cost(v))
		}
		return c
	case *ast.AnchorNode:
		c := w.cost(x.Value)
		if x.Name != nil {
			w.anchors[x.Name.GetToken().Value] = c
		}
		return c
	case *ast.AliasNode:
		name := ""
		if x.Value != nil {
			name = x.Value.GetToken().Value
		}
		c := w.anchors[name]
		w.added = add(w.added, c)
		if w.added > w.max && w.over == nil {
			w.over = x
		}
		return c
	case *ast.TagNode:
		return w.cost(x.Value)
	case *ast.MappingKeyNode:
		return w.cost(x.Value)
	case *ast.CommentGroupNode:
		return 0
	}
	if tk := n.GetToken(); tk != nil {
		return int64(nodeCost + len(tk.Value))
	}
	return nodeCost
}

// lineCol is the 1-based line and column of the byte at offset.
func lineCol(data []byte, offset int64) (line, col int) {
	offset = min(offset, int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// sizeWords renders a byte count for people: "8 MiB", "4.5 MiB", "900 bytes".
func sizeWords(n int64) string {
	switch {
	case n >= 1<<30:
		return trimUnit(float64(n)/(1<<30), "GiB")
	case n >= 1<<20:
		return trimUnit(float64(n)/(1<<20), "MiB")
	case n >= 1<<10:
		return trimUnit(float64(n)/(1<<10), "KiB")
	}
	return fmt.Sprintf("%d bytes", n)
}

func trimUnit(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + unit
}
