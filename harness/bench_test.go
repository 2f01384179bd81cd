package harness_test

import (
	"testing"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// benchmarkRun measures one seeded simulated run of a built-in scenario:
// runtime, scheduler, virtual clock, scripted provider, trace recording and
// normalization, invariants after every step, and the expectations. The
// scenario is loaded once; every run builds its own runtime and provider.
func benchmarkRun(b *testing.B, name string, seed int64) {
	benchmarkRunOn(b, name, seed, nil)
}

// benchmarkRunPooled is benchmarkRun with the runs on one coroutine pool,
// as a campaign's job runs them: after the first run no run starts a
// goroutine or grows a stack.
func benchmarkRunPooled(b *testing.B, name string, seed int64) {
	pool := sim.NewPool(0)
	defer pool.Close()
	benchmarkRunOn(b, name, seed, pool)
}

func benchmarkRunOn(b *testing.B, name string, seed int64, pool *sim.Pool) {
	sc, err := scenarios.Builtin(name)
	if err != nil {
		b.Fatal(err)
	}
	opts := harness.Options{Seed: seed, Coroutines: pool}
	if o := harness.Run(sc, opts); !o.Passed() {
		b.Fatalf("%s does not pass at seed %d", name, seed)
	}
	b.ReportAllocs()
	for b.Loop() {
		harness.Run(sc, opts)
	}
}

func BenchmarkRunResearchCoordinator(b *testing.B) { benchmarkRun(b, "research-coordinator", 1) }

func BenchmarkRunCancelVsComplete(b *testing.B) { benchmarkRun(b, "cancel-vs-complete", 7) }

func BenchmarkRunResearchCoordinatorPooled(b *testing.B) {
	benchmarkRunPooled(b, "research-coordinator", 1)
}

func BenchmarkRunCancelVsCompletePooled(b *testing.B) { benchmarkRunPooled(b, "cancel-vs-complete", 7) }

// BenchmarkJobCancelVsComplete is a campaign job's loop over one
// scenario: every run on the job's coroutines and in its room, each
// passing run given back for the next to reuse (harness.Fuzz's shape,
// without the seeds or the campaign's bookkeeping).
func BenchmarkJobCancelVsComplete(b *testing.B) { benchmarkJob(b, "cancel-vs-complete", 7) }

// BenchmarkJobResearchCoordinator is the research coordinator's run as a
// campaign job's: what BenchmarkRunResearchCoordinator costs once every
// run reuses the memory and the coroutines of the run before it, the
// bound of what reusing them could save a run outside a campaign.
func BenchmarkJobResearchCoordinator(b *testing.B) { benchmarkJob(b, "research-coordinator", 1) }

func benchmarkJob(b *testing.B, name string, seed int64) {
	sc, err := scenarios.Builtin(name)
	if err != nil {
		b.Fatal(err)
	}
	run, end := newJob(sc, seed)
	defer end()
	if !run() { // the room holds a run from here on
		b.Fatalf("%s does not pass at seed %d", name, seed)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !run() {
			b.Fatalf("%s does not pass at seed %d", name, seed)
		}
	}
}

// newJob is a campaign job's loop over one scenario at one seed: run
// runs the scenario on the job's coroutines and in its room, gives the run
// back when it passed, and reports whether it did; end ends the job.
func newJob(sc *scenarios.Scenario, seed int64) (run func() bool, end func()) {
	pool := sim.NewPool(0)
	room := harness.NewRoom()
	opts := room.Options(harness.Options{Seed: seed, Coroutines: pool})
	return func() bool {
		o := harness.Run(sc, opts)
		if !o.Passed() {
			return false
		}
		room.Drop(o)
		return true
	}, pool.Close
}

// BenchmarkRunRace runs each race built-in at seed 7, for the allocation
// counts per run that docs/performance.md tracks.
func BenchmarkRunRace(b *testing.B) {
	for _, name := range []string{"cancel-vs-complete", "send-vs-exit", "detach-vs-result", "result-timeout", "queued-cancel"} {
		b.Run(name, func(b *testing.B) { benchmarkRun(b, name, 7) })
	}
}
