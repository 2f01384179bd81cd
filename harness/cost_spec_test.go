package harness_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scenarios"
)

// What one seeded run of a loaded scenario costs, in allocations: a
// campaign runs the same scenario seed after seed, so the harness's own
// share of a run (its state, its outcome, the verdicts' descriptions) is
// made once per run or once per scenario, never once per entry it checks,
// and the scenario's agents are prepared once, when it loads. The bounds
// are the counts of the whole run, runtime included, as they stood when a
// run's share of each layer was last cut, with one to spare for the
// runtime's shared table of sleep reasons, which holds a run's durations
// or not by what the process ran before it: a run that allocates more has
// grown a cost.
var _ = Describe("The cost of a run", func() {
	BeforeEach(func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
	})

	DescribeTable("allocates no more than it did when the harness's share was last cut",
		func(name string, seed int64, bound int) {
			sc, err := scenarios.Builtin(name)
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Run(sc, harness.Options{Seed: seed}).Passed()).To(BeTrue())
			allocs := testing.AllocsPerRun(20, func() { harness.Run(sc, harness.Options{Seed: seed}) })
			Expect(allocs).To(BeNumerically("<=", bound), "allocations per run of %s at seed %d", name, seed)
		},
		Entry("research-coordinator", "research-coordinator", int64(1), 87),
		Entry("cancel-vs-complete", "cancel-vs-complete", int64(7), 84),
	)

	// A run outside a room fills the state the run before it left (see
	// freeRuns), unless it checks invariants of the caller's, which are
	// handed the run's Facts and End and may keep them: the same
	// invariants, handed in as the caller's, cost the run's state again.
	It("takes the state of a run before it, unless it runs the caller's invariants", func() {
		sc, err := scenarios.Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		own := harness.Options{Seed: 1}
		callers := harness.Options{Seed: 1, Invariants: harness.DefaultInvariants()}
		harness.Run(sc, own)
		reused := testing.AllocsPerRun(20, func() { harness.Run(sc, own) })
		kept := testing.AllocsPerRun(20, func() { harness.Run(sc, callers) })
		Expect(kept - reused).To(BeNumerically("==", 1))
	})
})

var _ = Describe("A run's state", func() {
	It("with the allocation's 8-byte header, fits the allocator's 1,792-byte size class", func() {
		// A word more makes it 2,048 bytes: what only a platform run or a
		// crash needs is the platform run's or Run's own.
		Expect(int(harness.RunSize) + 8).To(BeNumerically("<=", 1792))
	})
})

var _ = Describe("The cost of a campaign's run", func() {
	BeforeEach(func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
	})

	// A swarm run draws its fault mix, and every run its faults and
	// latencies, from generators the run holds, and reads the scenario's
	// faults where they are: preparing the faults allocates the Faults
	// and which of them are on, and a swarm's extra latency fault a list
	// of its own.
	DescribeTable("prepares a run's faults without copying the scenario's or allocating generators",
		func(name string) {
			sc, err := scenarios.Builtin(name)
			Expect(err).NotTo(HaveOccurred())
			plain := testing.AllocsPerRun(20, func() { harness.NewFaults(sc, harness.Options{Seed: 3}) })
			Expect(plain).To(BeNumerically("<=", 1+min(1, len(sc.Faults))), "the Faults, and which of its faults are on")
			for seed := range int64(8) {
				swarm := testing.AllocsPerRun(5, func() { harness.NewFaults(sc, harness.Options{Seed: seed, Swarm: true}) })
				Expect(swarm).To(BeNumerically("<=", 3), "seed %d: and the swarm's list with its extra fault", seed)
			}
		},
		Entry("a scenario without faults", "cancel-vs-complete"),
		Entry("a scenario with faults", "detach-vs-result"),
	)
})

var _ = Describe("The cost of a campaign job's run", func() {
	BeforeEach(func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
	})

	// A job's runs, one after another, on the job's coroutines and in its
	// room, each given back when it passed: a run makes again only what the
	// room does not keep (the runtime's, the simulator's, the strings it
	// records). The bounds are the counts and bytes as they stood when a
	// job's runs were last cut, with a little room for the runtime's own.
	DescribeTable("allocates no more than it did when a job's runs last cut what they reuse",
		func(name string, seed int64, allocsBound, bytesBound int) {
			sc, err := scenarios.Builtin(name)
			Expect(err).NotTo(HaveOccurred())
			run, end := newJob(sc, seed)
			defer end()
			Expect(run()).To(BeTrue())
			const runs = 50
			passed := 0
			allocs, bytes := fixture.Cost(runs, func() {
				if run() {
					passed++
				}
			})
			Expect(passed).To(Equal(runs + 1)) // and the one to warm up
			Expect(allocs).To(BeNumerically("<=", allocsBound), "allocations per run of %s at seed %d", name, seed)
			Expect(bytes).To(BeNumerically("<=", bytesBound), "bytes per run of %s at seed %d", name, seed)
		},
		Entry("research-coordinator", "research-coordinator", int64(1), 60, 13000),
		Entry("cancel-vs-complete", "cancel-vs-complete", int64(7), 55, 13000),
	)
})
