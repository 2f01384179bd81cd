package scripted

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/crux-sim/crux-sim/core"
)

// appendJSON appends the JSON encoding of v to b, exactly as json.Marshal
// would encode it, resolving symbolic references (WorkID) against the
// request as it goes (with no request, a WorkID is the string it holds). Scripts hold plain values (maps, slices, strings,
// numbers, booleans) and encoding them is on the path of every scripted
// step, so those are written directly, without reflection and without first
// copying the value to resolve its references; anything else, and any
// string or number whose encoding needs care, goes through encoding/json.
func appendJSON(b []byte, req *core.Request, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		return appendString(b, t), nil
	case WorkID:
		if req == nil {
			return appendString(b, string(t)), nil // nothing to resolve against
		}
		ref, ok := FindWorkRef(req, string(t))
		if !ok {
			return nil, errNoWorkRef(string(t))
		}
		return appendString(b, ref.ID), nil
	case ResultField:
		if req == nil {
			return appendString(b, t.Tool+"."+t.Field), nil
		}
		raw, err := t.find(req)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	case int:
		return strconv.AppendInt(b, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(b, t, 10), nil
	case float64:
		// encoding/json writes 'f' format in this range; outside it (and
		// for NaN and infinities) it has rules of its own.
		if a := math.Abs(t); t == 0 || (a >= 1e-6 && a < 1e21) {
			return strconv.AppendFloat(b, t, 'f', -1, 64), nil
		}
	case map[string]any:
		if t == nil {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, req, t[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, req, x); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	// Everything else: resolve references the slow way, then let
	// encoding/json decide.
	if req != nil {
		var err error
		if v, err = resolve(req, v); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

// appendString writes a JSON string. Printable ASCII other than the quote,
// the backslash and the characters encoding/json escapes for HTML is
// written as it is; any other string is left to encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // a string always encodes
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
