// Package jsonenc encodes plain JSON values (what encoding/json decodes
// into an any, and what scenario files hold) exactly as json.Marshal would,
// without reflection. It is for hot paths of the runtime, the trace recorder
// and the scripted provider; anything it cannot encode the way
// encoding/json does it declines, and the caller uses encoding/json.
package jsonenc

import (
	"math"
	"slices"
	"strconv"
)

// Append appends the encoding of v to b and reports whether it could (when
// it could not, b holds a partial encoding and is to be dropped): v
// holds only nil, bools, strings, float64, int and int64 numbers,
// map[string]any and []any, its strings need no escaping, and its numbers
// are finite and within encoding/json's plain ('f') format.
func Append(b []byte, v any) ([]byte, bool) {
	b, ok, _ := AppendWith(b, v, nil)
	return b, ok
}

// Leaf stands in plain values for a caller's own types that Append does
// not know (a symbolic reference a script resolves while it is encoded,
// say). It never sees the buffer, so that a caller's stack buffer stays on
// the stack.
type Leaf interface {
	// Substitute returns the plain value to encode in v's place, or
	// handled=false to decline, or an error to stop the encoding.
	Substitute(v any) (plain any, handled bool, err error)
}

// AppendWith is Append that asks leaf (when set) for a plain stand-in for
// any value other than nil, bools, strings, numbers, map[string]any and
// []any, before declining. An error from leaf is returned as it is.
func AppendWith(b []byte, v any, leaf Leaf) ([]byte, bool, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true, nil
	case bool:
		return strconv.AppendBool(b, t), true, nil
	case string:
		b, ok := AppendString(b, t)
		return b, ok, nil
	case int:
		return strconv.AppendInt(b, int64(t), 10), true, nil
	case int64:
		return strconv.AppendInt(b, t, 10), true, nil
	case float64:
		if a := math.Abs(t); t == 0 || (a >= 1e-6 && a < 1e21) {
			return strconv.AppendFloat(b, t, 'f', -1, 64), true, nil
		}
	case map[string]any:
		if t == nil {
			return append(b, "null"...), true, nil
		}
		var small [8]string
		keys := small[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = AppendString(b, k); !ok {
				return b, false, nil
			}
			b = append(b, ':')
			var err error
			if b, ok, err = AppendWith(b, t[k], leaf); !ok || err != nil {
				return b, false, err
			}
		}
		return append(b, '}'), true, nil
	case []any:
		if t == nil {
			return append(b, "null"...), true, nil
		}
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			var err error
			if b, ok, err = AppendWith(b, x, leaf); !ok || err != nil {
				return b, false, err
			}
		}
		return append(b, ']'), true, nil
	}
	if leaf != nil {
		plain, ok, err := leaf.Substitute(v)
		if err != nil || !ok {
			return b, false, err
		}
		return AppendWith(b, plain, nil)
	}
	return b, false, nil
}

// AppendString appends s as a JSON string when encoding/json would write
// it as it is: printable ASCII without a quote, a backslash or the
// characters it escapes for HTML.
func AppendString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
