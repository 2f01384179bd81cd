package scenarios

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/crux-sim/crux-sim/core"
)

// schema reads a JSON Schema written as YAML. A schema that is not valid is
// reported at the key that makes it invalid, with the JSON Schema library's
// own words for what is wrong.
func (l *loader) schema(n *node, what string) *core.Schema {
	if n == nil {
		return nil
	}
	if n.kind != mapNode {
		l.errorf(n, "%s must be a JSON Schema mapping, such as {type: object}; found %s", what, n.describe())
		return nil
	}
	if bad, key := externalRef(n); bad != nil {
		l.errorf(bad, "%s: %s %q points outside the file; a scenario's schemas are self-contained, so refer within the schema, such as \"#/$defs/name\"", what, key, scalarString(bad))
		return nil
	}
	raw, err := n.toJSON()
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return nil
	}
	s, err := parseSchemaCached(raw)
	if err != nil {
		at, msg := schemaProblem(n, err)
		l.errorf(at, "%s is not a valid JSON Schema: %s", what, msg)
		return nil
	}
	return s
}

// externalRef finds a reference keyword whose URL has a scheme, which the
// JSON Schema library would try to load (from a file, for file: URLs).
// Scenario files must never read other files or block on one.
func externalRef(n *node) (*node, string) {
	switch n.kind {
	case mapNode:
		for i, k := range n.keys {
			key, v := scalarString(k), n.vals[i]
			switch key {
			case "$ref", "$dynamicRef", "$recursiveRef", "$id", "$schema":
				if s, ok := v.value.(string); ok && v.kind == scalarNode && hasLoadableScheme(key, s) {
					return v, key
				}
			}
			if bad, key := externalRef(v); bad != nil {
				return bad, key
			}
		}
	case seqNode:
		for _, it := range n.items {
			if bad, key := externalRef(it); bad != nil {
				return bad, key
			}
		}
	}
	return nil, ""
}

func hasLoadableScheme(key, s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return strings.Contains(s, ":")
	}
	switch strings.ToLower(u.Scheme) {
	case "":
		return false
	case "http", "https":
		// $schema names a draft by URL; the library knows the drafts
		// without loading them. Any other http URL is external.
		return key != "$schema" || !strings.Contains(u.Host, "json-schema.org")
	}
	return true
}

// schemaCache holds compiled schemas by their JSON, so that loading the same
// scenario again (a built-in, every run of a fuzz) does not compile the same
// schemas again. Schemas are immutable and safe to share.
var schemaCache = struct {
	sync.Mutex
	m map[string]*core.Schema
}{m: map[string]*core.Schema{}}

const schemaCacheSize = 256

func parseSchemaCached(raw []byte) (*core.Schema, error) {
	key := string(raw)
	schemaCache.Lock()
	s, ok := schemaCache.m[key]
	schemaCache.Unlock()
	if ok {
		return s, nil
	}
	s, err := core.ParseSchema(key)
	if err != nil {
		return nil, err
	}
	schemaCache.Lock()
	if len(schemaCache.m) >= schemaCacheSize {
		clear(schemaCache.m)
	}
	schemaCache.m[key] = s
	schemaCache.Unlock()
	return s, nil
}

var schemaPrinter = message.NewPrinter(language.English)

// memURL is the name core gives a schema it compiles (mem:///schema.json),
// and the start of what a reference resolves to against it; it means
// nothing to the author of a scenario file, who sees the reference's path.
var memURL = regexp.MustCompile(`mem:///schema\.json|mem://schema/[0-9]+\.json|mem://`)

// schemaProblem finds the first concrete complaint of the JSON Schema
// library and the node of the schema it is about.
func schemaProblem(root *node, err error) (*node, string) {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		// The library's causes come in map order; report the one that
		// comes first in the file, so the same file always gets the same
		// message.
		var best *node
		var bestMsg string
		for _, leaf := range leaves(ve, nil) {
			at := root.at(leaf.InstanceLocation)
			msg := leaf.ErrorKind.LocalizedString(schemaPrinter)
			if len(leaf.InstanceLocation) > 0 {
				msg = fmt.Sprintf("at %s: %s", strings.Join(leaf.InstanceLocation, "."), msg)
			}
			if best == nil || earlier(at, msg, best, bestMsg) {
				best, bestMsg = at, msg
			}
		}
		return best, bestMsg
	}
	// Other compile errors (an unresolvable $ref, a bad regular
	// expression) carry the library's URLs; keep the part after them.
	msg := memURL.ReplaceAllString(err.Error(), "")
	for _, prefix := range []string{"schema does not compile: ", "schema: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	msg = strings.ReplaceAll(msg, "\n", "; ")
	return root, msg
}

// earlier orders schema problems by position; at the same position the
// more detailed message (which lists what is allowed) goes first.
func earlier(a *node, am string, b *node, bm string) bool {
	switch {
	case a.line != b.line:
		return a.line < b.line
	case a.col != b.col:
		return a.col < b.col
	case len(am) != len(bm):
		return len(am) > len(bm)
	}
	return am < bm
}

// leaves collects the errors without causes under e.
func leaves(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = leaves(c, out)
	}
	return out
}

// at returns the node a JSON pointer's tokens lead to, or the deepest node
// on the way.
func (n *node) at(path []string) *node {
	cur := n
	for _, tok := range path {
		switch cur.kind {
		case mapNode:
			k, v := cur.entry(tok)
			if k == nil {
				return cur
			}
			cur = v
		case seqNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.items) {
				return cur
			}
			cur = cur.items[i]
		default:
			return cur
		}
	}
	return cur
}
