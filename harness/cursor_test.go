package harness

import (
	"fmt"
	"testing"
)

// A send receipt's cursor is read as fmt.Sscan reads an int, whatever it
// holds: the plain decimals the runtime writes without Sscan's cost, and
// anything else exactly as Sscan reads it.
func TestSendCursorsReadAsSscanReadsThem(t *testing.T) {
	for _, s := range []string{"0", "1", "7", "42", "1000000", "012", "0x1f", "+5", "-3", "-012", "1_000", "12abc", " 4", "", "x", "99999999999999999999"} {
		want := 17
		fmt.Sscan(s, &want)
		if got := parseCursor(s, 17); got != want {
			t.Errorf("cursor %q: read %d, fmt.Sscan reads %d", s, got, want)
		}
	}
	if n := testing.AllocsPerRun(50, func() { parseCursor("42", 0) }); n != 0 {
		t.Errorf("reading the cursor 42 allocates %v times, want 0", n)
	}
}
