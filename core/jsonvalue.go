package core

import (
	"encoding/json"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"

	"github.com/crux-sim/crux-sim/internal/jsonenc"
)

// eface is how an interface value is laid out: its dynamic type, and a
// pointer to its value (for a string, to the string's header).
type eface struct {
	typ, data unsafe.Pointer
}

// stringType is the dynamic type of an interface holding a string.
var stringType = func() unsafe.Pointer {
	var v any = ""
	return (*eface)(unsafe.Pointer(&v)).typ
}()

// boxString returns the string *p as an interface value that points to p
// itself, where the conversion any(*p) would copy the header to an
// allocation of its own: the value is the same (its type, ==, a type
// switch and reflect see a string), and p must never be written again.
func boxString(p *string) any {
	var v any
	*(*eface)(unsafe.Pointer(&v)) = eface{typ: stringType, data: unsafe.Pointer(p)}
	return v
}

// decodeJSON decodes a JSON document into the value json.Unmarshal would
// give an `any` (map[string]any, []any, string, float64, bool, nil). Tool
// arguments are decoded on every tool call, and encoding/json reads each
// document twice (a validity scan, then reflection); this reads the plain
// documents models and scripts send in one pass. Anything it does not read
// exactly as encoding/json does (an escape in a string, a byte outside
// printable ASCII, deep nesting, any syntax error) is handed to
// json.Unmarshal, so the result and every error are encoding/json's.
func decodeJSON(s string) (any, error) {
	d := jsonDecoder{s: s}
	d.space()
	v, ok := d.value(0)
	if d.space(); ok && d.i == len(s) {
		return v, nil
	}
	var slow any
	if err := json.Unmarshal([]byte(s), &slow); err != nil {
		return nil, err
	}
	return slow, nil
}

type jsonDecoder struct {
	s string
	i int
	// boxes are the string values read, which the values returned
	// hold (see box).
	boxes []string
}

// maxBoxes bounds the room box makes at once.
const maxBoxes = 64

// box returns a string value read as the value of an interface. Each
// would be an allocation of its own (the string's header, which an
// interface points to); a document of several strings holds them in
// room made at its first for as many as its quotes leave room for, and
// the values point into that (see boxString).
func (d *jsonDecoder) box(s string) any {
	if len(d.boxes) == cap(d.boxes) {
		// At most the strings left, with this one: their quotes, counted
		// only as far as a full room, so that a document's refills read it
		// once in all (a count of all the quotes left at every refill read
		// a document of many strings quadratically).
		n := 1 + quotes(d.s[d.i:], 2*(maxBoxes-1))/2
		if n == 1 {
			return s
		}
		d.boxes = make([]string, 0, min(n, maxBoxes))
	}
	d.boxes = append(d.boxes, s) // within the room: the boxes before never move
	return boxString(&d.boxes[len(d.boxes)-1])
}

// quotes counts the double quotes in s, up to most: an escaped one
// counts too, so that half of it bounds the strings that start in s. A
// short s is counted whole, which is quicker than a search per quote;
// a long one only as far as its most-th quote.
func quotes(s string, most int) int {
	if len(s) <= 4<<10 {
		return min(strings.Count(s, `"`), most)
	}
	n := 0
	for n < most {
		k := strings.IndexByte(s, '"')
		if k < 0 {
			break
		}
		s, n = s[k+1:], n+1
	}
	return n
}

// maxFastDepth bounds the recursion of the fast path; deeper documents go
// to encoding/json, which has its own limit.
const maxFastDepth = 64

func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) || depth > maxFastDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		d.i++
		m := map[string]any{}
		d.space()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return m, true
		}
		for {
			d.space()
			k, ok := d.str()
			if !ok {
				return nil, false
			}
			d.space()
			if d.i >= len(d.s) || d.s[d.i] != ':' {
				return nil, false
			}
			d.i++
			d.space()
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v // a repeated key keeps its last value, as in encoding/json
			if more, ok := d.after('}'); !ok {
				return nil, false
			} else if !more {
				return m, true
			}
		}
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return d.box(s), true
	case c == 't':
		return true, d.word("true")
	case c == 'f':
		return false, d.word("false")
	case c == 'n':
		return nil, d.word("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, false
}

// array reads an array, at '[': its first elements are gathered in room
// on the stack, so that an array of a few takes one allocation of its
// length, not one per doubling.
func (d *jsonDecoder) array(depth int) (any, bool) {
	d.i++
	var room [arrayRoom]any
	n := 0
	var spill []any // the elements, once there are more than room holds
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return []any{}, true
	}
	for {
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		switch {
		case spill != nil:
			spill = append(spill, v)
		case n < len(room):
			room[n] = v
			n++
		default:
			spill = make([]any, n, 2*n)
			copy(spill, room[:n])
			spill = append(spill, v)
		}
		if more, ok := d.after(']'); !ok {
			return nil, false
		} else if !more {
			if spill != nil {
				return spill, true
			}
			a := make([]any, n)
			copy(a, room[:n])
			return a, true
		}
	}
}

// after reads what follows an element of an object or an array: a comma,
// with more to come, or the closing byte.
func (d *jsonDecoder) after(closer byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.s) {
		return false, false
	}
	switch d.s[d.i] {
	case ',':
		d.i++
		return true, true
	case closer:
		d.i++
		return false, true
	}
	return false, false
}

// arrayRoom is how many elements of an array are gathered on the stack.
const arrayRoom = 8

func (d *jsonDecoder) word(w string) bool {
	if len(d.s)-d.i >= len(w) && d.s[d.i:d.i+len(w)] == w {
		d.i += len(w)
		return true
	}
	return false
}

// str reads a string without escapes, of printable ASCII. It reads eight
// bytes at a time while none of them is a quote or a byte it cannot take
// (see jsonenc.SpecialBytes), then byte by byte.
func (d *jsonDecoder) str() (string, bool) {
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	j := start
	for j+8 <= len(d.s) {
		special := jsonenc.SpecialBytes(jsonenc.Word(d.s[j : j+8]))
		if special == 0 {
			j += 8
			continue
		}
		// The first byte marked is one of its kind (see SpecialBytes):
		// the end of the string, or a byte the fast path does not take.
		j += bits.TrailingZeros64(special) / 8
		if d.s[j] != '"' {
			return "", false
		}
		d.i = j + 1
		return d.s[start:j], true
	}
	for ; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return d.s[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", false
		}
	}
	return "", false
}

// number reads a number of JSON's grammar and converts it as encoding/json
// does.
func (d *jsonDecoder) number() (any, bool) {
	start := d.i
	j := d.i
	if d.s[j] == '-' {
		j++
	}
	digits := func() int {
		n := 0
		for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(d.s) && d.s[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false
	}
	if j < len(d.s) && d.s[j] == '.' {
		j++
		if digits() == 0 {
			return nil, false
		}
	}
	if j < len(d.s) && (d.s[j] == 'e' || d.s[j] == 'E') {
		j++
		if j < len(d.s) && (d.s[j] == '+' || d.s[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(d.s[start:j], 64)
	if err != nil {
		return nil, false // out of range: encoding/json's error
	}
	d.i = j
	return f, true
}

// marshalRef encodes a work.ref as json.Marshal does, without reflection:
// it is the answer to every background call.
func marshalRef(r WorkRef) (string, error) {
	var scratch [256]byte // the answer is a copy of what is written here
	b, ok := appendRef(scratch[:0], r)
	if !ok {
		return marshal(r)
	}
	return string(b), nil
}

// appendRef appends a work.ref as json.Marshal writes it, when every string
// of it is plain (plainString); false, with b to be dropped, when one is
// not.
func appendRef(b []byte, r WorkRef) ([]byte, bool) {
	// A ref of the runtime's has its kind and guarantees as newRef writes
	// them, which are plain: only its id and target are read.
	constant := sameString(r.Kind, WorkRefKind) && sameString(r.Guarantees.Execution, ProcessLocal) &&
		sameString(r.Guarantees.Rejoin, ProcessLocal)
	if !constant && (!jsonenc.Plain(r.Kind) || !jsonenc.Plain(r.Guarantees.Execution) || !jsonenc.Plain(r.Guarantees.Rejoin)) ||
		!jsonenc.Plain(r.ID) || !jsonenc.Plain(r.TargetID) {
		return b, false
	}
	b = append(append(b, `{"kind":"`...), r.Kind...)
	b = append(append(b, `","id":"`...), r.ID...)
	b = append(append(b, `","targetId":"`...), r.TargetID...)
	b = append(append(b, `","guarantees":{"execution":"`...), r.Guarantees.Execution...)
	b = append(append(b, `","rejoin":"`...), r.Guarantees.Rejoin...)
	return append(b, `"}}`...), true
}

// marshalStatus encodes Work's status projection as json.Marshal does,
// without reflection: it is the answer to a status action and to every
// result that finds the Work unfinished.
func marshalStatus(s WorkStatus) (string, error) {
	var scratch [512]byte // the answer is a copy of what is written here
	b, ok := appendRef(append(scratch[:0], `{"work":`...), s.Work)
	if !ok || !jsonenc.Plain(s.TargetLabel) || !jsonenc.Plain(string(s.State)) || !jsonenc.Plain(s.Attachment) ||
		!jsonenc.Plain(s.CreatedAt) || !jsonenc.Plain(s.StartedAt) || !jsonenc.Plain(s.FinishedAt) {
		return marshal(s)
	}
	b = append(append(b, `,"targetLabel":"`...), s.TargetLabel...)
	b = append(append(b, `","state":"`...), s.State...)
	b = append(append(b, `","attachment":"`...), s.Attachment...)
	b = strconv.AppendInt(append(b, `","attempt":`...), int64(s.Attempt), 10)
	b = append(append(b, `,"createdAt":"`...), s.CreatedAt...)
	if s.StartedAt != "" {
		b = append(append(b, `","startedAt":"`...), s.StartedAt...)
	}
	if s.FinishedAt != "" {
		b = append(append(b, `","finishedAt":"`...), s.FinishedAt...)
	}
	b = strconv.AppendBool(append(b, `","resultAvailable":`...), s.ResultAvailable)
	return string(append(b, '}')), nil
}

// marshalCancel encodes a cancel receipt as json.Marshal does, without
// reflection: it is the answer to every cancel action.
func marshalCancel(c CancelReceipt) (string, error) {
	if !jsonenc.Plain(c.WorkID) || !jsonenc.Plain(string(c.State)) || !jsonenc.Plain(c.AcceptedAt) {
		return marshal(c)
	}
	var scratch [256]byte // the answer is a copy of what is written here
	b := append(append(scratch[:0], `{"workId":"`...), c.WorkID...)
	b = strconv.AppendBool(append(b, `","accepted":`...), c.Accepted)
	b = append(append(b, `,"state":"`...), c.State...)
	b = append(append(b, `","acceptedAt":"`...), c.AcceptedAt...)
	return string(append(b, `"}`...)), nil
}

// marshalSend encodes a send receipt as json.Marshal does, without
// reflection: it is the answer to every accepted send.
func marshalSend(r SendReceipt) (string, error) {
	if !jsonenc.Plain(r.WorkID) || !jsonenc.Plain(r.ID) || !jsonenc.Plain(r.Cursor) || !jsonenc.Plain(r.AcceptedAt) ||
		!jsonenc.Plain(r.Outcome) {
		return marshal(r)
	}
	var scratch [256]byte // the answer is a copy of what is written here
	b := append(append(scratch[:0], `{"workId":"`...), r.WorkID...)
	b = append(append(b, `","id":"`...), r.ID...)
	b = append(append(b, `","cursor":"`...), r.Cursor...)
	b = append(append(b, `","acceptedAt":"`...), r.AcceptedAt...)
	b = append(append(b, `","outcome":"`...), r.Outcome...)
	return string(append(b, `"}`...)), nil
}

// marshalDetach encodes a detach receipt as json.Marshal does, without
// reflection: it is the answer to every detach.
func marshalDetach(r DetachReceipt) (string, error) {
	if !jsonenc.Plain(r.ID) {
		return marshal(r)
	}
	var scratch [128]byte // the answer is a copy of what is written here
	b := append(append(scratch[:0], `{"id":"`...), r.ID...)
	b = strconv.AppendBool(append(b, `","detached":`...), r.Detached)
	return string(append(b, '}')), nil
}
