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

// The offsets of whole seconds, which the note writes without
// Duration.String, are written as Duration.String writes them: every
// second of the first two hours and a day and a half, and the whole
// minutes and hours, seconds and odd lengths around them, up to the
// longest duration.
func TestAJumpWritesWholeSecondsAsDurationStringDoes(t *testing.T) {
	var ds []time.Duration
	for s := range 2*3600 + 1 {
		ds = append(ds, time.Duration(s)*time.Second)
	}
	for s := time.Duration(0); s < 36*time.Hour; s += 17 * time.Second {
		ds = append(ds, s)
	}
	for h := time.Duration(0); h < 2_562_047; h += 997 {
		for _, off := range []time.Duration{0, time.Second, time.Minute, 59 * time.Minute, 59*time.Minute + 59*time.Second,
			time.Nanosecond, time.Millisecond, -time.Nanosecond, 1500 * time.Millisecond} {
			ds = append(ds, h*time.Hour+off, h*time.Minute+off)
		}
	}
	ds = append(ds, math.MaxInt64, math.MaxInt64/time.Second*time.Second, math.MinInt64, -time.Hour, -time.Second)
	for _, d := range ds {
		if got, want := string(appendOffset(nil, d)), trace.Offset(d); got != want {
			t.Fatalf("appendOffset(%d) wrote %q, want %q", int64(d), got, want)
		}
		if d > 0 {
			if got, want := string(appendOffset(nil, d)), "+"+d.String(); got != want {
				t.Fatalf("appendOffset(%d) wrote %q, Duration.String %q", int64(d), got, want)
			}
		}
	}
}
