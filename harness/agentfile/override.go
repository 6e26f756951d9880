package agentfile

import (
	"maps"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/internal/yamlx"
)

// Override returns the agent with the keys of another agent mapping laid
// over its own: the mapping at key of the YAML document doc, such as a
// suite case's agent:. It takes the keys of an agent file; each key it gives
// replaces the agent's value of that key whole (a tools list replaces the
// tools, a files mapping the files), and the keys it leaves out are kept.
// The merged agent is validated as one, and each problem is reported where
// its key was written: in the override for the keys it gave, in the agent
// file for the others. Relative paths resolve against the file that wrote
// them. The receiver is not changed.
func (af *File) Override(doc *yamlx.Doc, key string) (*File, error) {
	over, err := decodeRaw(doc, key, af.reg)
	if err != nil {
		return nil, err
	}
	merged := *af
	merged.overrides = maps.Clone(af.overrides)
	if merged.overrides == nil {
		merged.overrides = map[string]location{}
	}
	dst, src := reflect.ValueOf(&merged).Elem(), reflect.ValueOf(over).Elem()
	for _, k := range mappingKeys(doc.Node(key)) {
		i, ok := fileFields()[k]
		if !ok {
			continue // decodeRaw has rejected unknown keys
		}
		dst.Field(i).Set(src.Field(i))
		merged.overrides[k] = location{doc: doc, key: key}
	}
	if err := merged.validate(); err != nil {
		return nil, err
	}
	return &merged, nil
}

// OverrideKeys lists the top-level keys an override replaced, in order of
// the File's fields.
func (af *File) OverrideKeys() []string {
	var out []string
	if len(af.overrides) == 0 {
		// Most files override nothing; an eval run asks once per cell.
		return out
	}
	t := reflect.TypeOf(File{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if _, ok := af.overrides[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// fileFields maps each top-level key of an agent file to its field of File.
func fileFields() map[string]int {
	out := map[string]int{}
	t := reflect.TypeOf(File{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out[name] = i
		}
	}
	return out
}

// mappingKeys lists a mapping node's keys in document order.
func mappingKeys(n ast.Node) []string {
	m, ok := n.(ast.MapNode)
	if !ok {
		return nil
	}
	var out []string
	it := m.MapRange()
	for it.Next() {
		out = append(out, it.Key().GetToken().Value)
	}
	return out
}
