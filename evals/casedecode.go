package evals

import "github.com/goccy/go-yaml/ast"

// decodeCase decodes one entry of the cases list into rc. go-yaml decodes
// a struct by building its field map by reflection and converting the
// whole entry to Go values first, per entry: for a suite of hundreds of
// cases that was most of its loading time, and loading comes before any
// cell runs. The usual entry, a plain mapping of the keys readPlainCase
// knows, is read by hand instead; any other (another key, an anchor, an
// alias or a tag anywhere in it, a duplicate key, a value of another
// kind) goes to go-yaml, for the same values and the same errors.
func (p *parser) decodeCase(item ast.Node, rc *rawCase) error {
	if readPlainCase(item, rc) {
		return nil
	}
	*rc = rawCase{}
	return p.doc.DecodeNode(item, rc)
}

// readPlainCase fills rc from item as go-yaml's strict decoder would, and
// reports false, leaving rc partly filled, when it cannot be sure to.
func readPlainCase(item ast.Node, rc *rawCase) bool {
	m, ok := item.(ast.MapNode)
	if !ok {
		return false
	}
	seen := map[string]bool{}
	it := m.MapRange()
	for it.Next() {
		k, ok := it.Key().(*ast.StringNode)
		if !ok || seen[k.Value] {
			return false
		}
		seen[k.Value] = true
		v := it.Value()
		switch k.Value {
		case "id":
			ok = plainString(v, &rc.ID)
		case "cassette":
			ok = plainString(v, &rc.Cassette)
		case "input":
			ok = plainNode(v, &rc.Input)
		case "rubric":
			ok = plainNode(v, &rc.Rubric)
		case "checks":
			ok = plainNode(v, &rc.Checks)
		case "expect":
			ok = plainNode(v, &rc.Expect)
		case "agent":
			ok = plainNode(v, &rc.Agent)
		case "messages":
			ok = plainNode(v, &rc.Messages)
		case "tags":
			ok = plainStrings(v, &rc.Tags)
		case "models":
			ok = plainStrings(v, &rc.Models)
		case "allow_unused":
			switch b := v.(type) {
			case *ast.NullNode:
				rc.AllowUnused = nil
			case *ast.BoolNode:
				val := b.Value
				rc.AllowUnused = &val
			default:
				ok = false
			}
		default:
			// files, tools and epochs have values of their own types
			// and errors of their own, which go-yaml reports.
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// plainString reads a string value: go-yaml also takes numbers and
// booleans for a string, which are left to it.
func plainString(v ast.Node, dst *string) bool {
	s, ok := v.(*ast.StringNode)
	if ok {
		*dst = s.Value
	}
	return ok
}

// plainNode keeps v for a node field as go-yaml does: a null value leaves
// the field unset.
func plainNode(v ast.Node, dst *node) bool {
	if !plainTree(v) {
		return false
	}
	if _, isNull := v.(*ast.NullNode); !isNull {
		dst.n = v
	}
	return true
}

// plainStrings reads a list of strings; null leaves the list nil, and an
// empty list is an empty slice, as go-yaml decodes them.
func plainStrings(v ast.Node, dst *[]string) bool {
	switch x := v.(type) {
	case *ast.NullNode:
		*dst = nil
		return true
	case *ast.SequenceNode:
		out := make([]string, 0, len(x.Values))
		for _, e := range x.Values {
			s, ok := e.(*ast.StringNode)
			if !ok {
				return false
			}
			out = append(out, s.Value)
		}
		*dst = out
		return true
	}
	return false
}

// plainTree reports whether n holds no anchor, alias, tag or merge key:
// converting such a tree to Go values cannot fail, so go-yaml's decoder
// would take it as it is.
func plainTree(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.AnchorNode, *ast.AliasNode, *ast.TagNode, *ast.MergeKeyNode:
		return false
	case *ast.MappingNode:
		for _, v := range x.Values {
			if !plainTree(v) {
				return false
			}
		}
	case *ast.MappingValueNode:
		return plainTree(x.Key) && plainTree(x.Value)
	case *ast.MappingKeyNode:
		return plainTree(x.Value)
	case *ast.SequenceNode:
		for _, v := range x.Values {
			if !plainTree(v) {
				return false
			}
		}
	}
	return true
}
