package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/crux-sim/crux-sim/internal/jsonenc"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema (draft 2020-12 unless the document says
// otherwise). Validation is done by github.com/santhosh-tekuri/jsonschema;
// the one exception is the work tool's schema, whose arguments every work
// call sends: it is checked by hand (see flatObject), with the engine's
// decisions and words. A Schema is immutable and safe for concurrent use.
type Schema struct {
	raw      json.RawMessage
	doc      any
	compiled *jsonschema.Schema

	// valid remembers JSON documents (tool arguments, structured outputs,
	// inputs in canonical form) that validated, so that the same document
	// is not validated again: validation is a pure function of the
	// document, and a simulation campaign sends the same ones run after
	// run. Bounded by maxValidMemo entries.
	validMu sync.RWMutex
	valid   map[string]struct{}

	// flat, when set, checks the schema's documents by hand: it is set on
	// the work tool's schema, whose arguments every work call sends (see
	// flatObject).
	flat *flatObject
}

// maxValidMemo bounds how many valid documents a Schema remembers, and
// maxValidMemoDoc how long a document it remembers may be.
const (
	maxValidMemo    = 1024
	maxValidMemoDoc = 4 << 10
)

// ParseSchema compiles a JSON Schema document.
func ParseSchema(doc string) (*Schema, error) {
	return compileSchema([]byte(doc))
}

// MustSchema is ParseSchema that panics on error, for package-level schema
// literals.
func MustSchema(doc string) *Schema {
	s, err := ParseSchema(doc)
	if err != nil {
		panic(err)
	}
	return s
}

func compileSchema(raw []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// A schema is self-contained: a reference to anything outside it (a
	// file, a URL) is refused, never loaded. Schemas come from scenario
	// files, from a provider's requests and from clients of crux-sim
	// serve, none of which may make crux-sim open a path it names.
	c.UseLoader(noLoader{})
	// Every schema has a compiler of its own, so one fixed location
	// serves all of them, and an error about a schema reads the same
	// every time it is compiled.
	const url = "mem:///schema.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema does not compile: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	return &Schema{raw: compact.Bytes(), doc: v, compiled: compiled}, nil
}

// noLoader refuses to load any schema by URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref %q points outside the schema; refer within it, such as \"#/$defs/name\"", url)
}

// JSON returns a copy of the compact schema document: a Schema is
// immutable, whoever holds it (a provider, say, that a request hands it to).
func (s *Schema) JSON() json.RawMessage {
	if s == nil {
		return nil
	}
	return slices.Clone(s.raw)
}

// MarshalJSON renders the schema document, as a copy for the same reason.
func (s *Schema) MarshalJSON() ([]byte, error) { return slices.Clone(s.raw), nil }

// IsObject reports whether the schema describes a JSON object: its "type"
// is "object" (or a list of types holding "object" alone), or it has no
// type but declares properties.
func (s *Schema) IsObject() bool {
	if s == nil {
		return false
	}
	m, ok := s.doc.(map[string]any)
	if !ok {
		return false
	}
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return len(t) > 0 && !slices.ContainsFunc(t, func(v any) bool { return v != "object" })
	case nil:
		_, hasProps := m["properties"]
		return hasProps
	}
	return false
}

// authors reports whether an object schema says anything of the named
// property of the object it describes, so that a property of that name
// added beside it would meet constraints it never meant for it: it names
// the property in properties, required or dependentRequired, matches it
// with a patternProperties pattern, or does one of these in a subschema
// that applies to the same object (allOf, anyOf, oneOf, not, if, then,
// else, dependentSchemas, or a reference within the document). A
// property of a nested object, or a definition nothing refers to, does
// not count.
func (s *Schema) authors(property string) bool {
	return authorsIn(s.doc, s.doc, property, map[string]bool{})
}

func authorsIn(root, doc any, property string, seen map[string]bool) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	if props, ok := m["properties"].(map[string]any); ok {
		if _, named := props[property]; named {
			return true
		}
	}
	if namesProperty(m["required"], property) {
		return true
	}
	if deps, ok := m["dependentRequired"].(map[string]any); ok {
		for _, names := range deps {
			if namesProperty(names, property) {
				return true
			}
		}
	}
	if patterns, ok := m["patternProperties"].(map[string]any); ok {
		for pattern := range patterns {
			// The schema compiled, so its patterns did; RE2 reads a plain
			// property pattern as ECMA-262 does.
			if re, err := regexp.Compile(pattern); err == nil && re.MatchString(property) {
				return true
			}
		}
	}
	for _, k := range [...]string{"allOf", "anyOf", "oneOf"} {
		subs, _ := m[k].([]any)
		for _, sub := range subs {
			if authorsIn(root, sub, property, seen) {
				return true
			}
		}
	}
	for _, k := range [...]string{"not", "if", "then", "else"} {
		if authorsIn(root, m[k], property, seen) {
			return true
		}
	}
	if deps, ok := m["dependentSchemas"].(map[string]any); ok {
		for _, sub := range deps {
			if authorsIn(root, sub, property, seen) {
				return true
			}
		}
	}
	if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") && !seen[ref] {
		seen[ref] = true
		if target, ok := jsonPointer(root, ref[1:]); ok {
			return authorsIn(root, target, property, seen)
		}
	}
	return false
}

// namesProperty reports whether v, a list of property names, holds name.
func namesProperty(v any, name string) bool {
	names, _ := v.([]any)
	return slices.Contains(names, any(name))
}

// jsonPointer resolves a JSON pointer ("/$defs/a", "" for the root) in a
// decoded document.
func jsonPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if ptr[0] != '/' {
		return nil, false // an anchor name, not a pointer
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if t, err := url.PathUnescape(tok); err == nil {
			tok = t
		}
		switch v := doc.(type) {
		case map[string]any:
			var ok bool
			if doc, ok = v[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			doc = v[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// Declares reports whether an object schema declares the named property.
func (s *Schema) Declares(property string) bool {
	m, ok := s.doc.(map[string]any)
	if !ok {
		return false
	}
	props, _ := m["properties"].(map[string]any)
	_, declared := props[property]
	return declared
}

// Validate checks a decoded JSON value (as produced by encoding/json into
// any) and returns a short, model-readable error naming the failing
// locations.
func (s *Schema) Validate(v any) error {
	if s == nil {
		return nil
	}
	if s.flat != nil {
		if problems, ok := s.flat.problems(v); ok {
			if problems == nil {
				return nil
			}
			return &ValidationError{Problems: problems}
		}
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		return &ValidationError{Problems: leafProblems(ve)}
	}
	return &ValidationError{Problems: []string{err.Error()}}
}

// validateJSON validates v, the decoding of the JSON document doc, and
// remembers doc when it is valid.
func (s *Schema) validateJSON(doc string, v any) error {
	if s == nil || s.flat != nil {
		return s.Validate(v) // checking by hand costs less than remembering
	}
	if s.knownValid(doc) {
		return nil
	}
	if err := s.Validate(v); err != nil {
		return err
	}
	s.rememberValid(doc)
	return nil
}

// validateValue is Validate for a value held in Go, remembered by its
// canonical JSON encoding when it has one (a plain value).
func (s *Schema) validateValue(v any) error {
	if s == nil {
		return nil
	}
	var scratch [512]byte
	doc, ok := jsonenc.Append(scratch[:0], v)
	if !ok || len(doc) > maxValidMemoDoc {
		return s.Validate(v)
	}
	if s.knownValidDoc(doc) {
		return nil
	}
	if err := s.Validate(v); err != nil {
		return err
	}
	s.rememberValid(string(doc))
	return nil
}

// knownValidDoc is knownValid for a value's canonical encoding, as
// validateValue writes it, in bytes.
func (s *Schema) knownValidDoc(doc []byte) bool {
	s.validMu.RLock()
	_, known := s.valid[string(doc)] // a map key: the conversion does not allocate
	s.validMu.RUnlock()
	return known
}

func (s *Schema) knownValid(doc string) bool {
	s.validMu.RLock()
	defer s.validMu.RUnlock()
	_, ok := s.valid[doc]
	return ok
}

func (s *Schema) rememberValid(doc string) {
	if len(doc) > maxValidMemoDoc {
		return
	}
	s.validMu.Lock()
	defer s.validMu.Unlock()
	if len(s.valid) >= maxValidMemo {
		return
	}
	if s.valid == nil {
		s.valid = map[string]struct{}{}
	}
	s.valid[doc] = struct{}{}
}

// ValidationError lists why a value does not match a schema.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "input does not match the schema: " + strings.Join(e.Problems, "; ")
}

var printer = message.NewPrinter(language.English)

func leafProblems(e *jsonschema.ValidationError) []string {
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
				// Named in the order the object's map was walked: in
				// order of name instead, the same every time.
				slices.Sort(k.Properties)
			}
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at %q: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	// The causes come in the order the object's properties were walked,
	// which is a map's: in order of location and text instead, so that the
	// same document gets the same error text every time.
	slices.Sort(out)
	return out
}

// derived caches schemas derived from authored ones (a child's input plus
// run_in_background), so that preparing the same agent in many runtimes, as
// a simulation campaign does, compiles each derived schema once.
var derived sync.Map // derivedKey → *Schema

type derivedKey struct {
	from *Schema
	name string
}

// withProperty returns a copy of an object schema document with one extra
// optional property. Used to add run_in_background to a child's input.
func withProperty(s *Schema, name string, prop map[string]any) (*Schema, error) {
	key := derivedKey{s, name}
	if d, ok := derived.Load(key); ok {
		return d.(*Schema), nil
	}
	d, err := deriveWithProperty(s, name, prop)
	if err != nil {
		return nil, err
	}
	derived.Store(key, d)
	return d, nil
}

func deriveWithProperty(s *Schema, name string, prop map[string]any) (*Schema, error) {
	m, _ := cloneJSON(s.doc).(map[string]any)
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	props[name] = prop
	m["properties"] = props
	return schemaFromDoc(m)
}

// wrapInput returns the parameters document {input} around a non-object
// input schema document. The input moves from the root to
// /properties/input, so its references are kept working: its $defs and
// definitions (and $schema) are lifted to the wrapper's root, where
// "#/$defs/..." still finds them, and every other reference into the
// document ("#", "#/items", ...) is rebased under /properties/input. An
// input with its own $id is a resource of its own, whose references
// resolve within it, and is left as it is.
func wrapInput(in any) map[string]any {
	inner := cloneJSON(in)
	root := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"input": inner},
		"required":             []any{"input"},
		"additionalProperties": false,
	}
	m, ok := inner.(map[string]any)
	if !ok {
		return root
	}
	if _, own := m["$id"]; own {
		return root
	}
	for _, k := range []string{"$schema", "$defs", "definitions"} {
		if v, ok := m[k]; ok {
			root[k] = v
			delete(m, k)
		}
	}
	rebaseRefs(inner)
	if defs, ok := root["$defs"]; ok {
		rebaseRefs(defs)
	}
	if defs, ok := root["definitions"]; ok {
		rebaseRefs(defs)
	}
	return root
}

// rebaseRefs rewrites, in place, the references of a schema document that
// moved to /properties/input. Values that are data, not schemas (const,
// enum, default, examples), are left alone.
func rebaseRefs(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			switch k {
			case "const", "enum", "default", "examples":
				continue
			case "$ref", "$dynamicRef":
				if ref, ok := x.(string); ok {
					t[k] = rebaseRef(ref)
					continue
				}
			}
			rebaseRefs(x)
		}
	case []any:
		for _, x := range t {
			rebaseRefs(x)
		}
	}
}

func rebaseRef(ref string) string {
	switch {
	case strings.HasPrefix(ref, "#/$defs/"), strings.HasPrefix(ref, "#/definitions/"):
		return ref // lifted to the root with the definitions
	case ref == "#", strings.HasPrefix(ref, "#/"):
		return "#/properties/input" + ref[1:]
	}
	return ref // an anchor or another document
}

func cloneJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = cloneJSON(x)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = cloneJSON(x)
		}
		return a
	default:
		return v
	}
}

func schemaFromDoc(doc any) (*Schema, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return compileSchema(raw)
}
