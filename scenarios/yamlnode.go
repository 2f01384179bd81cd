package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
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
		if len(n.keys) == 0 {
			return "an empty mapping"
		}
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
	// A byte order mark, as some editors write, is not part of the first key.
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	if pe := checkText(src); pe != nil {
		return nil, pe
	}
	if pe := prescan(src); pe != nil {
		return nil, pe
	}
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			line, col := tokPos(se.Token)
			return nil, &posError{line: line, col: col, msg: "YAML syntax: " + syntaxMessage(se.Message)}
		}
		return nil, &posError{line: 1, col: 1, msg: "YAML: " + err.Error()}
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		switch d.Body.(type) {
		case *ast.CommentGroupNode, *ast.DirectiveNode:
			// Comments alone, or a %YAML directive before its document.
		default:
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, &posError{line: 1, col: 1, msg: "the file is empty; a scenario needs at least a name, agents and a run"}
	}
	if len(docs) > 1 {
		line, col := 1, 1
		if d := docs[1]; d.Start != nil {
			line, col = tokPos(d.Start)
		} else if tok := d.Body.GetToken(); tok != nil {
			line, col = tokPos(tok)
		}
		return nil, &posError{line: line, col: col, msg: "a second YAML document starts here, but a scenario file holds exactly one; split it into one file per scenario"}
	}
	c := converter{anchors: map[string]*node{}}
	root, err := c.convert(docs[0].Body)
	if err != nil {
		return nil, err
	}
	if c.firstAlias != nil {
		switch e := expandedSize(root, map[*node]expansion{}); {
		case e.values > maxExpanded:
			return nil, &posError{line: c.firstAlias.line, col: c.firstAlias.col,
				msg: fmt.Sprintf("aliases expand this file to more than %d values; a scenario is never that large", maxExpanded)}
		case e.bytes > maxExpandedBytes:
			return nil, &posError{line: c.firstAlias.line, col: c.firstAlias.col,
				msg: fmt.Sprintf("aliases expand this file to more than %d bytes (%d MiB) of text; a scenario is never that large", maxExpandedBytes, maxExpandedBytes>>20)}
		}
	}
	return root, nil
}

// maxExpanded bounds the values a file may expand to through aliases, so
// that a few lines of anchors cannot make the loader build an exponential
// tree (a "billion laughs"); maxExpandedBytes bounds the text they expand
// to, so that a long string aliased many times (3 MB, 50,000 times: 150 GB
// of JSON to send) cannot either.
const (
	maxExpanded      = 200_000
	maxExpandedBytes = 64 << 20
)

// expansion is the size of a tree with every alias expanded: its values,
// and the bytes of its strings and keys.
type expansion struct{ values, bytes int }

// expandedSize measures the tree with every alias expanded, stopping early
// once it passes maxExpanded values or maxExpandedBytes bytes.
func expandedSize(n *node, memo map[*node]expansion) expansion {
	if e, ok := memo[n]; ok {
		return e
	}
	e := expansion{values: 1}
	if s, ok := n.value.(string); ok {
		e.bytes = len(s)
	}
	for _, list := range [][]*node{n.keys, n.vals, n.items} {
		for _, c := range list {
			x := expandedSize(c, memo)
			e.values += x.values
			e.bytes += x.bytes
			if e.values > maxExpanded || e.bytes > maxExpandedBytes {
				break
			}
		}
	}
	e.values, e.bytes = min(e.values, maxExpanded+1), min(e.bytes, maxExpandedBytes+1)
	memo[n] = e
	return e
}

// checkText refuses what YAML does not allow in a file, which the parser
// would otherwise pass on changed or raw: bytes that are not UTF-8 (it
// replaces them with U+FFFD, so what a provider got would not be what the
// file says), and control characters written raw (NUL, ESC, DEL, C1
// controls; tab, line feed and carriage return are text), which YAML writes
// only as escapes in double-quoted strings.
func checkText(src []byte) *posError {
	line, bol := 1, 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n' || (c == '\r' && (i+1 == len(src) || src[i+1] != '\n')):
			line, bol = line+1, i+1
			i++
			continue
		case c == '\t' || c == '\r' || (c >= 0x20 && c < 0x7f):
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		col := utf8.RuneCount(src[bol:i]) + 1
		switch {
		case r == utf8.RuneError && size == 1:
			return &posError{line: line, col: col, msg: fmt.Sprintf("the byte 0x%02x is not UTF-8 text; a scenario file is UTF-8", c)}
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0 && r != 0x85):
			return &posError{line: line, col: col, msg: fmt.Sprintf("a raw control character, %U; YAML writes one only as an escape in a double-quoted string, such as \"\\x%02x\"", r, r)}
		}
		i += size
	}
	return nil
}

// syntaxMessage rewrites the parser's messages where they can say more.
func syntaxMessage(msg string) string {
	if m := duplicateKey.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("key %s appears twice in the same mapping (first at line %s, column %s)", m[1], m[2], m[3])
	}
	if strings.Contains(msg, "'\t'") {
		return strings.ReplaceAll(msg, "'\t'", `'\t' (a tab)`) + "; YAML indents with spaces, never tabs"
	}
	switch msg {
	case "',' or ']' must be specified":
		return msg + "; a [ list is still open here"
	case "',' or '}' must be specified":
		return msg + "; a { mapping is still open here"
	}
	return msg
}

var duplicateKey = regexp.MustCompile(`^mapping key (".*") already defined at \[(\d+):(\d+)\]$`)

func tokPos(tok *token.Token) (int, int) {
	if tok == nil || tok.Position == nil {
		return 1, 1
	}
	return max(tok.Position.Line, 1), max(tok.Position.Column, 1)
}

type converter struct {
	anchors    map[string]*node
	depth      int
	firstAlias *node
}

func (c *converter) convert(n ast.Node) (*node, error) {
	c.depth++
	defer func() { c.depth-- }()
	tok := n.GetToken()
	line, col := tokPos(tok)
	if c.depth > maxDepth {
		return nil, nestedTooDeep(line, col)
	}
	at := func(k nodeKind) *node {
		return &node{kind: k, line: line, col: col}
	}
	switch t := n.(type) {
	case *ast.MappingNode:
		out := at(mapNode)
		seen := make(map[string]*node, len(t.Values))
		for _, mv := range t.Values {
			if err := c.addEntry(out, mv); err != nil {
				return nil, err
			}
			// The parser finds keys written twice; a key is also the
			// same as another when it reaches JSON the same (an alias of
			// the other's text, 1.0 and 1.00), and the JSON sent would
			// hold both while a schema check saw only the last.
			k := out.keys[len(out.keys)-1]
			if first, dup := seen[k.value.(string)]; dup {
				return nil, &posError{line: k.line, col: k.col, msg: fmt.Sprintf("key %s appears twice in the same mapping (first at line %d, column %d)", strconv.Quote(k.value.(string)), first.line, first.col)}
			}
			seen[k.value.(string)] = k
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
		if math.IsInf(t.Value, 0) || math.IsNaN(t.Value) {
			return nil, &posError{line: line, col: col, msg: fmt.Sprintf("the number %s is too large for JSON, and everything in a scenario file is JSON; use a smaller number or a string", tok.Value)}
		}
		out := at(scalarNode)
		out.value = t.Value
		return out, nil
	case *ast.InfinityNode:
		return nil, &posError{line: line, col: col, msg: "infinity (.inf) is not a JSON value, and everything in a scenario file is JSON; use a large number or a string"}
	case *ast.NanNode:
		return nil, &posError{line: line, col: col, msg: "NaN (.nan) is not a JSON value, and everything in a scenario file is JSON; use null or a string"}
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
		if t.Name != nil && t.Name.GetToken() != nil {
			c.anchors[t.Name.GetToken().Value] = v
		}
		return v, nil
	case *ast.AliasNode:
		name := ""
		if t.Value != nil && t.Value.GetToken() != nil {
			name = t.Value.GetToken().Value
		}
		v, ok := c.anchors[name]
		if !ok {
			return nil, &posError{line: line, col: col, msg: fmt.Sprintf("alias *%s has no anchor &%s before it", name, name)}
		}
		if c.firstAlias == nil {
			c.firstAlias = at(scalarNode)
		}
		return v, nil
	case *ast.TagNode:
		v, err := c.convert(t.Value)
		if err != nil {
			return nil, err
		}
		tag := ""
		if t.Start != nil {
			tag = t.Start.Value
		}
		if tag == "!!str" && v.kind == scalarNode {
			v.value = scalarString(v)
			return v, nil
		}
		if !tagFits(tag, v) {
			return nil, tagProblem(line, col, tag, v)
		}
		return v, nil
	case *ast.CommentGroupNode:
		return at(scalarNode), nil
	}
	return nil, &posError{line: line, col: col, msg: fmt.Sprintf("unsupported YAML construct %s", n.Type())}
}

// jsonTags are the YAML tags of JSON's values, the only ones a scenario
// file may carry, each with the kind of value it fits.
var jsonTags = map[string]func(*node) bool{
	"!!str":   func(n *node) bool { return n.kind == scalarNode },
	"!!map":   func(n *node) bool { return n.kind == mapNode },
	"!!seq":   func(n *node) bool { return n.kind == seqNode },
	"!!int":   func(n *node) bool { _, ok := n.value.(int64); return ok && n.kind == scalarNode },
	"!!float": func(n *node) bool { return n.kind == scalarNode && isNumber(n.value) },
	"!!bool":  func(n *node) bool { _, ok := n.value.(bool); return ok && n.kind == scalarNode },
	"!!null":  func(n *node) bool { return n.kind == scalarNode && n.value == nil },
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

// tagFits reports whether a tag is one of JSON's and fits its value. Any
// other tag (!!binary, !!timestamp, !!set, a language's !!python/object, an
// application's !env) means something to some loader that this one would
// silently read as plain text, so it is an error, not ignored.
func tagFits(tag string, v *node) bool {
	fits, ok := jsonTags[tag]
	return ok && fits(v)
}

func tagProblem(line, col int, tag string, v *node) *posError {
	if _, ok := jsonTags[tag]; ok {
		return &posError{line: line, col: col, msg: fmt.Sprintf("the tag %s does not fit %s; leave the tag out and write the value as what it is", tag, v.describe())}
	}
	return &posError{line: line, col: col, msg: fmt.Sprintf("the tag %s is not supported in scenario files: everything in one is JSON, and crux-sim expands nothing; write the value without a tag (or with !!str to make it a string)", quoteInner(tag))}
}

// quoteInner escapes what is not printable text, as %q does, without the
// quotes.
func quoteInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func (c *converter) addEntry(out *node, mv *ast.MappingValueNode) error {
	if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
		line, col := tokPos(mv.Key.GetToken())
		return &posError{line: line, col: col, msg: "merge keys (<<) are not supported in scenario files; write the keys out, or use an alias for a whole value"}
	}
	k, err := c.convert(mv.Key)
	if err != nil {
		return err
	}
	if k.kind != scalarNode {
		return &posError{line: k.line, col: k.col, msg: "a mapping key must be a plain scalar"}
	}
	// A key of its own: an aliased key is the anchored node, which must
	// keep its value (a number stays a number where the anchor is) and
	// whose position is the anchor's, not this key's.
	line, col := tokPos(mv.Key.GetToken())
	k = &node{kind: scalarNode, line: line, col: col, value: scalarString(k)}
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
