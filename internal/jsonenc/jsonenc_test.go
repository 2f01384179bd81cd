package jsonenc

import (
	"encoding/json"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// Whatever Append encodes is byte for byte what json.Marshal writes.

func check(t *testing.T, v any) {
	t.Helper()
	got, ok := Append(nil, v)
	if !ok {
		return
	}
	want, err := json.Marshal(v)
	if err != nil || string(got) != string(want) {
		t.Fatalf("Append(%#v) = %s; json.Marshal gives %s, %v", v, got, want, err)
	}
}

func TestPlainValuesEncodeAsEncodingJSONEncodesThem(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "plain words", 0.0, math.Copysign(0, -1), 1.0, -3.5, 1e-6, 1e20, 123456.789, int(7), int64(-9),
		[]any{}, []any(nil), map[string]any{}, map[string]any(nil),
		map[string]any{"question": "Why?", "run_in_background": true, "n": 2.0, "list": []any{"a", 1.0, nil}, "z": map[string]any{"y": false}},
		map[string]any{"k1": 1.0, "k2": 2.0, "k3": 3.0, "k4": 4.0, "k5": 5.0, "k6": 6.0, "k7": 7.0, "k8": 8.0, "k9": 9.0, "k10": 10.0},
		manyKeys(40), // past the members sorted by insertion
	} {
		if _, ok := Append(nil, v); !ok {
			t.Errorf("Append declined the plain value %#v", v)
		}
		check(t, v)
	}
}

// manyKeys is an object of n members whose keys are not in order.
func manyKeys(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[string(rune('a'+(i*7)%26))+string(rune('a'+i%26))] = float64(i)
	}
	return m
}

func TestValuesThatNeedCareAreDeclined(t *testing.T) {
	for _, v := range []any{"quote\"", `back\slash`, "<b>", "a&b", "tab\t", "é", "\xff", 1e21, 1e-7, math.NaN(), math.Inf(1),
		[]string{"typed"}, struct{}{}, int32(1), map[string]any{"é": 1.0}, []any{"ok", "<no>"}} {
		if out, ok := Append(nil, v); ok {
			t.Errorf("Append(%#v) = %s; it should have declined", v, out)
		}
	}
}

func TestRandomPlainValuesEncodeAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var gen func(depth int) any
	gen = func(depth int) any {
		k := r.IntN(7)
		if depth == 0 {
			k = r.IntN(5)
		}
		switch k {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			runes := []rune("aZ09 _-:/.<&\"é")
			s := make([]rune, r.IntN(5))
			for i := range s {
				s[i] = runes[r.IntN(len(runes))]
			}
			return string(s)
		case 3:
			return math.Ldexp(r.Float64()-0.5, r.IntN(120)-60)
		case 4:
			return int64(r.IntN(1000) - 500)
		case 5:
			m := map[string]any{}
			for range r.IntN(12) {
				m[string(rune('a'+r.IntN(26)))+"k"] = gen(depth - 1)
			}
			return m
		default:
			a := make([]any, r.IntN(4))
			for i := range a {
				a[i] = gen(depth - 1)
			}
			return a
		}
	}
	for range 3000 {
		check(t, gen(3))
	}
}

// A string is read eight bytes at a time (by the runtime's decoder, and by
// Plain) while none of them is one the byte-by-byte read stops at: every
// byte value, at every place in a word, and words of two such bytes, are
// judged as the bytes one by one are, the first byte a word marks is the
// first the byte-by-byte read stops at, and a word is written as it is
// (Plain) exactly when each of its bytes is.
func TestAWordOfAStringIsPlainExactlyWhenEachOfItsBytesIs(t *testing.T) {
	plain := func(c byte) bool { return c != '"' && c != '\\' && c >= 0x20 && c < 0x7f }
	check := func(w []byte) {
		want, first := true, 8
		for i, c := range w {
			if !plain(c) && want {
				want, first = false, i
			}
		}
		if got := SpecialBytes(Word(string(w))) == 0; got != want {
			t.Fatalf("SpecialBytes(%q) == 0 is %v, want %v", w, got, want)
		}
		if got := bits.TrailingZeros64(SpecialBytes(Word(string(w)))) / 8; got != first {
			t.Fatalf("SpecialBytes(%q) marks byte %d first, want %d", w, got, first)
		}
		written := true // as encoding/json writes a string: see Plain
		for _, c := range w {
			written = written && plain(c) && c != '<' && c != '>' && c != '&'
		}
		if got := EscapedBytes(Word(string(w))) == 0; got != written || Plain(string(w)) != written {
			t.Fatalf("EscapedBytes(%q) == 0 is %v, Plain %v, want %v", w, got, Plain(string(w)), written)
		}
	}
	for c := range 256 {
		for at := range 8 {
			w := []byte("abcdefgh")
			w[at] = byte(c)
			check(w)
			for c2 := range 256 {
				w2 := []byte("~ ~ ~ ~ ")
				w2[at], w2[(at+3)%8] = byte(c), byte(c2)
				check(w2)
			}
		}
	}
}

// Plain reads a string a word at a time, the last word overlapping the
// ones before it: a string of any length, with any byte at any place, is
// plain exactly when each of its bytes is (read one by one).
func TestAStringIsPlainExactlyWhenEachOfItsBytesIs(t *testing.T) {
	written := func(c byte) bool {
		return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	for n := range 26 {
		s := []byte("abcdefghijklmnopqrstuvwxyz"[:n])
		if !Plain(string(s)) {
			t.Fatalf("Plain(%q) is false", s)
		}
		for at := range n {
			for c := range 256 {
				s[at] = byte(c)
				if got := Plain(string(s)); got != written(byte(c)) {
					t.Fatalf("Plain(%q) is %v, want %v", s, got, written(byte(c)))
				}
			}
			s[at] = 'a' + byte(at)
		}
	}
}
