package jsonenc

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Printable, eight bytes at a time, says what a byte-by-byte look says:
// that the text is printable ASCII with no quote and no backslash, which
// strconv.Quote writes between its quotes unchanged and which, between
// quotes, is a JSON string that decodes to itself. Every byte value
// stands at every place of an eight-byte block and of the bytes after it,
// among printable ones, and random texts mix both.
func TestPrintableIsPrintableASCIIWithNoQuoteOrBackslash(t *testing.T) {
	check := func(v string) {
		t.Helper()
		want := true
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				want = false
			}
		}
		if got := Printable(v); got != want {
			t.Fatalf("Printable(%q) = %v, want %v", v, got, want)
		}
		if want && strconv.Quote(v) != `"`+v+`"` {
			t.Fatalf("strconv.Quote(%q) = %s, not the text between quotes", v, strconv.Quote(v))
		}
		var back string
		if want && (json.Unmarshal([]byte(`"`+v+`"`), &back) != nil || back != v) {
			t.Fatalf("%q between quotes decodes to %q, not itself", v, back)
		}
	}
	base := []byte("abcdefghijklmnopqrstu")
	for c := range 256 {
		for at := range len(base) {
			b := append([]byte(nil), base...)
			b[at] = byte(c)
			check(string(b))
			check(string(b[:at+1]))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x5f))
			if r.IntN(30) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		check(string(b))
	}
}
