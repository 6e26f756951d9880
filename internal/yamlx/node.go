package yamlx

import (
	"errors"
	"fmt"
	"strings"

	yamlv4 "go.yaml.in/yaml/v4"
	"go.yaml.in/yaml/v4/plugin/loaderlimits"
)

// LoadNode parses one YAML document with go.yaml.in/yaml/v4 (the library
// cassettes are read with) into its node tree, bounded like ParseFile by
// lim: the size first, the depth while parsing (yaml/v4's own check, at
// lim.MaxDepth), the aliases on the tree before anything decodes it. Its
// errors are *Error. An empty document is a zero node.
func LoadNode(file string, data []byte, lim Limits, sizeVar string) (*yamlv4.Node, error) {
	if err := CheckSize(file, data, lim, sizeVar); err != nil {
		return nil, err
	}
	var n yamlv4.Node
	err := yamlv4.Load(StripBOM(data), &n, yamlv4.WithV3Defaults(),
		yamlv4.WithPlugin(loaderlimits.New(loaderlimits.DepthValue(lim.MaxDepth))))
	if err != nil && strings.Contains(err.Error(), "no documents") {
		// An empty file is an empty document, for the caller to judge.
		return &yamlv4.Node{}, nil
	}
	if err != nil {
		var le *yamlv4.LoadError
		if errors.As(err, &le) {
			msg := le.Message
			if strings.Contains(msg, "exceeded max depth") {
				msg = fmt.Sprintf("the nesting of mappings and lists exceeds the limit of %d levels (set %s to raise it)", lim.MaxDepth, EnvMaxDepth)
			}
			return nil, &Error{File: file, Line: le.Mark.Line, Column: le.Mark.Column, Msg: msg}
		}
		if strings.Contains(err.Error(), "no documents") {
			return &yamlv4.Node{}, nil
		}
		return nil, &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	w := &nodeWalk{anchors: map[*yamlv4.Node]int64{}, max: lim.MaxAliasBytes}
	w.cost(&n)
	if w.over != nil {
		return nil, &Error{File: file, Line: w.over.Line, Column: w.over.Column, Msg: fmt.Sprintf("the aliases expand to more than %s, which exceeds the limit for what aliases may add (set %s to raise it)", sizeWords(lim.MaxAliasBytes), EnvMaxAliasBytes)}
	}
	return &n, nil
}

// nodeWalk is aliasWalk on a yaml/v4 tree, where an alias points at its
// anchored node.
type nodeWalk struct {
	anchors map[*yamlv4.Node]int64
	added   int64
	max     int64
	over    *yamlv4.Node
}

func (w *nodeWalk) cost(n *yamlv4.Node) int64 {
	if n == nil || w.over != nil {
		return 0
	}
	if n.Kind == yamlv4.AliasNode {
		c, ok := w.anchors[n.Alias]
		if !ok {
			// An alias to an anchor being defined (a cycle) or not yet
			// walked costs what the anchor costs literally.
			c = nodeCost
		}
		w.added = add(w.added, c)
		if w.added > w.max {
			w.over = n
		}
		return c
	}
	c := int64(nodeCost + len(n.Value))
	for _, ch := range n.Content {
		c = add(c, w.cost(ch))
	}
	if n.Anchor != "" {
		w.anchors[n] = c
	}
	return c
}
