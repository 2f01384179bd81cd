package sim_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

// waiters starts n actors on s that each wait on their own signal and then
// record that they woke.
func waiters(s *sim.Sim, n int, signal func(i int) <-chan struct{}) []bool {
	woke := make([]bool, n)
	for i := range n {
		s.Go(fmt.Sprint("waiter-", i), func() {
			s.Wait("its own signal", signal(i))
			woke[i] = true
		})
	}
	return woke
}

// lastChoice is the simulator's latest scheduling decision.
func lastChoice(s *sim.Sim) sim.Decision {
	d := s.Decisions()
	return d[len(d)-1]
}

var _ = Describe("the ready queue", func() {
	It("an actor woken by a signal is runnable at the next step, and a step visits no waiting actor whose signal did not close", func() {
		s := sim.New(sim.Options{Seed: 3})
		polls := 0
		sim.OnPoll(s, func(string) { polls++ })
		const width = 200
		sigs := make([]core.Signal, width)
		for i := range sigs {
			sigs[i] = core.NewSignal(s)
		}
		woke := waiters(s, width, func(i int) <-chan struct{} { return sigs[i].C() })
		Expect(s.Settle()).To(Succeed())
		Expect(s.Steps()).To(Equal(width)) // each ran once, to its wait
		Expect(s.Live()).To(HaveLen(width))

		sigs[7].Close() // from outside any actor, as a timer callback would
		Expect(s.Step()).To(BeTrue())
		Expect(lastChoice(s)).To(Equal(sim.Decision{Choice: 0, Runnable: 1, Actor: "waiter-7"}))
		Expect(woke[7]).To(BeTrue())

		// Signals closed inside an actor's step wake their waiters for the
		// very next step.
		s.Go("closer", func() {
			sigs[150].Close()
			sigs[3].Close()
			s.Yield(core.Point{Kind: core.PointToolCall})
		})
		Expect(s.Step()).To(BeTrue())
		Expect(lastChoice(s)).To(Equal(sim.Decision{Choice: 0, Runnable: 1, Actor: "closer"}))
		Expect(s.Step()).To(BeTrue())
		Expect(lastChoice(s).Runnable).To(Equal(3)) // waiter-3, waiter-150, closer
		Expect(s.Settle()).To(Succeed())
		Expect(woke[3] && woke[150]).To(BeTrue())
		Expect(s.Live()).To(HaveLen(width - 3))
		Expect(polls).To(Equal(0), "no step looked at a waiting actor whose signal stayed open")

		for i := range sigs {
			if !woke[i] {
				sigs[i].Close()
			}
		}
		Expect(s.Run(nil)).To(Succeed())
		Expect(woke).NotTo(ContainElement(false))
		Expect(polls).To(Equal(0))
	})

	It("a few signals watched at once wake only their own waiters, and keeping them allocates nothing", func() {
		s := sim.New(sim.Options{Seed: 3})
		polls := 0
		sim.OnPoll(s, func(string) { polls++ })
		sigs := make([]core.Signal, 6)
		for i := range sigs {
			sigs[i] = core.NewSignal(s)
		}
		woke := waiters(s, len(sigs), func(i int) <-chan struct{} { return sigs[i].C() })
		Expect(s.Settle()).To(Succeed())
		for _, i := range []int{4, 0, 5} {
			sigs[i].Close()
		}
		Expect(s.Settle()).To(Succeed())
		Expect(woke).To(Equal([]bool{true, false, false, false, true, true}))
		for _, i := range []int{2, 1, 3} {
			sigs[i].Close()
		}
		Expect(s.Run(nil)).To(Succeed())
		Expect(woke).NotTo(ContainElement(false))
		Expect(polls).To(BeZero())

		chans := make([]chan struct{}, 7) // the first seven watched signals come with the Sim's room
		for i := range chans {
			chans[i] = make(chan struct{})
		}
		n := testing.AllocsPerRun(20, func() {
			s := sim.New(sim.Options{Seed: 3})
			for _, c := range chans {
				s.Watch(c)
			}
			for _, c := range chans {
				s.Closed(c)
			}
			_ = s.Settle() // its room goes back, for the next Sim
		})
		Expect(n).To(BeNumerically("<=", 1), "the Sim alone")
	})

	It("waits on watched signals again and again, with a sleep beside each, wake the same actors at the same steps as waits on channels the Sim polls (a new wait takes the place of the last one listed when that one has ended)", func() {
		run := func(seed uint64, watch bool) []sim.Decision {
			s := sim.New(sim.Options{Seed: int64(seed)})
			clock := s.Clock()
			rng := rand.New(rand.NewPCG(seed, 84))
			chans := make([]chan struct{}, 3)
			for i := range chans {
				chans[i] = make(chan struct{})
				if watch {
					s.Watch(chans[i])
				}
			}
			for a := range 4 {
				// Drawn before the run, so that both runs wait alike.
				waits := make([][2]int, 8)
				for i := range waits {
					waits[i] = [2]int{rng.IntN(len(chans)), 1 + rng.IntN(5)}
				}
				s.Go(fmt.Sprint("waiter-", a), func() {
					for _, w := range waits {
						tick, _ := core.SignalAfter(s, clock, time.Duration(w[1])*time.Second)
						s.Wait("a signal or a tick", chans[w[0]], tick)
					}
				})
			}
			closes := rng.Perm(len(chans))
			s.Go("closer", func() {
				for _, i := range closes {
					clock.Sleep(time.Duration(4+rng.IntN(8)) * time.Second)
					close(chans[i])
					if watch {
						s.Closed(chans[i])
					}
				}
			})
			Expect(s.Run(nil)).To(Succeed())
			return s.Decisions()
		}
		for seed := range uint64(200) {
			Expect(run(seed, true)).To(Equal(run(seed, false)), "seed %d", seed)
		}
	})

	It("an actor that waits on a watched signal again, its last wait on it ended, takes that wait's entry: the signal lists one wait, in its first backing", func() {
		s := sim.New(sim.Options{Seed: 1})
		done := core.NewSignal(s)
		var listed []int
		s.Go("sleeper", func() {
			for range 10 {
				tick, _ := core.SignalAfter(s, s.Clock(), time.Second)
				s.Wait("done or a tick", done.C(), tick)
				listed = append(listed, sim.Waiters(s, done.C()))
			}
			done.Close()
		})
		Expect(s.Run(nil)).To(Succeed())
		Expect(listed).To(Equal([]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}), "it grew a wait at a time, to eight, till the ended ones were dropped")
	})

	It("an actor waiting on a channel nobody said they will close is polled, and wakes once it closes", func() {
		s := sim.New(sim.Options{ReplayStrict: true})
		polled := map[string]int{}
		sim.OnPoll(s, func(a string) { polled[a]++ })
		plain := make(chan struct{})
		watched := core.NewSignal(s)
		woke := waiters(s, 2, func(i int) <-chan struct{} {
			if i == 0 {
				return plain
			}
			return watched.C()
		})
		s.Go("busy", func() {
			for range 5 {
				s.Yield(core.Point{Kind: core.PointToolCall})
			}
			close(plain)
			s.Yield(core.Point{Kind: core.PointToolCall})
		})
		Expect(s.RunUntilIdle()).To(Succeed())
		Expect(woke).To(Equal([]bool{true, false}))
		Expect(polled).To(HaveKey("waiter-0"))
		Expect(polled).NotTo(HaveKey("waiter-1"))
		Expect(s.Live()).To(HaveLen(1))
		watched.Close()
		Expect(s.Run(nil)).To(Succeed())
		Expect(woke).To(Equal([]bool{true, true}))
	})

	It("a context of core.WithCancel wakes its waiters when it or an ancestor is cancelled; below a plain context it is polled", func() {
		s := sim.New(sim.Options{ReplayStrict: true})
		polled := map[string]int{}
		sim.OnPoll(s, func(a string) { polled[a]++ })
		base, stopBase := core.WithCancel(s, context.Background())
		own, cancelOwn := core.WithCancel(s, base)
		viaValue, _ := core.WithCancel(s, context.WithValue(base, struct{}{}, 1))
		plainMid, cancelPlain := context.WithCancel(base)
		below, _ := core.WithCancel(s, plainMid)
		ctxs := []context.Context{own, viaValue, below}
		woke := waiters(s, len(ctxs), func(i int) <-chan struct{} { return ctxs[i].Done() })
		Expect(s.Settle()).To(Succeed())

		cancelOwn(nil)
		Expect(s.Settle()).To(Succeed())
		Expect(woke).To(Equal([]bool{true, false, false}))

		stopBase(nil) // ends viaValue and, through the plain context, below
		Expect(s.Settle()).To(Succeed())
		Expect(woke).To(Equal([]bool{true, true, true}))
		Expect(polled).To(HaveKey("waiter-2"), "the plain context in between is not followed")
		Expect(polled).NotTo(HaveKey("waiter-0"))
		Expect(polled).NotTo(HaveKey("waiter-1"))
		cancelPlain()
		Expect(s.Run(nil)).To(Succeed())
	})

	It("after Kill, a signal that closes wakes only the actors started since, and none that was killed", func() {
		s := sim.New(sim.Options{Seed: 5})
		sig := core.NewSignal(s)
		killedWoke := waiters(s, 3, func(int) <-chan struct{} { return sig.C() })
		Expect(s.Settle()).To(Succeed())
		s.Kill()
		Expect(s.Live()).To(BeEmpty())
		woke := waiters(s, 2, func(int) <-chan struct{} { return sig.C() })
		Expect(s.Settle()).To(Succeed())
		sig.Close()
		Expect(s.Step()).To(BeTrue())
		Expect(lastChoice(s).Runnable).To(Equal(2))
		Expect(s.Run(nil)).To(Succeed())
		Expect(woke).To(Equal([]bool{true, true}))
		Expect(killedWoke).To(Equal([]bool{false, false, false}))
	})

	It("runs the one runnable actor, though another was made runnable after it and waits again", func() {
		// The first runnable actor always goes (ReplayStrict), so the
		// order is the ready set's alone.
		s := sim.New(sim.Options{ReplayStrict: true})
		wake, again := core.NewSignal(s), core.NewSignal(s)
		var order []string
		s.Go("woken", func() {
			order = append(order, "woken waits")
			s.Wait("wake", wake.C())
			order = append(order, "woken wakes")
			s.Wait("again", again.C()) // runnable last, and waiting again
			order = append(order, "woken ends")
		})
		s.Go("first", func() {
			for i := range 3 {
				order = append(order, fmt.Sprint("first ", i))
				if i == 0 {
					wake.Close()
				}
				s.Yield(core.Point{Kind: core.PointToolCall, Step: i})
			}
			again.Close()
		})
		Expect(s.Run(nil)).To(Succeed())
		Expect(order).To(Equal([]string{"woken waits", "first 0", "woken wakes", "first 1", "first 2", "woken ends"}))
		Expect(s.Decisions()).To(HaveLen(7))
		for _, d := range s.Decisions()[3:6] {
			Expect(d).To(Equal(sim.Decision{Choice: 0, Runnable: 1, Actor: "first"}))
		}
	})

	It("picks the i-th runnable actor in creation order while actors come and go by the thousand", func() {
		// Positions in the ready queue are handed out anew as they run
		// out; the order among runnable actors stays creation order.
		s := sim.New(sim.Options{Seed: 11})
		var start func(gen, n int)
		start = func(gen, n int) {
			for i := range n {
				s.Go(fmt.Sprintf("g%d-%d", gen, i), func() {
					s.Yield(core.Point{Kind: core.PointToolCall})
					if gen < 3 && i%2 == 0 {
						start(gen+1, 3)
					}
				})
			}
		}
		start(0, 300)
		steps := 0
		for {
			// Nothing waits, so every live actor is runnable.
			var live []string
			for _, a := range s.Live() {
				live = append(live, a.Name)
			}
			if !s.Step() {
				break
			}
			steps++
			d := lastChoice(s)
			Expect(d.Runnable).To(Equal(len(live)), "step %d", steps)
			Expect(d.Actor).To(Equal(live[d.Choice]), "step %d", steps)
		}
		Expect(s.Live()).To(BeEmpty())
		Expect(steps).To(BeNumerically(">", 2500))
	})
})
