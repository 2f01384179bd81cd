package slab

import (
	"cmp"
	"unsafe"
)

// Defaults of a Texts' first chunk and largest chunk, in bytes.
const MinText, MaxText = 256, 4 << 10

// Texts holds strings a run writes many of (rendered events, clock jumps'
// notes, the names a normalization gives) one after another in chunks of
// bytes, so that a string costs no allocation of its own. A chunk is only
// ever appended to, so a string's bytes are never written again: a string
// that outgrows the room it asked for past what is left of the chunk is
// written into bytes of its own (append's), and the chunk is left as it
// was for the next string. One string is written at a time: Open, the
// appends, then Close.
//
// Its zero value starts with chunks of MinText bytes and doubles them up
// to MaxText.
type Texts struct {
	buf []byte
	// chunk is the room of the next chunk (MinText when 0), at most max
	// (MaxText when 0).
	chunk, max int
}

// SizedTexts returns texts whose first chunk holds first bytes and whose
// chunks double up to most bytes (first = most keeps them one size).
func SizedTexts(first, most int) Texts { return Texts{chunk: first, max: most} }

// Open returns the end of the current chunk with room for at least n
// bytes: append a string's bytes to it, and hand what the appends
// returned to Close.
func (t *Texts) Open(n int) []byte {
	if cap(t.buf)-len(t.buf) < n {
		c := cmp.Or(t.chunk, MinText)
		t.buf = make([]byte, 0, max(c, n))
		t.chunk = min(2*c, cmp.Or(t.max, MaxText))
	}
	return t.buf[len(t.buf):]
}

// Close returns b, the slice Open returned with a string's bytes appended
// to it, as a string. The bytes are the chunk's from then on, if they are
// in it, so the next string starts after them.
func (t *Texts) Close(b []byte) string {
	if n := len(t.buf); len(b) > 0 && n < cap(t.buf) && &b[0] == &t.buf[:n+1][n] {
		t.buf = t.buf[:n+len(b)]
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Join returns the concatenation of parts, written at the end of the
// chunk.
func (t *Texts) Join(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := t.Open(n)
	for _, p := range parts {
		b = append(b, p...)
	}
	return t.Close(b)
}
