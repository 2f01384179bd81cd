package sim_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
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

// goroutineID reads the calling goroutine's id from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// chain runs n actors one after another: each starts the next as it ends.
func chain(s *sim.Sim, n int, each func()) {
	var start func(i int)
	start = func(i int) {
		s.Go("link", func() {
			each()
			s.Yield(core.Point{Kind: core.PointToolCall})
			if i+1 < n {
				start(i + 1)
			}
		})
	}
	start(0)
}

// chainAllocs is the allocations of a run of a chain of n actors.
func chainAllocs(n int) float64 {
	return testing.AllocsPerRun(20, func() {
		s := sim.New(sim.Options{Seed: 1})
		chain(s, n, func() {})
		if err := s.Run(nil); err != nil {
			panic(err)
		}
	})
}

var _ = Describe("the simulator's coroutines", func() {
	It("an actor that starts once another has finished runs on the finished one's coroutine, so a Sim pays for a coroutine per actor alive at once", func() {
		s := sim.New(sim.Options{Seed: 1})
		ids := map[string]bool{}
		chain(s, 10, func() { ids[goroutineID()] = true })
		Expect(s.Run(nil)).To(Succeed())
		Expect(ids).To(HaveLen(1), "ten actors, one after another, on one goroutine")
	})

	It("actors alive at once each run on a coroutine of their own", func() {
		s := sim.New(sim.Options{Seed: 1})
		ids := map[string]bool{}
		for range 3 {
			s.Go("peer", func() {
				ids[goroutineID()] = true
				s.Yield(core.Point{Kind: core.PointToolCall})
			})
		}
		Expect(s.Run(nil)).To(Succeed())
		Expect(ids).To(HaveLen(3))
	})

	It("a chain of actors allocates per actor no more than the actor itself", func() {
		// The actor, its function and its share of the growing lists of
		// actors and decisions; a coroutine per actor was seven more.
		Expect((chainAllocs(41) - chainAllocs(1)) / 40).To(BeNumerically("<=", 3))
	})

	It("a long chain of actors starts them in the memory of those that finished, and numbers them anew in the room it has", func() {
		// The actor's function, and its share of the decisions and of the
		// lists of actors; the ready set, that renumbers the few live
		// actors every dozen starts, in its tree. Actors made four at a
		// time, and a new tree every renumbering, were 1.32 an actor;
		// made dozens at a time, each in memory of its own, 1.06.
		Expect((chainAllocs(1001) - chainAllocs(1)) / 1000).To(BeNumerically("<=", 1.02))
	})

	It("a signal that closes after the actor waiting on it has finished wakes no actor started in that actor's memory", func() {
		s := sim.New(sim.Options{Seed: 1})
		stale, other := core.NewSignal(s), core.NewSignal(s)
		s.Go("first", func() { s.Wait("either", stale.C(), other.C()) })
		s.Go("closer", func() { other.Close() })
		chain(s, 40, func() {}) // enough finished actors for their memory to be reused
		Expect(s.Run(nil)).To(Succeed())

		// As many waiters as there are actors to reuse: one starts where
		// "first" was, with its wait on stale still listed.
		later := core.NewSignal(s)
		woke := waiters(s, 40, func(int) <-chan struct{} { return later.C() })
		Expect(s.Settle()).To(Succeed())
		steps := s.Steps()
		stale.Close() // a woken waiter would panic: later has not closed
		Expect(s.Settle()).To(Succeed())
		Expect(s.Steps()).To(Equal(steps))
		Expect(woke).NotTo(ContainElement(true))

		later.Close()
		Expect(s.Run(nil)).To(Succeed())
		Expect(woke).NotTo(ContainElement(false))
	})

	It("the idle coroutines end when the call that drives the Sim returns: no goroutine is left behind", func() {
		before := goleak.IgnoreCurrent()
		s := sim.New(sim.Options{Seed: 1})
		chain(s, 5, func() {})
		Expect(s.Run(nil)).To(Succeed())
		Expect(goleak.Find(before)).To(Succeed())

		s = sim.New(sim.Options{Seed: 1})
		chain(s, 5, func() {})
		for s.Step() {
		}
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("a panic after other actors have finished ends their idle coroutines too", func() {
		before := goleak.IgnoreCurrent()
		s := sim.New(sim.Options{Seed: 1})
		chain(s, 3, func() {})
		s.Go("faulty", func() {
			for s.Steps() < 8 {
				s.Yield(core.Point{Kind: core.PointToolCall})
			}
			panic("late")
		})
		Expect(func() { _ = s.Run(nil) }).To(PanicWith(BeAssignableToTypeOf(&sim.ActorPanic{})))
		Expect(s.Live()).To(BeEmpty())
		Expect(goleak.Find(before)).To(Succeed())
	})
})

var _ = Describe("the simulator's footprint", func() {
	It("New is one allocation: a short run's clock, scheduling stream and first decisions come with the Sim", func() {
		var s *sim.Sim
		Expect(testing.AllocsPerRun(20, func() { s = sim.New(sim.Options{Seed: 7}) })).To(BeNumerically("==", 1))
		Expect(s.Seed()).To(Equal(int64(7)))
	})

	It("a Sim, with the allocation's 8-byte header, fits the 1,408-byte size class, and its room the 1,792-byte one", func() {
		// A Sim and its room were one allocation of 3 KiB, which a Sim
		// without a pool made every time; now the room is taken when the
		// Sim first needs one, and given back once it is empty.
		Expect(int(sim.SimSize) + 8).To(BeNumerically("<=", 1408))
		Expect(int(sim.RoomSize) + 8).To(BeNumerically("<=", 1792))
	})

	It("actors are made five at a time and timers four at a time, after the Sim's first three of each, and a Sim's first four of each need no growing list", func() {
		fn, cb := func() {}, func() {}
		n := testing.AllocsPerRun(20, func() {
			s := sim.New(sim.Options{Seed: 7})
			for range 4 {
				s.Go("a", fn)
				s.Clock().AfterFunc(time.Second, cb)
			}
		})
		Expect(n).To(BeNumerically("<=", 4), "the Sim, its room (a Sim never driven keeps the one it took), five actors, four timers")
	})

	It("a run of sixteen steps or fewer allocates nothing for its decisions, only the Sim, its actor and the actor's coroutine", func() {
		n := testing.AllocsPerRun(20, func() {
			s := sim.New(sim.Options{Seed: 7})
			s.Go("a", func() {
				for range 15 {
					s.Yield(core.Point{Kind: core.PointToolCall})
				}
			})
			if err := s.Run(nil); err != nil || len(s.Decisions()) != 16 {
				panic("not sixteen decisions")
			}
		})
		// The Sim; the actor (made with the Sim) and its function; its
		// coroutine (iter.Pull's six, and the room's coroutine body).
		Expect(n).To(BeNumerically("<=", 9))
	})
})
