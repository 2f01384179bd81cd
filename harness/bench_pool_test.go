package harness_test

import (
	"testing"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// benchmarkRunPooled is benchmarkRun with the runs on one coroutine pool,
// as a campaign's job runs them: after the first run no run starts a
// goroutine or grows a stack.
func benchmarkRunPooled(b *testing.B, name string, seed int64) {
	sc, err := scenarios.Builtin(name)
	if err != nil {
		b.Fatal(err)
	}
	pool := sim.NewPool(0)
	defer pool.Close()
	if o := harness.Run(sc, harness.Options{Seed: seed, Coroutines: pool}); !o.Passed() {
		b.Fatalf("%s does not pass at seed %d", name, seed)
	}
	b.ReportAllocs()
	for b.Loop() {
		harness.Run(sc, harness.Options{Seed: seed, Coroutines: pool})
	}
}

func BenchmarkRunResearchCoordinatorPooled(b *testing.B) {
	benchmarkRunPooled(b, "research-coordinator", 1)
}

func BenchmarkRunCancelVsCompletePooled(b *testing.B) { benchmarkRunPooled(b, "cancel-vs-complete", 7) }
