package cassette

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// json compares two texts as JSON values when both are JSON documents, and
// as text otherwise. Objects are walked in key order on both sides, so the
// ids inside them are normalized in the same order whatever order the keys
// were written in; strings are normalized and may match a [REDACTED] in
// the cassette; numbers compare by value.
func (c *comparer) json(field, rec, live string) *diff {
	rv, rok := decodeValue(rec)
	lv, lok := decodeValue(live)
	if !rok || !lok {
		return c.text(field, rec, live)
	}
	if path, same := c.value("", rv, lv); !same {
		return &diff{field: field, path: path, rec: c.rec.norm(rec), live: c.live.norm(live)}
	}
	return nil
}

// decodeValue decodes one whole JSON document, numbers kept as written.
func decodeValue(s string) (any, bool) {
	if s == "" {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// value compares two decoded values; on a difference it returns where.
func (c *comparer) value(path string, rec, live any) (string, bool) {
	switch r := rec.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return path, false
		}
		keys := make([]string, 0, len(r)+len(l))
		for k := range r {
			keys = append(keys, k)
		}
		for k := range l {
			if _, dup := r[k]; !dup {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			rv, rin := r[k]
			lv, lin := l[k]
			p := joinKey(path, k)
			if !rin || !lin {
				return p, false
			}
			if at, same := c.value(p, rv, lv); !same {
				return at, false
			}
		}
		return "", true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return path, false
		}
		for i := range min(len(r), len(l)) {
			if at, same := c.value(path+"["+strconv.Itoa(i)+"]", r[i], l[i]); !same {
				return at, false
			}
		}
		if len(r) != len(l) {
			return path + "[" + strconv.Itoa(min(len(r), len(l))) + "]", false
		}
		return "", true
	case string:
		l, ok := live.(string)
		return path, ok && matchRedacted(c.rec.norm(r), c.live.norm(l))
	case json.Number:
		l, ok := live.(json.Number)
		return path, ok && sameNumber(r, l)
	default: // bool, nil
		return path, rec == live
	}
}

var plainKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

func joinKey(path, k string) string {
	if !plainKey.MatchString(k) {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// sameNumber compares two JSON numbers by value: 1, 1.0 and 1e0 are one
// number. Integers compare digit for digit, so that ids too large for a
// float64 still differ.
func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	if isInteger(a) && isInteger(b) {
		return strings.TrimPrefix(string(a), "-") == strings.TrimPrefix(string(b), "-") &&
			(strings.HasPrefix(string(a), "-") == strings.HasPrefix(string(b), "-") || strings.Trim(string(a), "-0") == "")
	}
	fa, ea := strconv.ParseFloat(string(a), 64)
	fb, eb := strconv.ParseFloat(string(b), 64)
	return ea == nil && eb == nil && fa == fb
}

func isInteger(n json.Number) bool {
	return !bytes.ContainsAny([]byte(n), ".eE")
}
