package harness

import (
	"slices"
	"testing"

	"github.com/crux-sim/crux-sim/core/lifecycle"
)

// legal answers as lifecycle.Legal does, for every pair of Work states and
// of a Work state and a string that is none ("", a typo, another case).
func TestLegalIsTheLifecyclesLegal(t *testing.T) {
	states := append(slices.Clone(lifecycle.States), "", "runing", "Queued", "cancel")
	for _, from := range states {
		for _, to := range states {
			if got, want := legal(from, to), lifecycle.Legal(from, to); got != want {
				t.Errorf("legal(%q, %q) = %t, lifecycle.Legal says %t", from, to, got, want)
			}
		}
	}
}
