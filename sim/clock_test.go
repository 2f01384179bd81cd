package sim_test

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/sim"
)

// fired records which timer fired at which offset.
type fired struct {
	Name string
	At   time.Duration
}

var _ = Describe("the virtual clock", func() {
	var (
		s     *sim.Sim
		clock *sim.Clock
		log   []fired
	)
	record := func(name string) func() {
		return func() { log = append(log, fired{name, clock.Elapsed()}) }
	}
	// keepAlive is an actor that sleeps past every timer of a spec: timers
	// fire while some actor is alive.
	keepAlive := func(d time.Duration) { s.Go("keep-alive", func() { clock.Sleep(d) }) }

	BeforeEach(func() {
		s = sim.New(sim.Options{Seed: 1})
		clock = s.Clock()
		log = nil
	})

	It("jumps straight to the earliest pending deadline when nothing can run", func() {
		clock.AfterFunc(5*time.Second, record("5s"))
		clock.AfterFunc(3*time.Second, record("3s"))
		clock.AfterFunc(9*time.Second, record("9s"))
		keepAlive(time.Minute)
		Expect(s.Run(nil)).To(Succeed())
		Expect(log).To(Equal([]fired{{"3s", 3 * time.Second}, {"5s", 5 * time.Second}, {"9s", 9 * time.Second}}))
		Expect(clock.Elapsed()).To(Equal(time.Minute))
	})

	It("fires timers due at the same instant in the order they were registered, then any they schedule for that instant", func() {
		clock.AfterFunc(2*time.Second, record("first"))
		clock.AfterFunc(2*time.Second, func() {
			record("second")()
			clock.AfterFunc(0, record("scheduled by second"))
		})
		clock.AfterFunc(time.Second, func() { clock.AfterFunc(time.Second, record("registered later, same instant")) })
		clock.AfterFunc(2*time.Second, record("third"))
		keepAlive(time.Minute)
		Expect(s.Run(nil)).To(Succeed())
		Expect(log).To(Equal([]fired{
			{"first", 2 * time.Second}, {"second", 2 * time.Second}, {"third", 2 * time.Second},
			{"registered later, same instant", 2 * time.Second}, {"scheduled by second", 2 * time.Second},
		}))
	})

	It("Stop unschedules a pending timer and reports whether it was pending", func() {
		t := clock.AfterFunc(time.Second, record("stopped"))
		clock.AfterFunc(2*time.Second, record("kept"))
		Expect(clock.Pending()).To(Equal(2))
		Expect(t.Stop()).To(BeTrue())
		Expect(t.Stop()).To(BeFalse())
		Expect(clock.Pending()).To(Equal(1))
		keepAlive(time.Minute)
		Expect(s.Run(nil)).To(Succeed())
		Expect(log).To(Equal([]fired{{"kept", 2 * time.Second}}))
	})

	It("Reset reschedules a timer from now, as if registered then, and reports whether it was pending", func() {
		t := clock.AfterFunc(time.Second, record("reset"))
		clock.AfterFunc(10*time.Second, record("other"))
		var pending []bool
		s.Go("resetter", func() {
			clock.Sleep(4 * time.Second)
			pending = append(pending, t.Reset(6*time.Second)) // it fired at +1s; now due at +10s
			clock.Sleep(time.Second)
			pending = append(pending, t.Reset(5*time.Second)) // pending; due at +10s again, registered after "other"
		})
		keepAlive(time.Minute)
		Expect(s.Run(nil)).To(Succeed())
		Expect(pending).To(Equal([]bool{false, true}))
		Expect(log).To(Equal([]fired{{"reset", time.Second}, {"other", 10 * time.Second}, {"reset", 10 * time.Second}}))
	})

	It("a timer due past the largest duration from the start is due at that duration: such timers fire after every nearer one, in registration order", func() {
		clock.AfterFunc(time.Hour, func() {
			clock.AfterFunc(math.MaxInt64, record("far, registered first"))
			clock.AfterFunc(math.MaxInt64-time.Hour, record("far, registered second"))
			clock.AfterFunc(math.MaxInt64-2*time.Hour, record("nearer"))
		})
		for s.Step() {
		}
		Expect(log).To(Equal([]fired{
			{"nearer", math.MaxInt64 - time.Hour},
			{"far, registered first", math.MaxInt64},
			{"far, registered second", math.MaxInt64},
		}))
		Expect(clock.Now()).To(Equal(sim.Epoch.Add(math.MaxInt64)))
	})

	It("a callback's own timer is not pending while it runs: Stop reports false, Pending leaves it out, and a Reset from it re-arms it once", func() {
		var t clockwork.Timer
		var seen []string
		calls := 0
		t = clock.AfterFunc(time.Second, func() {
			calls++
			seen = append(seen, fmt.Sprintf("call %d: pending %d, stop %t", calls, clock.Pending(), t.Stop()))
			switch calls {
			case 1:
				seen = append(seen, fmt.Sprintf("reset %t, pending %d", t.Reset(time.Second), clock.Pending()))
			case 2:
				t.Reset(time.Second)
				seen = append(seen, fmt.Sprintf("stop after reset %t, pending %d", t.Stop(), clock.Pending()))
			}
		})
		clock.AfterFunc(time.Minute, record("other"))
		for s.Step() {
		}
		Expect(seen).To(Equal([]string{
			"call 1: pending 1, stop false", "reset false, pending 2",
			"call 2: pending 1, stop false", "stop after reset true, pending 1",
		}))
		Expect(calls).To(Equal(2))
		Expect(log).To(Equal([]fired{{"other", time.Minute}}))
	})

	It("a callback that re-arms its own timer moves it where it stands, with the rank of a fresh registration: after the timers registered before the Reset at that deadline, before those registered after", func() {
		var t clockwork.Timer
		var heap []int
		calls := 0
		t = clock.AfterFunc(time.Minute, func() {
			calls++
			heap = append(heap, sim.HeapLen(clock))
			if calls == 1 {
				clock.AfterFunc(time.Minute, record("registered before the re-arm"))
				t.Reset(time.Minute)
				clock.AfterFunc(time.Minute, record("registered after the re-arm"))
				return
			}
			record("re-armed")()
		})
		for i := range 5 {
			clock.AfterFunc(time.Duration(3+i)*time.Minute, func() {})
		}
		for s.Step() {
		}
		Expect(log).To(Equal([]fired{
			{"registered before the re-arm", 2 * time.Minute}, {"re-armed", 2 * time.Minute},
			{"registered after the re-arm", 2 * time.Minute},
		}))
		Expect(heap).To(Equal([]int{6, 7})) // the firing timer stays in the heap while it runs: beside the five far ones, and then the one registered after
		Expect(clock.Pending()).To(BeZero())
	})

	It("a callback that drives the simulation itself fires the timers due after its own, not its own again", func() {
		var order []string
		var t clockwork.Timer
		t = clock.AfterFunc(time.Second, func() {
			order = append(order, "outer")
			Expect(s.RunFor(time.Second)).To(Succeed()) // fires "inner" at +2s
			order = append(order, fmt.Sprintf("outer again: reset %t", t.Reset(time.Hour)))
		})
		clock.AfterFunc(2*time.Second, func() { order = append(order, "inner") })
		clock.AfterFunc(3*time.Second, func() { order = append(order, "past the inner horizon") })
		Expect(s.RunFor(90 * time.Minute)).To(Succeed())
		Expect(order).To(Equal([]string{"outer", "inner", "outer again: reset false", "past the inner horizon", "outer", "outer again: reset false"}))
	})

	It("an idle poll, a callback that re-arms its own timer, allocates nothing, and neither does a ticker's tick", func() {
		var t clockwork.Timer
		polls := 0
		t = clock.AfterFunc(time.Minute, func() {
			polls++
			t.Reset(time.Minute)
		})
		ticker := clock.NewTicker(time.Minute)
		Expect(s.RunFor(time.Minute)).To(Succeed()) // the first tick's send
		Expect(testing.AllocsPerRun(20, func() {
			<-ticker.Chan()
			if err := s.RunFor(time.Minute); err != nil {
				panic(err)
			}
		})).To(BeZero())
		Expect(polls).To(Equal(22)) // AllocsPerRun's warm-up run, and its twenty
		Expect(clock.Pending()).To(Equal(2))
	})

	It("a timer's channel receives the virtual time it fired at; After is the same", func() {
		timer := clock.NewTimer(3 * time.Second)
		after := clock.After(4 * time.Second)
		var got []time.Time
		s.Go("reader", func() {
			clock.Sleep(5 * time.Second)
			got = append(got, <-timer.Chan(), <-after)
		})
		Expect(s.Run(nil)).To(Succeed())
		Expect(got).To(Equal([]time.Time{sim.Epoch.Add(3 * time.Second), sim.Epoch.Add(4 * time.Second)}))
	})

	It("a ticker ticks every period, keeps at most one tick waiting like time.Ticker, and Reset and Stop change it", func() {
		ticker := clock.NewTicker(10 * time.Second)
		var got []time.Duration
		take := func() {
			select {
			case at := <-ticker.Chan():
				got = append(got, at.Sub(sim.Epoch))
			default:
				got = append(got, -1)
			}
		}
		s.Go("reader", func() {
			clock.Sleep(35 * time.Second) // ticks at 10, 20, 30: only the first waits
			take()
			take()
			ticker.Reset(time.Second) // next ticks at 36, 37, ...
			clock.Sleep(1500 * time.Millisecond)
			take()
			ticker.Stop()
			clock.Sleep(time.Minute)
			take()
		})
		Expect(s.Run(nil)).To(Succeed())
		Expect(got).To(Equal([]time.Duration{10 * time.Second, -1, 36 * time.Second, -1}))
		Expect(clock.Pending()).To(BeZero())
	})

	It("through any mix of Stop and Reset, timers fire by deadline and, at one instant, in the order they were last registered", func() {
		// A model of the rule: each timer's deadline and the registration
		// that set it; the clock must fire exactly the model's order.
		type want struct {
			at  time.Duration
			reg int
		}
		rng := rand.New(rand.NewPCG(1, 2))
		timers := make([]clockwork.Timer, 300)
		model := map[int]want{}
		reg := 0
		schedule := func(i int, d time.Duration) {
			reg++
			model[i] = want{d, reg}
		}
		var got []int
		for i := range timers {
			d := time.Duration(rng.IntN(50)) * time.Second // many ties
			timers[i] = clock.AfterFunc(d, func() { got = append(got, i) })
			schedule(i, d)
		}
		for range 400 {
			i := rng.IntN(len(timers))
			if rng.IntN(2) == 0 {
				Expect(timers[i].Stop()).To(Equal(model[i] != want{}))
				delete(model, i)
				continue
			}
			d := time.Duration(rng.IntN(50)) * time.Second
			Expect(timers[i].Reset(d)).To(Equal(model[i] != want{}))
			schedule(i, d)
		}
		Expect(clock.Pending()).To(Equal(len(model)))
		order := slices.Collect(maps.Keys(model))
		slices.SortFunc(order, func(a, b int) int {
			if c := cmp.Compare(model[a].at, model[b].at); c != 0 {
				return c
			}
			return cmp.Compare(model[a].reg, model[b].reg)
		})
		keepAlive(time.Hour)
		Expect(s.Run(nil)).To(Succeed())
		Expect(got).To(Equal(order))
	})

	It("Sleep parks only the calling actor; Since and Until measure virtual time", func() {
		start := clock.Now()
		var order []string
		s.Go("sleeper", func() {
			clock.Sleep(time.Hour)
			order = append(order, "sleeper")
		})
		s.Go("worker", func() { order = append(order, "worker") })
		Expect(s.Run(nil)).To(Succeed())
		Expect(order).To(Equal([]string{"worker", "sleeper"}))
		Expect(clock.Since(start)).To(Equal(time.Hour))
		Expect(clock.Until(start.Add(90 * time.Minute))).To(Equal(30 * time.Minute))
	})
})
