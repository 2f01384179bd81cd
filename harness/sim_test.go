package harness_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
)

// interleaving runs three actors that each take four steps and returns the
// order their steps ran in.
func interleaving(opts harness.SimOptions) (string, *harness.Sim) {
	sim := harness.NewSim(opts)
	var order []string
	for _, name := range []string{"a", "b", "c"} {
		sim.Go(name, func() {
			for i := range 4 {
				order = append(order, fmt.Sprint(name, i))
				sim.Yield(core.Point{Kind: core.PointToolCall, Step: i})
			}
		})
	}
	Expect(sim.Run(nil)).To(Succeed())
	return strings.Join(order, " "), sim
}

var _ = Describe("the simulator", func() {
	It("runs one actor at a time, and the seed chooses which runnable actor goes next", func() {
		seen := map[string]bool{}
		for seed := int64(1); seed <= 20; seed++ {
			order, sim := interleaving(harness.SimOptions{Seed: seed})
			again, _ := interleaving(harness.SimOptions{Seed: seed})
			Expect(again).To(Equal(order), "seed %d", seed)
			Expect(sim.Steps()).To(Equal(15)) // 4 yields and an end per actor
			seen[order] = true
		}
		Expect(len(seen)).To(BeNumerically(">", 10))
	})

	It("a replayed list of choices dictates the schedule, whatever the seed", func() {
		order, sim := interleaving(harness.SimOptions{Seed: 4})
		choices := make([]int, len(sim.Decisions()))
		for i, d := range sim.Decisions() {
			choices[i] = d.Choice
		}
		replayed, _ := interleaving(harness.SimOptions{Seed: 99, Replay: choices})
		Expect(replayed).To(Equal(order))
	})

	It("Kill ends parked actors where they stand: none takes another step, and no goroutine is left", func() {
		before := goleak.IgnoreCurrent()
		sim := harness.NewSim(harness.SimOptions{Seed: 1})
		never := make(chan struct{})
		var steps, unwound []string
		for _, name := range []string{"waiter", "yielder"} {
			sim.Go(name, func() {
				defer func() { unwound = append(unwound, name) }()
				for {
					steps = append(steps, name)
					if name == "waiter" {
						sim.Wait("a signal that never comes", never)
					} else {
						sim.Yield(core.Point{Kind: core.PointProviderStep})
					}
				}
			})
		}
		Expect(sim.Run(func() bool { return len(steps) >= 6 })).To(Succeed())
		sim.Go("never started", func() { steps = append(steps, "never started") })
		taken := len(steps)
		sim.Kill()
		Expect(steps).To(HaveLen(taken))
		Expect(steps).NotTo(ContainElement("never started"))
		Expect(unwound).To(ConsistOf("waiter", "yielder"))
		Expect(sim.Live()).To(BeEmpty())
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("an actor that recovers the kill still takes no further step", func() {
		sim := harness.NewSim(harness.SimOptions{Seed: 1})
		var after []string
		sim.Go("stubborn", func() {
			for range 3 {
				func() {
					defer func() { _ = recover() }()
					sim.Yield(core.Point{Kind: core.PointToolCall})
				}()
				after = append(after, "ran on")
			}
		})
		Expect(sim.Run(func() bool { return sim.Steps() == 1 })).To(Succeed())
		sim.Kill()
		// It recovers each panic and loops, but every park panics again at
		// once; the loop ends without the scheduler ever resuming it.
		Expect(sim.Steps()).To(Equal(1))
		Expect(sim.Live()).To(BeEmpty())
	})

	It("a panic in an actor ends the others and reaches the caller of Run with the actor's name and stack", func() {
		before := goleak.IgnoreCurrent()
		sim := harness.NewSim(harness.SimOptions{Seed: 1})
		sim.Go("bystander", func() { sim.Wait("nothing", make(chan struct{})) })
		sim.Go("faulty", func() {
			sim.Yield(core.Point{Kind: core.PointToolCall})
			panic("the tool broke")
		})
		var got any
		func() {
			defer func() { got = recover() }()
			_ = sim.Run(nil)
		}()
		Expect(got).To(BeAssignableToTypeOf(&harness.ActorPanic{}))
		p := got.(*harness.ActorPanic)
		Expect(p.Actor).To(Equal("faulty"))
		Expect(p.Value).To(Equal("the tool broke"))
		Expect(p.Stack).To(ContainSubstring("sim_test.go"))
		Expect(sim.Live()).To(BeEmpty())
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("a wait outside any actor (a timer callback) is refused", func() {
		sim := harness.NewSim(harness.SimOptions{Seed: 1})
		Expect(func() { sim.Wait("in a callback", make(chan struct{})) }).To(PanicWith(ContainSubstring("outside a simulated actor")))
	})

	It("stops a run that never settles at its step limit", func() {
		sim := harness.NewSim(harness.SimOptions{Seed: 1, StepLimit: 50})
		sim.Go("spinner", func() {
			for {
				sim.Yield(core.Point{Kind: core.PointToolCall})
			}
		})
		Expect(sim.Run(nil)).To(MatchError(harness.ErrStepLimit))
		sim.Kill()
		Expect(sim.Live()).To(BeEmpty())
	})
})
