package harness

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// naiveFirst is what needles.first answers, the slow way: of the live
// needles that text contains and ok accepts, the one of least order.
func naiveFirst(n *needles, text string, ok func(int) bool) int {
	best := -1
	for i, nd := range n.list {
		if nd.live && strings.Contains(text, nd.s) && (ok == nil || ok(i)) && (best < 0 || nd.order < n.list[best].order) {
			best = i
		}
	}
	return best
}

// Needles answer as a Contains per needle would, below and above the size
// at which they index themselves, with needles removed, orders not in the
// order of adding, needles that are prefixes of one another, short ones,
// and a filter on the candidates.
func TestNeedlesFindTheNeedleOfLeastOrderThatATextContains(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const letters = "abc"
		b := make([]byte, 2+rng.IntN(9))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	for _, size := range []int{1, 5, linearNeedles, linearNeedles + 1, 60, 300} {
		var n needles
		for i := range size {
			n.add(word(), rng.IntN(1000), "w-"+string(rune('a'+i%26)))
			if rng.IntN(5) == 0 {
				n.remove(rng.IntN(len(n.list)))
			}
		}
		odd := func(i int) bool { return n.list[i].order%2 == 1 }
		for range 200 {
			text := word() + word() + word() + word()
			for _, ok := range []func(int) bool{nil, odd} {
				got, want := n.first(text, ok), naiveFirst(&n, text, ok)
				if got != want {
					t.Fatalf("%d needles (%d live), text %q: first = %d, want %d", size, n.live, text, got, want)
				}
			}
		}
	}
}
