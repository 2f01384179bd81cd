package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// node is a YAML value with its position, independent of the YAML library:
// the loader reads scenarios from nodes and reports every problem at the
// node's line and column.
type node struct {
	kind  nodeKind
	line  int
	col   int
	value any // scalars: string, int64, float64, bool or nil
	// mapping entries in file order; sequence items.
	keys  []*node
	vals  []*node
	items []*node
}

type nodeKind uint8

const (
	scalarNode nodeKind = iota + 1
	mapNode
	seqNode
)

func (n *node) describe() string {
	switch n.kind {
	case mapNode:
		return "a mapping"
	case seqNode:
		return "a sequence"
	}
	switch v := n.value.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return "the boolean " + strconv.FormatBool(v)
	case int64:
		return "the number " + strconv.FormatInt(v, 10)
	case float64:
		return "the number " + strconv.FormatFloat(v, 'g', -1, 64)
	}
	return "a value"
}

// entry returns the value under a key, or nil.
func (n *node) entry(key string) (k, v *node) {
	for i, kn := range n.keys {
		if s, ok := kn.value.(string); ok && s == key {
			return kn, n.vals[i]
		}
	}
	return nil, nil
}

// toAny converts a node to the JSON-compatible Go value: maps, slices,
// strings, float64 or int64 numbers, booleans, nil.
func (n *node) toAny() any {
	switch n.kind {
	case mapNode:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[scalarString(k)] = n.vals[i].toAny()
		}
		return m
	case seqNode:
		a := make([]any, len(n.items))
		for i, it := range n.items {
			a[i] = it.toAny()
		}
		return a
	}
	return n.value
}

func scalarString(n *node) string {
	switch v := n.value.(type) {
	case string:
		return v
	case nil:
		return "null"
	default:
		return fmt.Sprint(v)
	}
}

// posError is a problem at a position of a file.
type posError struct {
	line, col int
	msg       string
}

// parseYAML parses one YAML document into nodes. A syntax error carries the
// line and column the parser stopped at.
func parseYAML(src []byte) (*node, error) {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			return nil, &posError{line: se.Token.Position.Line, col: se.Token.Position.Column, msg: "YAML syntax: " + se.Message}
		}
		return nil, &posError{line: 1, col: 1, msg: "YAML: " + err.Error()}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, &posError{line: 1, col: 1, msg: "the file is empty; a scenario needs at least a name, agents and a run"}
	}
	if len(f.Docs) > 1 {
		d := f.Docs[1]
		line, col := 1, 1
		if d.Start != nil {
			line, col = d.Start.Position.Line, d.Start.Position.Column
		}
		return nil, &posError{line: line, col: col, msg: "a scenario file holds one YAML document"}
	}
	c := converter{anchors: map[string]*node{}}
	return c.convert(f.Docs[0].Body)
}

type converter struct {
	anchors map[string]*node
	depth   int
}

func (c *converter) convert(n ast.Node) (*node, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > 200 {
		tok := n.GetToken()
		return nil, &posError{line: tok.Position.Line, col: tok.Position.Column, msg: "YAML nested too deeply"}
	}
	tok := n.GetToken()
	at := func(k nodeKind) *node {
		if tok == nil {
			return &node{kind: k, line: 1, col: 1}
		}
		return &node{kind: k, line: tok.Position.Line, col: tok.Position.Column}
	}
	switch t := n.(type) {
	case *ast.MappingNode:
		out := at(mapNode)
		for _, mv := range t.Values {
			if err := c.addEntry(out, mv); err != nil {
				return nil, err
			}
		}
		if len(out.keys) > 0 && !t.IsFlowStyle {
			out.line, out.col = out.keys[0].line, out.keys[0].col
		}
		return out, nil
	case *ast.MappingValueNode:
		out := at(mapNode)
		if err := c.addEntry(out, t); err != nil {
			return nil, err
		}
		out.line, out.col = out.keys[0].line, out.keys[0].col
		return out, nil
	case *ast.SequenceNode:
		out := at(seqNode)
		for _, v := range t.Values {
			item, err := c.convert(v)
			if err != nil {
				return nil, err
			}
			out.items = append(out.items, item)
		}
		return out, nil
	case *ast.StringNode:
		out := at(scalarNode)
		out.value = t.Value
		return out, nil
	case *ast.LiteralNode:
		out := at(scalarNode)
		out.value = t.Value.Value
		return out, nil
	case *ast.IntegerNode:
		out := at(scalarNode)
		switch v := t.Value.(type) {
		case int64:
			out.value = v
		case uint64:
			if v > math.MaxInt64 {
				out.value = float64(v)
			} else {
				out.value = int64(v)
			}
		default:
			out.value = fmt.Sprint(v)
		}
		return out, nil
	case *ast.FloatNode:
		out := at(scalarNode)
		out.value = t.Value
		return out, nil
	case *ast.InfinityNode:
		return nil, &posError{line: tok.Position.Line, col: tok.Position.Column, msg: "infinity is not a JSON value"}
	case *ast.NanNode:
		return nil, &posError{line: tok.Position.Line, col: tok.Position.Column, msg: "NaN is not a JSON value"}
	case *ast.BoolNode:
		out := at(scalarNode)
		out.value = t.Value
		return out, nil
	case *ast.NullNode:
		return at(scalarNode), nil
	case *ast.AnchorNode:
		v, err := c.convert(t.Value)
		if err != nil {
			return nil, err
		}
		c.anchors[t.Name.GetToken().Value] = v
		return v, nil
	case *ast.AliasNode:
		name := t.Value.GetToken().Value
		v, ok := c.anchors[name]
		if !ok {
			return nil, &posError{line: tok.Position.Line, col: tok.Position.Column, msg: fmt.Sprintf("alias *%s has no anchor before it", name)}
		}
		return v, nil
	case *ast.TagNode:
		v, err := c.convert(t.Value)
		if err != nil {
			return nil, err
		}
		if t.Start != nil && t.Start.Value == "!!str" && v.kind == scalarNode {
			v.value = scalarString(v)
		}
		return v, nil
	case *ast.CommentGroupNode:
		return at(scalarNode), nil
	}
	return nil, &posError{line: tok.Position.Line, col: tok.Position.Column, msg: fmt.Sprintf("unsupported YAML construct %s", n.Type())}
}

func (c *converter) addEntry(out *node, mv *ast.MappingValueNode) error {
	if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
		tok := mv.Key.GetToken()
		return &posError{line: tok.Position.Line, col: tok.Position.Column, msg: "merge keys (<<) are not supported in scenario files"}
	}
	k, err := c.convert(mv.Key)
	if err != nil {
		return err
	}
	if k.kind != scalarNode {
		return &posError{line: k.line, col: k.col, msg: "a mapping key must be a plain scalar"}
	}
	k.value = scalarString(k)
	v, err := c.convert(mv.Value)
	if err != nil {
		return err
	}
	out.keys = append(out.keys, k)
	out.vals = append(out.vals, v)
	return nil
}

func (e *posError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg) }

// toJSON renders a node as JSON, keeping mapping keys in file order, so that
// a scripted output is exactly what the file says.
func (n *node) toJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := n.writeJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (n *node) writeJSON(b *bytes.Buffer) error {
	switch n.kind {
	case mapNode:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(scalarString(k))
			b.Write(kb)
			b.WriteByte(':')
			if err := n.vals[i].writeJSON(b); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case seqNode:
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := it.writeJSON(b); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		v, err := json.Marshal(n.value)
		if err != nil {
			return err
		}
		b.Write(v)
	}
	return nil
}
