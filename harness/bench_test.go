package harness_test

import (
	"testing"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// benchmarkRun measures one seeded simulated run of a built-in scenario:
// runtime, scheduler, virtual clock, scripted provider, trace recording and
// normalization, invariants after every step, and the expectations. The
// scenario is loaded once; every run builds its own runtime and provider.
func benchmarkRun(b *testing.B, name string, seed int64) {
	sc, err := scenarios.Builtin(name)
	if err != nil {
		b.Fatal(err)
	}
	if o := harness.Run(sc, harness.Options{Seed: seed}); !o.Passed() {
		b.Fatalf("%s does not pass at seed %d", name, seed)
	}
	b.ReportAllocs()
	for b.Loop() {
		harness.Run(sc, harness.Options{Seed: seed})
	}
}

func BenchmarkRunResearchCoordinator(b *testing.B) { benchmarkRun(b, "research-coordinator", 1) }

func BenchmarkRunCancelVsComplete(b *testing.B) { benchmarkRun(b, "cancel-vs-complete", 7) }

// BenchmarkRunRace runs each race built-in at seed 7, for the allocation
// counts per run that docs/performance.md tracks.
func BenchmarkRunRace(b *testing.B) {
	for _, name := range []string{"cancel-vs-complete", "send-vs-exit", "detach-vs-result", "result-timeout", "queued-cancel"} {
		b.Run(name, func(b *testing.B) { benchmarkRun(b, name, 7) })
	}
}
