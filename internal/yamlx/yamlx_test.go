package yamlx

import (
	"errors"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type item struct {
	Name  string `yaml:"name"`
	Count int    `yaml:"count"`
}

type doc struct {
	Title string `yaml:"title"`
	Items []item `yaml:"items"`
	Kind  kind   `yaml:"kind"`
}

type kind string

func (k *kind) UnmarshalYAML(n ast.Node) error {
	s, ok := n.(*ast.StringNode)
	if !ok || (s.Value != "a" && s.Value != "b") {
		return NodeError(n, "want a or b")
	}
	*k = kind(s.Value)
	return nil
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown key", "title: x\nitems:\n  - name: a\n    colour: red\n", `s.yaml:4:5: items[0].colour: unknown key "colour"`},
		{"wrong type", "title: x\nitems:\n  - name: a\n    count: many\n", "s.yaml:4:12: items[0].count: got string, want an integer"},
		{"custom", "kind: c\n", "s.yaml:1:7: kind: want a or b"},
		{"syntax", "title: [x\n", "s.yaml:"},
		{"duplicate", "title: x\ntitle: y\n", "s.yaml:2:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse("s.yaml", []byte(tt.src))
			if err == nil {
				var v doc
				err = d.Decode(&v)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestErrorfFindsKeys(t *testing.T) {
	d, err := Parse("s.yaml", []byte("title: x\nitems:\n  - name: a\n  - name: b\n    count: 2\n"))
	require.NoError(t, err)
	var v doc
	require.NoError(t, d.Decode(&v))
	assert.Equal(t, "s.yaml:5:5: items[1].count: too many", d.Errorf("items[1].count", "too many").Error())
	assert.Equal(t, "s.yaml:4:5: items[1].missing: absent", d.Errorf("items[1].missing", "absent").Error(), "falls back to the parent")
	assert.True(t, d.Has("items[1].count"))
	assert.False(t, d.Has("items[0].count"))
	assert.NotNil(t, d.Node("items[1].name"))

	// Reduced to its positions, the document places keys as before and
	// holds no syntax tree.
	p := d.Positions()
	assert.Equal(t, d.Errorf("items[1].count", "too many"), p.Errorf("items[1].count", "too many"))
	assert.Equal(t, d.Errorf("items[1].missing", "absent"), p.Errorf("items[1].missing", "absent"))
	assert.True(t, p.Has("items[1].count"))
	assert.False(t, p.Has("items[0].count"))
	assert.Nil(t, p.Root)
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		name string
		err  Error
		want string
	}{
		{"everything", Error{File: "s.yaml", Line: 3, Column: 7, Key: "cases[0].id", Msg: "bad"}, "s.yaml:3:7: cases[0].id: bad"},
		{"no key", Error{File: "s.yaml", Line: 3, Column: 7, Msg: "bad"}, "s.yaml:3:7: bad"},
		{"no position", Error{File: "s.yaml", Key: "id", Msg: "bad"}, "s.yaml: id: bad"},
		{"line without column", Error{File: "s.yaml", Line: 3, Msg: "bad"}, "s.yaml:3: bad"},
		{"no file", Error{Line: 3, Column: 7, Key: "id", Msg: "bad"}, "3:7: id: bad"},
		{"message only", Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestFromError(t *testing.T) {
	_, perr := parser.ParseBytes([]byte("a: [1\nb: 2\n"), 0)
	require.Error(t, perr)
	e := FromError("s.yaml", perr)
	assert.Equal(t, "s.yaml", e.File)
	assert.Positive(t, e.Line)
	assert.Positive(t, e.Column)
	assert.NotContains(t, e.Msg, "s.yaml", "the message is go-yaml's, without a position of its own")

	plain := FromError("s.yaml", errors.New("disk on fire"))
	assert.Equal(t, "s.yaml: disk on fire", plain.Error())
}

func TestPosition(t *testing.T) {
	d, err := Parse("s.yaml", []byte("title: x\nitems:\n  - name: a\n"))
	require.NoError(t, err)
	l, c := Position(d.Node("items[0].name"))
	assert.Equal(t, [2]int{3, 11}, [2]int{l, c})
	l, c = Position(nil)
	assert.Equal(t, [2]int{0, 0}, [2]int{l, c})
}

func TestKind(t *testing.T) {
	d, err := Parse("s.yaml", []byte("m: {a: 1}\nl: [1]\ns: x\nb: |\n  x\nn: 1.5\ni: .inf\nt: true\nz: null\n"))
	require.NoError(t, err)
	for path, want := range map[string]string{
		"m": "a mapping", "l": "a list", "s": "a string", "b": "a string", "n": "a number",
		"i": "a number", "t": "a boolean", "z": "nothing (null)",
	} {
		assert.Equal(t, want, Kind(d.Node(path)), path)
	}
	assert.Equal(t, "nothing (null)", Kind(nil))
}

// An alias may name an anchor in another part of the document, and a value
// that is wrong only where an alias puts it is reported at the alias, in
// YAML's words: before, the case's tags failed with "could not find alias",
// and a nested list was "got []interface {}".
func TestAliasesAcrossParts(t *testing.T) {
	type item struct {
		Name string   `yaml:"name"`
		Tags []string `yaml:"tags"`
		Spec any      `yaml:"spec"`
	}
	src := "items:\n  - {name: a, tags: &t [x, y], spec: &s [{k: v}]}\n  - {name: b, tags: *t}\n  - {name: c, tags: *s}\n  - {name: d, tags: [[z]]}\n"
	d, err := Parse("s.yaml", []byte(src))
	require.NoError(t, err)
	items := d.Node("items").(*ast.SequenceNode).Values
	var b item
	require.NoError(t, d.DecodeNode(items[1], &b))
	assert.Equal(t, []string{"x", "y"}, b.Tags)
	var c item
	err = d.DecodeNode(items[2], &c)
	require.Error(t, err)
	assert.Equal(t, "s.yaml:4:21: items[2].tags: through alias *s (anchored at line 2): items[0].spec[0]: got a mapping, want a string", err.Error())
	var e item
	err = d.DecodeNode(items[3], &e)
	require.Error(t, err)
	assert.Equal(t, "s.yaml:5:22: items[3].tags[0]: got a list, want a string", err.Error())
	assert.NotContains(t, err.Error(), "interface")
}

// go-yaml holds an unsigned number as a uint64: Int takes it (epochs: 2 was
// refused as "2 is out of range"), and still refuses what is not whole.
func TestIntTakesUnsignedNumbers(t *testing.T) {
	for src, want := range map[string]string{"e: 2\n": "", "e: -3\n": "", "e: 2.9\n": "s.yaml:1:4: e: want a whole number, got 2.9", "e: 3000000000\n": "s.yaml:1:4: e: 3000000000 is out of range"} {
		d, err := Parse("s.yaml", []byte(src))
		require.NoError(t, err)
		var v struct {
			E Int `yaml:"e"`
		}
		err = d.Decode(&v)
		if want == "" {
			require.NoError(t, err, src)
			assert.NotZero(t, v.E, src)
			continue
		}
		require.Error(t, err, src)
		assert.Equal(t, want, err.Error(), src)
	}
}
