package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// DeterminismError says where two runs of one scenario under the same
// options stopped being identical.
type DeterminismError struct {
	Scenario string
	Seed     int64
	// What differed: "transcript" (the text report), "trace" (the JSON
	// trace) or "schedule" (the scheduling decisions).
	What string
	// Line is the first differing line (1-based) of What's rendering;
	// First and Second are that line in each run.
	Line          int
	First, Second string
}

func (e *DeterminismError) Error() string {
	return fmt.Sprintf("%s seed %d is not deterministic: the %s of two runs differs at line %d:\n  first:  %s\n  second: %s",
		e.Scenario, e.Seed, e.What, e.Line, e.First, e.Second)
}

// CheckDeterminism runs the scenario twice under the same options and
// reports, as a *DeterminismError, the first difference between the two
// runs' transcripts, JSON traces or schedules; nil means they were byte for
// byte the same. It is the harness's check of its own promise: the same
// scenario and seed give the same trace, every time.
//
// Both runs use sc itself, so agents whose tools keep state between runs
// (a counter in a Go closure) show up here as nondeterminism, which they are.
func CheckDeterminism(sc *scenarios.Scenario, opts Options) error {
	return SameRun(Run(sc, opts), Run(sc, opts))
}

// SameRun compares two outcomes as CheckDeterminism does.
func SameRun(a, b *Outcome) error {
	diff := func(what string, x, y []byte) error {
		if bytes.Equal(x, y) {
			return nil
		}
		xs, ys := strings.Split(string(x), "\n"), strings.Split(string(y), "\n")
		for i := 0; ; i++ {
			var l1, l2 string
			if i < len(xs) {
				l1 = xs[i]
			}
			if i < len(ys) {
				l2 = ys[i]
			}
			if l1 != l2 || i >= len(xs) || i >= len(ys) {
				return &DeterminismError{Scenario: a.Scenario, Seed: a.Seed, What: what, Line: i + 1, First: l1, Second: l2}
			}
		}
	}
	var ta, tb bytes.Buffer
	if err := WriteReport(&ta, a); err != nil {
		return err
	}
	if err := WriteReport(&tb, b); err != nil {
		return err
	}
	if err := diff("transcript", ta.Bytes(), tb.Bytes()); err != nil {
		return err
	}
	ja, err := json.MarshalIndent(a.Trace, "", " ")
	if err != nil {
		return err
	}
	jb, err := json.MarshalIndent(b.Trace, "", " ")
	if err != nil {
		return err
	}
	if err := diff("trace", ja, jb); err != nil {
		return err
	}
	return diff("schedule", schedule(a.Decisions), schedule(b.Decisions))
}

// schedule renders decisions one per line: "step 3: 1 of 2 (w-1 research)".
func schedule(ds []sim.Decision) []byte {
	var b bytes.Buffer
	for i, d := range ds {
		fmt.Fprintf(&b, "step %d: %d of %d (%s)\n", i+1, d.Choice, d.Runnable, d.Actor)
	}
	return b.Bytes()
}
