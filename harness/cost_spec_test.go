package harness_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// What one seeded run of a loaded scenario costs, in allocations: a
// campaign runs the same scenario seed after seed, so the harness's own
// share of a run (its state, its outcome, the verdicts' descriptions) is
// made once per run or once per scenario, never once per entry it checks.
// The bounds are the counts of the whole run, runtime included, as they
// stood when the harness's share was last cut: a run that allocates more
// has grown a cost.
var _ = Describe("The cost of a run", func() {
	BeforeEach(func() {
		if raceDetector {
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
		Entry("research-coordinator", "research-coordinator", int64(1), 328),
		Entry("cancel-vs-complete", "cancel-vs-complete", int64(7), 305),
	)
})

var _ = Describe("The cost of a campaign's run", func() {
	BeforeEach(func() {
		if raceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
	})

	// A swarm run draws its fault mix, and every run its faults and
	// latencies, from generators the run holds: drawing allocates nothing
	// that a run without faults does not.
	It("draws a swarm's fault mix without allocating generators", func() {
		sc, err := scenarios.Builtin("cancel-vs-complete")
		Expect(err).NotTo(HaveOccurred())
		plain := testing.AllocsPerRun(20, func() { harness.NewFaults(sc, harness.Options{Seed: 3}) })
		swarm := testing.AllocsPerRun(20, func() { harness.NewFaults(sc, harness.Options{Seed: 3, Swarm: true}) })
		Expect(plain).To(BeNumerically("<=", 1+2*min(1, len(sc.Faults))), "the Faults and its lists of faults")
		Expect(swarm).To(BeNumerically("<=", plain+2), "a swarm's extra latency fault grows the two lists, and no more")
	})
})
