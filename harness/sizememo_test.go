package harness

import (
	"slices"
	"sync"
	"testing"

	"github.com/crux-sim/crux-sim/scenarios"
)

// A run makes room for the longest trace its scenario's runs recorded,
// and the memo of those sizes stays bounded however many scenarios run.
// Runs on many goroutines (a campaign's jobs) read and grow it at once.
func TestTraceSizeMemoRemembersTheLongestTraceAndStaysBounded(t *testing.T) {
	m := sizeMemo{fallback: traceHint}
	a, b := scenarios.New("a"), scenarios.New("b")
	if got := m.hint(a); got != traceHint {
		t.Fatalf("hint before any run = %d, want %d", got, traceHint)
	}
	var wg sync.WaitGroup
	for j := range 4 {
		wg.Go(func() {
			for n := range 100 {
				m.remember(a, n*4+j)
				m.remember(b, 10)
				_ = m.hint(a)
			}
		})
	}
	wg.Wait()
	if got := m.hint(a); got != 99*4+3 {
		t.Errorf("hint of a = %d, want the longest, %d", got, 99*4+3)
	}
	m.remember(a, 5)
	if got := m.hint(a); got != 99*4+3 {
		t.Errorf("a shorter trace changed the hint to %d", got)
	}
	for range maxSized + 10 {
		m.remember(scenarios.New("other"), 3)
	}
	if n := len(*m.sizes.Load()); n > maxSized {
		t.Errorf("the memo holds %d scenarios, past its bound of %d", n, maxSized)
	}
}

// A run's simulator makes room for the most decisions its scenario's runs
// made, and the run decides what it decides without that room: another
// seed's, or the same seed's again, the same decisions as a run that knew
// of none.
func TestARunMakesRoomForTheDecisionsItsScenarioMadeAndDecidesTheSame(t *testing.T) {
	sc, err := scenarios.Builtin("loop-week")
	if err != nil {
		t.Fatal(err)
	}
	first := Run(sc, Options{Seed: 3})
	if got, want := decisionSizes.hint(sc), len(first.Decisions); got < want || want == 0 {
		t.Fatalf("hint after a run of %d decisions = %d", want, got)
	}
	again := Run(sc, Options{Seed: 3})
	if !slices.Equal(again.Decisions, first.Decisions) {
		t.Errorf("a run with room for its decisions decided %v, the run before it %v", again.Decisions, first.Decisions)
	}
	if len(again.Decisions) > 16 && cap(again.Decisions) != decisionSizes.hint(sc) {
		t.Errorf("the decisions have room for %d, the hint is %d", cap(again.Decisions), decisionSizes.hint(sc))
	}
}
