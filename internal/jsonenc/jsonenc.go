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
	"strings"
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
		// The members are taken with their values and sorted by key, so
		// that no value is looked up again by its key once sorted.
		var small [8]member
		members := small[:0]
		for k, v := range t {
			members = append(members, member{k, v})
		}
		sortMembers(members)
		b = append(b, '{')
		for i, m := range members {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = AppendString(b, m.key); !ok {
				return b, false, nil
			}
			b = append(b, ':')
			var err error
			if b, ok, err = AppendWith(b, m.value, leaf); !ok || err != nil {
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

// member is a key of an object with its value.
type member struct {
	key   string
	value any
}

// sortMembers sorts an object's members by key, as encoding/json writes
// them (a map's keys are distinct, so the order is total): by insertion
// for the few members most objects have, by slices.SortFunc past them.
func sortMembers(ms []member) {
	if len(ms) > 12 {
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].key < ms[j-1].key; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// AppendString appends s as a JSON string when encoding/json would write
// it as it is (see Plain), and declines otherwise.
func AppendString(b []byte, s string) ([]byte, bool) {
	if !Plain(s) {
		return b, false
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// Plain reports whether encoding/json writes s between quotes as it is:
// printable ASCII without a quote, a backslash or the characters it
// escapes for HTML (<, > and &). It reads eight bytes at a time, and a
// string of eight bytes or more ends with its last eight (read again
// where they overlap the words before: a byte is plain wherever it is
// read).
func Plain(s string) bool {
	if len(s) < 8 {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
				return false
			}
		}
		return true
	}
	for i := 0; i+8 < len(s); i += 8 {
		if EscapedBytes(Word(s[i:i+8])) != 0 {
			return false
		}
	}
	return EscapedBytes(Word(s[len(s)-8:])) == 0
}

// Printable reports whether s is printable ASCII without a quote or a
// backslash: no byte of SpecialBytes. Such a string is the content of a
// JSON string that decodes to itself, and strconv.Quote writes it between
// its quotes unchanged. It reads s as Plain does.
func Printable(s string) bool {
	if len(s) < 8 {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	for i := 0; i+8 < len(s); i += 8 {
		if SpecialBytes(Word(s[i:i+8])) != 0 {
			return false
		}
	}
	return SpecialBytes(Word(s[len(s)-8:])) == 0
}

// Word reads the first eight bytes of b as a little-endian word (one load).
func Word(b string) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// SpecialBytes marks, in its high bit, each byte of the word x that ends a
// JSON string or keeps a reader off its fast path: a quote, a backslash, a
// control byte, DEL or a byte past ASCII. It tests the bytes at once: each
// term is nonzero exactly when some byte is of its kind, and a borrow or
// carry between bytes runs from a byte of its kind to the bytes above it
// only, so that the lowest byte marked is one of its kind.
func SpecialBytes(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, slash := x^(ones*'"'), x^(ones*'\\')
	special := (quote - ones) & ^quote // a quote
	special |= (slash - ones) & ^slash // a backslash
	special |= (x - ones*0x20) & ^x    // a byte below 0x20
	special |= (x + ones) | x          // DEL (0x7f), or a byte with its high bit
	return special & highs
}

// EscapedBytes is nonzero when some byte of the word x is one that
// encoding/json does not write between quotes as it is: one of
// SpecialBytes, or <, > or & (which it escapes for HTML). A quote and an
// ampersand differ in one bit (0x22, 0x26), and so do < and > (0x3c,
// 0x3e): each pair is found by one test, with that bit set first. Each
// term is nonzero exactly when some byte is of its kind (as in
// SpecialBytes), so that the word is tested in a few operations, and
// the test is inlined where it is used.
func EscapedBytes(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	qa := (x | ones*0x04) ^ (ones * '&') // a quote or an ampersand
	lg := (x | ones*0x02) ^ (ones * '>') // < or >
	bs := x ^ (ones * '\\')              // a backslash
	escaped := (qa - ones) & ^qa
	escaped |= (lg - ones) & ^lg
	escaped |= (bs - ones) & ^bs
	escaped |= (x - ones*0x20) & ^x // a byte below 0x20
	escaped |= (x + ones) | x       // DEL (0x7f), or a byte with its high bit
	return escaped & highs
}
