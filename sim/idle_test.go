package sim_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jonboulle/clockwork"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/sim"
)

// idleWorld is a simulation with two pollers that re-arm their own timers
// (every minute, and every five), most of whose rounds are idle, beside
// one-off timers and an actor that arm timers of their own at the same
// instants; with skip, the pollers tell the clock their idle rounds
// (SkipIdle), and with spans, the runs of them up to their next busy
// round (SkipIdleSpan).
type idleWorld struct {
	log     []string
	jumps   int
	idleRan int // idle rounds the callbacks ran
	asked   int // idle rounds the clock asked about
	// next is each poller's note of when it is next due, which every
	// round, its callback's or its idle function's, writes.
	next map[string]time.Duration
}

type skipping int

const (
	noSkip skipping = iota
	skipRounds
	skipSpans
)

func runIdleWorld(seed uint64, skip skipping) idleWorld {
	w := idleWorld{next: map[string]time.Duration{}}
	rng := rand.New(rand.NewPCG(seed, 7))
	s := sim.New(sim.Options{Seed: int64(seed), OnJump: func(from, to time.Time) { w.jumps++ }})
	clock := s.Clock()
	note := func(what string) { w.log = append(w.log, fmt.Sprintf("%s at %v", what, clock.Elapsed())) }
	// busy holds the instants at which a poller's round does something.
	poller := func(name string, period time.Duration, busy map[time.Duration]bool) {
		var t clockwork.Timer
		t = clock.AfterFunc(period, func() {
			w.next[name] = clock.Elapsed() + period
			if !busy[clock.Elapsed()] {
				w.idleRan++
				t.Reset(period)
				return
			}
			note(name + " works")
			clock.AfterFunc(0, func() { note(name + "'s follow-up") })
			t.Reset(period)
		})
		switch skip {
		case skipRounds:
			t.(interface {
				SkipIdle(func(time.Duration) (time.Duration, bool))
			}).SkipIdle(func(at time.Duration) (time.Duration, bool) {
				w.asked++
				if busy[at] {
					return 0, false
				}
				w.next[name] = at + period
				return period, true
			})
		case skipSpans:
			t.(interface {
				SkipIdleSpan(func(time.Duration) (time.Duration, time.Duration, bool))
			}).SkipIdleSpan(func(at time.Duration) (time.Duration, time.Duration, bool) {
				w.asked++
				if busy[at] {
					return 0, 0, false
				}
				w.next[name] = at + period
				// Idle up to the next busy round.
				until := time.Duration(math.MaxInt64)
				for b := range busy {
					if b > at && b < until {
						until = b
					}
				}
				return period, until, true
			})
		}
	}
	minutely, fively := map[time.Duration]bool{}, map[time.Duration]bool{}
	for range 8 {
		minutely[time.Duration(1+rng.IntN(120))*time.Minute] = true
		fively[time.Duration(1+rng.IntN(24))*5*time.Minute] = true
	}
	// Instants at which both work: the order of their callbacks there is
	// the order of their ranks, which their idle rounds before gave them.
	for range 3 {
		at := time.Duration(1+rng.IntN(24)) * 5 * time.Minute
		minutely[at], fively[at] = true, true
	}
	// One-offs at whole minutes (the pollers' instants) and between them;
	// some arm another for the same instant or for a minute later.
	for i := range 40 {
		at := time.Duration(1+rng.IntN(120)) * time.Minute
		if i%4 == 0 {
			at += 30 * time.Second
		}
		then := rng.IntN(3)
		name := fmt.Sprintf("one-off %d", i)
		clock.AfterFunc(at, func() {
			note(name)
			if then < 2 {
				clock.AfterFunc(time.Duration(then)*time.Minute, func() { note(name + "'s next") })
			}
		})
		if i == 20 {
			poller("minutely", time.Minute, minutely) // armed among the one-offs
		}
	}
	poller("five-minutely", 5*time.Minute, fively)
	s.Go("sleeper", func() {
		for i := range 12 {
			clock.Sleep(time.Duration(1+rng.IntN(20)) * time.Minute)
			note(fmt.Sprintf("sleeper wakes %d", i))
			clock.AfterFunc(time.Duration(rng.IntN(2))*time.Minute, func() { note(fmt.Sprintf("sleeper's timer %d", i)) })
		}
	})
	for range 6 {
		Expect(s.RunFor(time.Duration(1+rng.IntN(30)) * time.Minute)).To(Succeed())
		note("horizon")
	}
	Expect(s.Run(nil)).To(Succeed()) // till the sleeper is done
	note("end")
	return w
}

var _ = Describe("idle rounds told to the clock (SkipIdle)", func() {
	It("run without their callback and without stopping the clock, and every timer still fires at the time and in the order it did", func() {
		var idleRan, idleSkippedRan int
		for seed := range uint64(40) {
			ran, skipped := runIdleWorld(seed, noSkip), runIdleWorld(seed, skipRounds)
			idleRan, idleSkippedRan = idleRan+ran.idleRan, idleSkippedRan+skipped.idleRan
			Expect(skipped.log).To(Equal(ran.log), "seed %d", seed)
			Expect(ran.idleRan).To(BeNumerically(">", 20), "seed %d", seed)
			// Only a round that is not the first thing due at its
			// instant runs its callback: one at an instant another
			// timer has too.
			Expect(skipped.idleRan).To(BeNumerically("<", ran.idleRan), "seed %d: idle rounds the callbacks ran", seed)
			Expect(skipped.jumps).To(BeNumerically("<", ran.jumps), "seed %d", seed)
		}
		Expect(idleSkippedRan).To(BeNumerically("<", idleRan/2))
	})

	It("in spans (SkipIdleSpan) run without even asking, and every timer still fires at the time and in the order it did, and every poller's state is what its rounds leave", func() {
		var asked, spanAsked int
		for seed := range uint64(40) {
			ran, rounds, spans := runIdleWorld(seed, noSkip), runIdleWorld(seed, skipRounds), runIdleWorld(seed, skipSpans)
			Expect(spans.log).To(Equal(ran.log), "seed %d", seed)
			Expect(spans.next).To(Equal(ran.next), "seed %d: the pollers' notes of when they are next due", seed)
			Expect(spans.idleRan).To(Equal(rounds.idleRan), "seed %d: idle rounds the callbacks ran", seed)
			Expect(spans.jumps).To(Equal(rounds.jumps), "seed %d", seed)
			asked, spanAsked = asked+rounds.asked, spanAsked+spans.asked
		}
		Expect(spanAsked).To(BeNumerically("<", asked), "idle rounds asked about (the world stops the pollers often: a one-off or the sleeper every few minutes)")
	})

	It("a span is taken at its word only before its until: the round due then is asked, and runs its callback when busy", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		var calls, asked []time.Duration
		var t clockwork.Timer
		t = clock.AfterFunc(time.Minute, func() {
			calls = append(calls, clock.Elapsed())
			t.Reset(time.Minute)
		})
		t.(interface {
			SkipIdleSpan(func(time.Duration) (time.Duration, time.Duration, bool))
		}).SkipIdleSpan(func(at time.Duration) (time.Duration, time.Duration, bool) {
			asked = append(asked, at)
			next := (at/(10*time.Minute) + 1) * 10 * time.Minute
			return time.Minute, next, at%(10*time.Minute) != 0
		})
		// A horizon a nanosecond before a round, then one at it.
		Expect(s.RunFor(25*time.Minute - 1)).To(Succeed())
		Expect(s.RunFor(1)).To(Succeed())
		Expect(calls).To(Equal([]time.Duration{10 * time.Minute, 20 * time.Minute}))
		// Asked at the first round of each span, at its last (to leave
		// the state as the rounds between would), and at the round due at
		// its until; the first horizon ends the last span at 24 minutes,
		// and the round at 25 is asked in the second.
		m := time.Minute
		Expect(asked).To(Equal([]time.Duration{1 * m, 9 * m, 10 * m, 11 * m, 19 * m, 20 * m, 21 * m, 24 * m, 25 * m}))
		Expect(clock.Elapsed()).To(Equal(25 * time.Minute))
		Expect(clock.Pending()).To(Equal(1))
	})

	It("a skipped round's re-arm past the largest duration from the start is due at that duration, as its Reset's would be", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		var log []string
		var t clockwork.Timer
		t = clock.AfterFunc(math.MaxInt64-time.Hour, func() { log = append(log, fmt.Sprintf("poller at %v", clock.Elapsed())) })
		clock.AfterFunc(math.MaxInt64, func() { log = append(log, fmt.Sprintf("far at %v", clock.Elapsed())) })
		rounds := 0
		t.(interface {
			SkipIdle(func(time.Duration) (time.Duration, bool))
		}).SkipIdle(func(time.Duration) (time.Duration, bool) {
			rounds++
			return 2 * time.Hour, rounds == 1
		})
		for s.Step() {
		}
		Expect(log).To(Equal([]string{
			fmt.Sprintf("far at %v", time.Duration(math.MaxInt64)),
			fmt.Sprintf("poller at %v", time.Duration(math.MaxInt64)),
		}))
	})

	It("a round its idle function finds busy runs the callback, at its instant", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		var calls []time.Duration
		var t clockwork.Timer
		t = clock.AfterFunc(time.Minute, func() {
			calls = append(calls, clock.Elapsed())
			t.Reset(time.Minute)
		})
		asked := 0
		t.(interface {
			SkipIdle(func(time.Duration) (time.Duration, bool))
		}).SkipIdle(func(at time.Duration) (time.Duration, bool) {
			asked++
			return time.Minute, at%(10*time.Minute) != 0
		})
		Expect(s.RunFor(30 * time.Minute)).To(Succeed())
		Expect(calls).To(Equal([]time.Duration{10 * time.Minute, 20 * time.Minute, 30 * time.Minute}))
		Expect(asked).To(Equal(30))
		Expect(clock.Elapsed()).To(Equal(30 * time.Minute))
		Expect(clock.Pending()).To(Equal(1))
	})
})

var _ = Describe("two lanes' spans run together", func() {
	It("leave what runLanes' rounds a lane at a time leave: the same idle calls in the same order, the same deadlines, ranks and last rounds, the same seq and outcome", func() {
		rng := rand.New(rand.NewPCG(84, 1))
		joint := 0
		for n := range 20000 {
			// Short resets and near deadlines, so that rounds of the two
			// lanes often fall due at one instant; now and then no bound,
			// no horizon or no until.
			pick := func(far int64, lo, hi int) int64 {
				if rng.IntN(8) == 0 {
					return far
				}
				return int64(lo + rng.IntN(hi-lo+1))
			}
			horizon := pick(math.MaxInt64, 0, 400)
			boundAt := pick(math.MaxInt64, 0, 400)
			if horizon == math.MaxInt64 && boundAt == math.MaxInt64 {
				boundAt = 400
			}
			boundSeq := uint64(rng.IntN(40))
			seq := uint64(40 + rng.IntN(10))
			// Each lane's idle function answers by its own stream, and
			// logs where it was asked.
			var log []string
			lanes := make([]sim.Lane, 2)
			for i := range lanes {
				at := int64(rng.IntN(30))
				reset := int64(1 + rng.IntN(6))
				lanes[i] = sim.Lane{At: at, Seq: uint64(rng.IntN(40)), Reset: reset, Until: at + pick(math.MaxInt64-at, 0, 150), Last: -1}
				answers := rng.Uint64()
				lanes[i].Idle = func(at time.Duration) (time.Duration, time.Duration, bool) {
					log = append(log, fmt.Sprintf("lane %d asked at %d", i, at))
					r := rand.New(rand.NewPCG(answers, uint64(at)))
					if r.IntN(6) == 0 || at > 600 {
						return 0, 0, false
					}
					return time.Duration(1 + r.IntN(6)), at + time.Duration(r.IntN(120)), true
				}
			}
			if lanes[0].Seq == lanes[1].Seq {
				lanes[1].Seq++ // ranks are unique
			}
			run := func(together bool) string {
				log = nil
				ls := append([]sim.Lane(nil), lanes...)
				out, last, stop, past := sim.RunLanes(ls, seq, horizon, boundAt, boundSeq, together)
				for i := range out {
					out[i].Idle = nil
				}
				return fmt.Sprintf("%v\n%+v seq %d stop %v past %v", log, out, last, stop, past)
			}
			alone, together := run(false), run(true)
			Expect(together).To(Equal(alone), "case %d", n)
			if lanes[0].Until > lanes[0].At && lanes[1].Until > lanes[1].At {
				joint++
			}
		}
		Expect(joint).To(BeNumerically(">", 10000))
	})
})
