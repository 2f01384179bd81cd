package core

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// flatObject is a schema of one shape checked by hand: an object whose
// properties are all strings, some of them required, some of them one of
// a list of strings, and no others. The work tool's arguments have that
// shape, and every work call is checked, so they skip the general JSON
// Schema engine; the problems are the engine's, word for word and in the
// same (sorted) order. The table is read from the schema's own document,
// which stays the one statement of the rule: newFlatObject refuses a
// document that says anything the table cannot hold.
type flatObject struct {
	props    map[string][]string // property → its allowed values, nil for any string
	required []string
}

// newFlatObject reads the table of a schema document, or returns nil when
// the document is not of the shape.
func newFlatObject(doc any) *flatObject {
	m, ok := doc.(map[string]any)
	if !ok || m["type"] != "object" || m["additionalProperties"] != false {
		return nil
	}
	f := &flatObject{props: map[string][]string{}}
	for k, v := range m {
		switch k {
		case "type", "additionalProperties", "description", "title":
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, p := range props {
				enum, ok := stringProperty(p)
				if !ok {
					return nil
				}
				f.props[name] = enum
			}
		case "required":
			req, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range req {
				name, ok := r.(string)
				if !ok || slices.Contains(f.required, name) {
					return nil
				}
				f.required = append(f.required, name)
			}
		default:
			return nil
		}
	}
	return f
}

// stringProperty reads a property schema {"type":"string"} with an
// optional enum of strings and a description.
func stringProperty(p any) (enum []string, ok bool) {
	m, ok := p.(map[string]any)
	if !ok || m["type"] != "string" {
		return nil, false
	}
	for k, v := range m {
		switch k {
		case "type", "description", "title":
		case "enum":
			vals, ok := v.([]any)
			if !ok || len(vals) < 2 {
				// One value reads "value must be 'x'" in the engine's
				// words; the table does not hold that case.
				return nil, false
			}
			for _, x := range vals {
				s, ok := x.(string)
				if !ok || slices.Contains(enum, s) {
					return nil, false
				}
				enum = append(enum, s)
			}
		default:
			return nil, false
		}
	}
	return enum, true
}

// problems checks a decoded value: nil problems when it is valid. ok is
// false for a value the table does not read (not a JSON object, or holding
// a Go value JSON does not decode to), which the engine then checks.
func (f *flatObject) problems(v any) (problems []string, ok bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	var missing, extra []string
	for _, name := range f.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 1 {
		problems = append(problems, `at "/": missing property `+quoteName(missing[0]))
	} else if len(missing) > 1 {
		problems = append(problems, `at "/": missing properties `+joinNames(missing))
	}
	for name, x := range obj {
		enum, declared := f.props[name]
		if !declared {
			extra = append(extra, name)
			continue
		}
		s, isString := x.(string)
		if !isString {
			got, known := jsonTypeName(x)
			if !known {
				return nil, false
			}
			problems = append(problems, fmt.Sprintf("at %q: got %s, want string", "/"+name, got))
			continue
		}
		if enum != nil && !slices.Contains(enum, s) {
			problems = append(problems, fmt.Sprintf("at %q: value must be one of %s", "/"+name, joinNames(enum)))
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		problems = append(problems, `at "/": additional properties `+joinNames(extra)+" not allowed")
	}
	slices.Sort(problems)
	return problems, true
}

// readValid reads a document that is valid by the table, written the
// plain way models and scripts write it: an object of strings without
// escapes (as jsonDecoder reads them). It calls set for each property in
// the document's order (a repeated one again, so the last value stands,
// as decoding keeps it) and reports whether the document was read and is
// valid; when it is not, what set was told counts for nothing, and the
// caller decodes and checks the document the general way, whose problems
// are the ones to show.
func (f *flatObject) readValid(doc string, set func(name, value string)) bool {
	if len(f.required) > 64 {
		return false
	}
	d := jsonDecoder{s: doc}
	d.space()
	if d.i >= len(doc) || doc[d.i] != '{' {
		return false
	}
	d.i++
	d.space()
	var seen uint64 // the required properties present, by index
	if d.i < len(doc) && doc[d.i] == '}' {
		d.i++
	} else {
		for {
			d.space()
			name, ok := d.str()
			if !ok {
				return false
			}
			d.space()
			if d.i >= len(doc) || doc[d.i] != ':' {
				return false
			}
			d.i++
			d.space()
			value, ok := d.str()
			if !ok {
				return false
			}
			enum, declared := f.props[name]
			if !declared || enum != nil && !slices.Contains(enum, value) {
				return false
			}
			if i := slices.Index(f.required, name); i >= 0 {
				seen |= 1 << i
			}
			set(name, value)
			d.space()
			if d.i >= len(doc) {
				return false
			}
			if doc[d.i] == '}' {
				d.i++
				break
			}
			if doc[d.i] != ',' {
				return false
			}
			d.i++
		}
	}
	d.space()
	return d.i == len(doc) && seen == 1<<len(f.required)-1
}

// jsonTypeName names a decoded JSON value's type as the engine does.
func jsonTypeName(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return "boolean", true
	case float64:
		return "number", !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		return "string", true
	case []any:
		return "array", true
	case map[string]any:
		return "object", true
	}
	return "", false
}

// quoteName quotes a property name or value as the engine's messages do:
// Go's %q, with double quotes left bare and single quotes escaped, inside
// single quotes.
func quoteName(s string) string {
	q := fmt.Sprintf("%q", s)
	q = strings.ReplaceAll(q, `\"`, `"`)
	q = strings.ReplaceAll(q, `'`, `\'`)
	return "'" + q[1:len(q)-1] + "'"
}

func joinNames(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteName(n))
	}
	return b.String()
}
