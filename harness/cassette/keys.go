package cassette

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// encoding/json matches keys without regard to case and lets a key repeat,
// the last one winning: "KIND" would read as "kind" and "finishReasOn" as
// "finishReason". A cassette's keys are exact, so every line is checked
// against its wire type before it is decoded.

// keyError is a key the line's type does not allow, at a byte offset.
type keyError struct {
	offset int
	msg    string
}

func (e *keyError) Error() string { return e.msg }

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// wireFields caches fieldsOf.
var wireFields sync.Map // reflect.Type → *structKeys

// structKeys is a wire struct's JSON keys: each key's field index and type.
type structKeys struct {
	index map[string]int
	types []reflect.Type
}

// fieldsOf lists the JSON keys of a wire struct.
func fieldsOf(t reflect.Type) *structKeys {
	if m, ok := wireFields.Load(t); ok {
		return m.(*structKeys)
	}
	k := &structKeys{index: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			k.index[name] = len(k.types)
			k.types = append(k.types, f.Type)
		}
	}
	wireFields.Store(t, k)
	return k
}

// checkKeys walks one JSON line and checks, for every object that decodes
// into a wire struct, that each key is one the struct declares, spelled
// exactly, and appears once. Values decoded as raw JSON (schemas) are
// skipped. It reads the bytes itself, without allocating for the common
// line: every line of a cassette passes here. A syntax error is returned
// as errSyntax, for the decoder to report with its own offsets.
func checkKeys(raw []byte, t reflect.Type) error {
	ks := keyScanner{b: raw}
	return ks.value(t)
}

var errSyntax = errors.New("invalid JSON")

type keyScanner struct {
	b []byte
	i int
}

func (s *keyScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *keyScanner) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s.space()
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch s.b[s.i] {
	case '{':
		return s.object(t)
	case '[':
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Slice && t != rawMessageType {
			elem = t.Elem()
		}
		s.i++
		if s.closes(']') {
			return nil
		}
		for {
			if err := s.value(elem); err != nil {
				return err
			}
			if more, err := s.separator(']'); !more || err != nil {
				return err
			}
		}
	case '"':
		_, err := s.str()
		return err
	}
	for s.i < len(s.b) { // a number or a literal: the decoder checks it
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		s.i++
	}
	return nil
}

// closes consumes the closing delimiter of an empty object or array.
func (s *keyScanner) closes(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// separator consumes what follows a member or an element: a comma (more
// follow) or the closing delimiter.
func (s *keyScanner) separator(closing byte) (more bool, err error) {
	s.space()
	if s.i >= len(s.b) {
		return false, errSyntax
	}
	s.i++
	switch s.b[s.i-1] {
	case ',':
		return true, nil
	case closing:
		return false, nil
	}
	return false, errSyntax
}

// errStop ends a walk of an object's members early.
var errStop = errors.New("stop")

// members walks the object at s.i, calling member with each key (and the
// offset of its opening quote) once the scanner is at the key's value;
// member must read the value.
func (s *keyScanner) members(member func(key string, at int) error) error {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return errSyntax
	}
	s.i++
	if s.closes('}') {
		return nil
	}
	for {
		s.space()
		at := s.i
		if at >= len(s.b) || s.b[at] != '"' {
			return errSyntax
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errSyntax
		}
		s.i++
		s.space()
		if err := member(key, at); err != nil {
			return err
		}
		if more, err := s.separator('}'); !more || err != nil {
			return err
		}
	}
}

func (s *keyScanner) object(t reflect.Type) error {
	var keys *structKeys
	if t != nil && t.Kind() == reflect.Struct {
		keys = fieldsOf(t)
	}
	var seen uint64
	return s.members(func(key string, at int) error {
		var ft reflect.Type
		if keys != nil {
			n, known := keys.index[key]
			if !known {
				return &keyError{at, fmt.Sprintf("unknown key %q%s", key, didYouMean(key, keys))}
			}
			if seen&(1<<n) != 0 {
				return &keyError{at, fmt.Sprintf("key %q appears twice", key)}
			}
			seen |= 1 << n
			ft = keys.types[n]
		}
		return s.value(ft)
	})
}

// str reads a string at s.i; only a key with escapes is decoded.
func (s *keyScanner) str() (string, error) {
	start := s.i
	s.i++
	escaped := false
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i += 2
			continue
		case '"':
			s.i++
			lit := s.b[start:s.i]
			if !escaped {
				return string(lit[1 : len(lit)-1]), nil
			}
			var out string
			if err := json.Unmarshal(lit, &out); err != nil {
				return "", errSyntax
			}
			return out, nil
		}
		s.i++
	}
	return "", errSyntax
}

func didYouMean(key string, keys *structKeys) string {
	for k := range keys.index {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf(" (keys are case-sensitive: did you mean %q?)", k)
		}
	}
	return ""
}

// probeKind reads the line's "kind" (spelled exactly) without decoding the
// rest. ok is false when the line has none; err is errSyntax for a line
// that is not a JSON object.
func probeKind(raw []byte) (kind string, ok bool, err error) {
	s := keyScanner{b: raw}
	err = s.members(func(key string, _ int) error {
		if key != "kind" || s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.value(nil)
		}
		v, err := s.str()
		if err != nil {
			return err
		}
		kind, ok = v, true
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return kind, ok, err
}

// depthError is nesting past the limit, at a byte offset.
type depthError struct {
	offset, limit int
}

func (e *depthError) Error() string {
	return fmt.Sprintf("JSON nested deeper than %d levels (ReadOptions.MaxDepth)", e.limit)
}

// checkDepth finds where a line nests deeper than limit, in one pass over
// its bytes, before any decoder walks it.
func checkDepth(raw []byte, limit int) error {
	depth, inString, escaped := 0, false, false
	for i, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > limit {
				return &depthError{offset: i, limit: limit}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}
