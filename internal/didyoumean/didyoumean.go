// Package didyoumean says what a mistyped word most likely meant. The scenario
// loader, the Go scenario builder and the CLI (verbs and flags) all offer
// their "did you mean" from here, so a typo gets the same suggestion
// wherever it is made.
package didyoumean

import (
	"fmt"
	"strings"
)

// Hint offers the closest allowed word to a misspelt one, as
// ` (did you mean "x"?)`, or the list of allowed words when none is close
// and the list is short; "" when there is nothing to offer.
func Hint(got string, allowed []string) string {
	if len(allowed) == 0 {
		return ""
	}
	if best := Closest(got, allowed); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(allowed) <= 24 {
		return " (expected one of " + strings.Join(allowed, ", ") + ")"
	}
	return ""
}

// Closest returns the allowed word a misspelt one most likely meant: within
// two edits, or one that the word starts with ("backgroundable" for
// "background"); "" when none is close.
func Closest(got string, allowed []string) string {
	best, bestD := "", 3
	for _, a := range allowed {
		if dd := editDistance(got, a); dd < bestD {
			best, bestD = a, dd
		}
	}
	if best != "" || len(got) < 4 {
		return best
	}
	for _, a := range allowed {
		if len(a) >= 4 && (strings.HasPrefix(got, a) || strings.HasPrefix(a, got)) && len(a) > len(best) {
			best = a
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
