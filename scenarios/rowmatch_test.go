package scenarios

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// splitRowMatch is RowPattern.match the general way: the row's fields cut
// by strings.Cut, all of them, and then every set field compared.
func splitRowMatch(r *RowPattern, row, id string) bool {
	const sep = " · "
	rest := strings.TrimPrefix(row, "- ")
	rowID, rest, ok := strings.Cut(rest, sep)
	if !ok {
		return false
	}
	label, rest, ok := strings.Cut(rest, sep)
	if !ok {
		return false
	}
	third, rest, more := strings.Cut(rest, sep)
	state, _, _ := strings.Cut(third, " ")
	fourth, _, _ := strings.Cut(rest, sep)
	available := more && fourth == "Result available"
	switch {
	case id != "" && rowID != id:
	case r.Label != "" && label != r.Label:
	case r.State != "" && state != r.State:
	case r.ResultAvailable != nil && available != *r.ResultAvailable:
	case r.Contains != "" && !strings.Contains(row, r.Contains):
	default:
		return true
	}
	return false
}

// cutRowField cuts where strings.Cut cuts at " · ", in every string of a
// few pieces of the separator, spaces, dots and letters.
func TestCutRowFieldCutsAsStringsCut(t *testing.T) {
	pieces := []string{" ", "·", "\xc2", "\xb7", " · ", "a", "\xc2\xb7"}
	var all func(n int) []string
	all = func(n int) []string {
		if n == 0 {
			return []string{""}
		}
		out := []string{""}
		for _, s := range all(n - 1) {
			for _, p := range pieces {
				out = append(out, s+p)
			}
		}
		return out
	}
	for _, s := range all(5) {
		b, a, ok := cutRowField(s)
		wb, wa, wok := strings.Cut(s, " · ")
		if b != wb || a != wa || ok != wok {
			t.Fatalf("cutRowField(%q) = %q, %q, %t; strings.Cut says %q, %q, %t", s, b, a, ok, wb, wa, wok)
		}
	}
}

// A status row matches a row pattern as the general way says it does, for
// rows made of the rendered form's pieces in any number and order (well
// formed ones among them, with an id, label, state, elapsed seconds and the
// result's availability, and cut or garbled ones), and patterns that set
// any of the row's fields.
func TestRowPatternMatchesAsTheGeneralWay(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []string{"", "w-1", "w-2"}
	labels := []string{"", "research", "re · search", "run"}
	states := []string{"", "running", "completed", "run"}
	avail := []*bool{nil, Bool(true), Bool(false)}
	texts := []string{"", "research", "· r", "4s", "Result", "w-1 ·"}
	pieces := []string{"- ", "w-1", "w-2", " · ", "research", "running", "completed", " ", "4s", "Result available", "·", "-", "run"}
	var rows []string
	for _, id := range ids[1:] {
		for _, label := range labels[1:] {
			for _, state := range states[1:] {
				row := "- " + id + " · " + label + " · " + state + " 4s"
				rows = append(rows, row, row+" · Result available", row+" · Result", row+" · Result available · x")
			}
		}
	}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(9) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		rows = append(rows, b.String())
	}
	for _, label := range labels {
		for _, state := range states {
			for _, a := range avail {
				for _, text := range texts {
					p := &RowPattern{Label: label, State: state, ResultAvailable: a, Contains: text}
					for _, id := range ids {
						for _, row := range rows {
							if got, want := p.match(row, id), splitRowMatch(p, row, id); got != want {
								t.Fatalf("%s matches %q (id %q): %t; the general way says %t", p, row, id, got, want)
							}
						}
					}
				}
			}
		}
	}
}
