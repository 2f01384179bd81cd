package scenarios

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// contains finds what strings.Contains finds: every needle in every
// haystack of a few letters, anchors and digits up to a few bytes, and
// long random ones where the anchor byte is rare and where it is common
// (contains then falls back to strings.Contains).
func TestContainsAnswersAsStringsContains(t *testing.T) {
	var all func(alphabet string, n int) []string
	all = func(alphabet string, n int) []string {
		if n == 0 {
			return []string{""}
		}
		shorter := all(alphabet, n-1)
		out := shorter
		for _, s := range shorter {
			if len(s) == n-1 {
				for i := range len(alphabet) {
					out = append(out, s+alphabet[i:i+1])
				}
			}
		}
		return out
	}
	haystacks, needles := all("ab=1", 5), all("ab=1", 3)
	for _, s := range haystacks {
		for _, sub := range needles {
			if got, want := contains(s, sub), strings.Contains(s, sub); got != want {
				t.Fatalf("contains(%q, %q) = %v, strings.Contains says %v", s, sub, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, alphabet := range []string{"abcdefgh =-", "ab=", "=-1"} {
		word := func(n int) string {
			b := make([]byte, n)
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			return string(b)
		}
		for range 20000 {
			s := word(r.IntN(200))
			sub := word(1 + r.IntN(12))
			if r.IntN(2) == 0 && len(s) > 0 {
				i := r.IntN(len(s))
				sub = s[i:min(len(s), i+1+r.IntN(12))]
			}
			if got, want := contains(s, sub), strings.Contains(s, sub); got != want {
				t.Fatalf("contains(%q, %q) = %v, strings.Contains says %v", s, sub, got, want)
			}
		}
	}
}
