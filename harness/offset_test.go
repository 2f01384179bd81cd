package harness

import (
	"math"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core/trace"
)

// A clock jump's note writes each offset as trace.Offset does, for any
// duration: zero, negative (the most negative one too), below a second
// and past a day.
func TestAJumpWritesItsOffsetsAsTraceOffsetDoes(t *testing.T) {
	for _, d := range []time.Duration{0, 1, -1, 999, time.Microsecond + 7, 191754 * time.Nanosecond, time.Second,
		-time.Second, 5 * time.Minute, time.Hour + time.Second, 70 * time.Hour, 168 * time.Hour, math.MaxInt64, math.MinInt64} {
		if got, want := string(appendOffset([]byte("x "), d)), "x "+trace.Offset(d); got != want {
			t.Errorf("appendOffset(%d) wrote %q, want %q", int64(d), got, want)
		}
	}
}
