package harness_test

import (
	"bytes"
	"context"
	"runtime/metrics"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// goroutinesCreated is how many goroutines the process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sameRunAndReport is harness.SameRun (the transcript, the trace and the
// schedule, byte for byte) and the JSON report.
func sameRunAndReport(a, b *harness.Outcome) {
	GinkgoHelper()
	Expect(harness.SameRun(a, b)).To(Succeed())
	ja, err := harness.ReportJSON(a)
	Expect(err).NotTo(HaveOccurred())
	jb, err := harness.ReportJSON(b)
	Expect(err).NotTo(HaveOccurred())
	Expect(bytes.Equal(ja, jb)).To(BeTrue(), "the JSON reports differ")
}

var _ = Describe("runs on a pool of coroutines", func() {
	It("a seed gives the byte-identical transcript, trace, schedule and report on coroutines that ran other runs' actors, crashed runs' included", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		crashed, pooledCreated, freshCreated := 0, uint64(0), uint64(0)
		for seed := int64(1); seed <= 3; seed++ {
			for _, b := range scenarios.Builtins() {
				opts := harness.Options{Seed: seed, Swarm: true}
				c0 := goroutinesCreated()
				fresh := harness.Run(builtin(b.Name), opts)
				c1 := goroutinesCreated()
				opts.Coroutines = pool
				pooled := harness.Run(builtin(b.Name), opts)
				c2 := goroutinesCreated()
				freshCreated, pooledCreated = freshCreated+c1-c0, pooledCreated+c2-c1
				sameRunAndReport(pooled, fresh)
				if pooled.Crashed {
					crashed++
				}
			}
		}
		Expect(crashed).To(BeNumerically(">", 0), "some runs crashed, and their actors were killed")
		// The pooled runs start goroutines only until the pool holds as
		// many as a run needs at once, and for the killed actors'.
		Expect(pooledCreated).To(BeNumerically("<", freshCreated/4), "fresh runs started %d", freshCreated)
	})

	It("a run that panicked or crashed on the pool leaves nothing for the next runs on it", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		// A panic in the runtime's events: the agent run recovers it as
		// its error, and its coroutine unwinds and goes on.
		panicky := harness.WithTraceDefect(harness.Options{Seed: 5, Coroutines: pool}, func(e trace.Entry) []trace.Entry {
			if e.Kind == trace.ToolResult {
				panic("a defect that panics")
			}
			return nil
		})
		o := harness.Run(builtin("research-coordinator"), panicky)
		Expect(o.Passed()).To(BeFalse())
		Expect(transcript(o)).To(ContainSubstring("a defect that panics"))
		// A crash: the process's actors are killed where they stand.
		o = harness.Run(builtin("task-dag-crash"), harness.Options{Seed: 3, Swarm: true, Coroutines: pool})
		Expect(o.Crashed).To(BeTrue())
		for seed := int64(1); seed <= 10; seed++ {
			for _, name := range []string{"research-coordinator", "cancel-vs-complete", "task-dag-crash"} {
				fresh := harness.Run(builtin(name), harness.Options{Seed: seed})
				pooled := harness.Run(builtin(name), harness.Options{Seed: seed, Coroutines: pool})
				sameRunAndReport(pooled, fresh)
			}
		}
	})

	It("a campaign's job runs its schedules, and the replays that shrink its failure, on a pool of its own that it closes", func() {
		before := goleak.IgnoreCurrent()
		targets := []harness.Target{builtinTarget("cancel-vs-complete")}
		c0 := goroutinesCreated()
		res := harness.Fuzz(context.Background(), targets, harness.CampaignOptions{Seeds: 300, Start: 1, Jobs: 1})
		created := goroutinesCreated() - c0
		Expect(res.Schedules).To(Equal(int64(300)))
		Expect(created).To(BeNumerically("<", 20), "300 schedules of three coroutines each")
		Expect(goleak.Find(before)).To(Succeed())

		c0 = goroutinesCreated()
		res = harness.Fuzz(context.Background(), targets, harness.CampaignOptions{Seeds: 200, Start: 1, Jobs: 1, Swarm: true, MaxFailures: 1,
			Testing: core.Testing{Defects: core.Defects{CancelOverwritesTerminal: true}}})
		created = goroutinesCreated() - c0
		Expect(res.Failures).To(HaveLen(1))
		shrink := res.Failures[0].ShrinkRuns
		// New coroutines for the replays alone would be three each.
		Expect(created).To(BeNumerically("<", min(20, 3*shrink)), "%d schedules and %d replays", res.Schedules, shrink)
		Expect(goleak.Find(before)).To(Succeed())
	})
})
