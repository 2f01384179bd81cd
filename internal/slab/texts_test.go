package slab

import (
	"strconv"
	"strings"
	"testing"
)

// A string once returned never changes, however many are written after
// it, long or short, into its chunk or past it, whatever the chunks'
// sizes.
func TestATextNeverChangesOnceWritten(t *testing.T) {
	for _, tx := range []Texts{{}, SizedTexts(8, 8), SizedTexts(1<<10, 1<<10)} {
		var got, want []string
		for i := range 2000 {
			a, b := strconv.Itoa(i), strings.Repeat("x", i%300)
			if i%3 == 0 {
				got = append(got, tx.Join(a, "/", b))
			} else {
				// Written past the room asked for: append moves the bytes.
				got = append(got, tx.Close(append(append(append(tx.Open(1), a...), '/'), b...)))
			}
			want = append(want, a+"/"+b)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("text %d reads %q, want %q", i, got[i], want[i])
			}
		}
	}
}

// Strings written within their chunk share it: a chunk is one
// allocation for many strings.
func TestTextsWrittenWithinAChunkShareIt(t *testing.T) {
	var tx Texts
	n := testing.AllocsPerRun(100, func() {
		tx = SizedTexts(1<<10, 1<<10)
		for i := range 32 {
			tx.Join("session-", strconv.Itoa(i%10))
		}
	})
	if n != 1 {
		t.Fatalf("32 short strings took %v allocations, want the chunk's 1", n)
	}
}
