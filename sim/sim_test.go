package sim_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

// interleaving runs three actors that each take four steps and returns the
// order their steps ran in.
func interleaving(opts sim.Options) (string, *sim.Sim) {
	s := sim.New(opts)
	var order []string
	for _, name := range []string{"a", "b", "c"} {
		s.Go(name, func() {
			for i := range 4 {
				order = append(order, fmt.Sprint(name, i))
				s.Yield(core.Point{Kind: core.PointToolCall, Step: i})
			}
		})
	}
	Expect(s.Run(nil)).To(Succeed())
	return strings.Join(order, " "), s
}

var _ = Describe("the simulator", func() {
	It("runs one actor at a time, and the seed chooses which runnable actor goes next", func() {
		seen := map[string]bool{}
		for seed := int64(1); seed <= 20; seed++ {
			order, s := interleaving(sim.Options{Seed: seed})
			again, _ := interleaving(sim.Options{Seed: seed})
			Expect(again).To(Equal(order), "seed %d", seed)
			Expect(s.Steps()).To(Equal(15)) // 4 yields and an end per actor
			seen[order] = true
		}
		Expect(len(seen)).To(BeNumerically(">", 10))
	})

	It("a replayed list of choices dictates the schedule, whatever the seed", func() {
		order, s := interleaving(sim.Options{Seed: 4})
		choices := make([]int, len(s.Decisions()))
		for i, d := range s.Decisions() {
			choices[i] = d.Choice
		}
		replayed, _ := interleaving(sim.Options{Seed: 99, Replay: choices})
		Expect(replayed).To(Equal(order))
	})

	It("Kill ends parked actors where they stand: none takes another step, and no goroutine is left", func() {
		before := goleak.IgnoreCurrent()
		s := sim.New(sim.Options{Seed: 1})
		never := make(chan struct{})
		var steps, unwound []string
		for _, name := range []string{"waiter", "yielder"} {
			s.Go(name, func() {
				defer func() { unwound = append(unwound, name) }()
				for {
					steps = append(steps, name)
					if name == "waiter" {
						s.Wait("a signal that never comes", never)
					} else {
						s.Yield(core.Point{Kind: core.PointProviderStep})
					}
				}
			})
		}
		Expect(s.Run(func() bool { return len(steps) >= 6 })).To(Succeed())
		s.Go("never started", func() { steps = append(steps, "never started") })
		taken := len(steps)
		s.Kill()
		Expect(steps).To(HaveLen(taken))
		Expect(steps).NotTo(ContainElement("never started"))
		Expect(unwound).To(ConsistOf("waiter", "yielder"))
		Expect(s.Live()).To(BeEmpty())
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("an actor that recovers the kill still takes no further step", func() {
		s := sim.New(sim.Options{Seed: 1})
		var after []string
		s.Go("stubborn", func() {
			for range 3 {
				func() {
					defer func() { _ = recover() }()
					s.Yield(core.Point{Kind: core.PointToolCall})
				}()
				after = append(after, "ran on")
			}
		})
		Expect(s.Run(func() bool { return s.Steps() == 1 })).To(Succeed())
		s.Kill()
		// It recovers each panic and loops, but every park panics again at
		// once; the loop ends without the scheduler ever resuming it.
		Expect(s.Steps()).To(Equal(1))
		Expect(s.Live()).To(BeEmpty())
	})

	It("a panic in an actor ends the others and reaches the caller of Run with the actor's name and stack", func() {
		before := goleak.IgnoreCurrent()
		s := sim.New(sim.Options{Seed: 1})
		s.Go("bystander", func() { s.Wait("nothing", make(chan struct{})) })
		s.Go("faulty", func() {
			s.Yield(core.Point{Kind: core.PointToolCall})
			panic("the tool broke")
		})
		var got any
		func() {
			defer func() { got = recover() }()
			_ = s.Run(nil)
		}()
		Expect(got).To(BeAssignableToTypeOf(&sim.ActorPanic{}))
		p := got.(*sim.ActorPanic)
		Expect(p.Actor).To(Equal("faulty"))
		Expect(p.Value).To(Equal("the tool broke"))
		Expect(p.Stack).To(ContainSubstring("sim_test.go"))
		Expect(s.Live()).To(BeEmpty())
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("a wait from outside any actor drives the scheduler until its signal closes", func() {
		s := sim.New(sim.Options{Seed: 1})
		done := make(chan struct{})
		var order []string
		s.Go("worker", func() {
			s.Clock().Sleep(time.Hour)
			order = append(order, "worker")
			close(done)
		})
		s.Go("bystander", func() { s.Wait("a signal that never comes", make(chan struct{})) })
		Expect(s.Wait("the worker", done)).To(Equal(0))
		order = append(order, "driver")
		Expect(order).To(Equal([]string{"worker", "driver"}))
		Expect(s.Clock().Elapsed()).To(Equal(time.Hour), "the driver's wait moved virtual time as Run would")
		Expect(s.Live()).To(HaveLen(1), "the bystander is left parked for the driver")
		s.Kill()
	})

	It("a wait from outside any actor that nothing can end panics with the deadlock, naming what the driver waits on", func() {
		s := sim.New(sim.Options{Seed: 1})
		s.Go("reviewer", func() { s.Wait("the approval inbox", make(chan struct{})) })
		var got any
		func() {
			defer func() { got = recover() }()
			s.Wait("the review", make(chan struct{}))
		}()
		Expect(got).To(BeAssignableToTypeOf(&sim.DeadlockError{}))
		Expect(got.(error).Error()).To(SatisfyAll(
			ContainSubstring("the driver waits on the review"),
			ContainSubstring("reviewer waits on the approval inbox")))
		s.Kill()
	})

	It("a wait in a timer callback is refused: callbacks run while the simulator runs and must not block", func() {
		s := sim.New(sim.Options{Seed: 1})
		var refused any
		s.Clock().AfterFunc(time.Second, func() {
			defer func() { refused = recover() }()
			s.Wait("in a callback", make(chan struct{}))
		})
		s.Go("keep-alive", func() { s.Clock().Sleep(time.Minute) })
		Expect(s.Run(nil)).To(Succeed())
		Expect(refused).To(ContainSubstring("must not block"))
	})

	It("stops a run that never settles at its step limit", func() {
		s := sim.New(sim.Options{Seed: 1, StepLimit: 50})
		s.Go("spinner", func() {
			for {
				s.Yield(core.Point{Kind: core.PointToolCall})
			}
		})
		Expect(s.Run(nil)).To(MatchError(sim.ErrStepLimit))
		s.Kill()
		Expect(s.Live()).To(BeEmpty())
	})
})
