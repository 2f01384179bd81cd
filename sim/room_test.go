package sim_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/sim"
)

// roomRun is a run of one kind of ending, told as text: the order its
// actors stepped in, the decisions, and how it ended.
type roomRun func(opts sim.Options) string

// roomRuns are runs that leave a Sim in every state a room can go back
// from: all actors finished with a watched signal, a timer and a ticker
// still open; a panic; a crash (Run stopped early, then Kill); a deadlock
// (then Kill); actors left parked past a horizon (then Kill).
var roomRuns = map[string]roomRun{
	"finished": func(opts sim.Options) string {
		s := sim.New(opts)
		var order []string
		open := core.NewSignal(s) // never closed
		done := core.NewSignal(s)
		s.Clock().AfterFunc(time.Hour, func() {})
		s.Clock().NewTicker(time.Minute)
		for _, name := range []string{"a", "b", "c"} {
			s.Go(name, func() {
				for i := range 3 {
					order = append(order, fmt.Sprint(name, i))
					if name == "a" && i == 1 {
						s.Clock().Sleep(time.Second)
						continue
					}
					if name == "c" && i == 2 {
						done.Close()
					}
					if name == "b" && i == 2 {
						s.Wait("done or never", open.C(), done.C())
						continue
					}
					s.Yield(core.Point{Kind: core.PointToolCall, Step: i})
				}
			})
		}
		err := s.Run(nil)
		return transcript(s, order, err)
	},
	"panicked": func(opts sim.Options) string {
		s := sim.New(opts)
		var order []string
		s.Go("parked", func() {
			defer func() { order = append(order, "parked unwound") }()
			for i := 0; ; i++ {
				order = append(order, fmt.Sprint("parked", i))
				s.Yield(core.Point{Kind: core.PointProviderStep})
			}
		})
		s.Go("faulty", func() {
			order = append(order, "faulty")
			s.Yield(core.Point{Kind: core.PointToolCall})
			panic("in the middle of a step")
		})
		var p any
		func() {
			defer func() { p = recover() }()
			_ = s.Run(nil)
		}()
		return transcript(s, order, errors.New(strings.SplitN(fmt.Sprint(p), "\n", 2)[0]))
	},
	"crashed": func(opts sim.Options) string {
		var order []string
		s := pair(opts, func(s *sim.Sim, name string, i int) bool {
			order = append(order, fmt.Sprint(name, i))
			s.Yield(core.Point{Kind: core.PointToolCall})
			return true
		})
		err := s.Run(func() bool { return len(order) >= 5 })
		s.Kill()
		return transcript(s, order, err)
	},
	"deadlocked": func(opts sim.Options) string {
		var order []string
		var never core.Signal
		s := pair(opts, func(s *sim.Sim, name string, i int) bool {
			order = append(order, name)
			s.Yield(core.Point{Kind: core.PointToolCall})
			s.Wait("never", never.C())
			return false
		})
		never = core.NewSignal(s)
		err := s.Run(nil)
		s.Kill()
		return transcript(s, order, err)
	},
	"parked past the horizon": func(opts sim.Options) string {
		var order []string
		s := pair(opts, func(s *sim.Sim, name string, i int) bool {
			order = append(order, fmt.Sprint(name, i, "@", s.Clock().Elapsed()))
			s.Clock().Sleep(time.Duration(len(name)) * time.Minute)
			return true
		})
		err := s.RunFor(5 * time.Minute)
		s.Kill()
		return transcript(s, order, err)
	},
}

// pair starts actors a and b on a new Sim, each taking rounds until round
// returns false.
func pair(opts sim.Options, round func(s *sim.Sim, name string, i int) bool) *sim.Sim {
	s := sim.New(opts)
	for _, name := range []string{"a", "b"} {
		s.Go(name, func() {
			for i := 0; round(s, name, i); i++ {
			}
		})
	}
	return s
}

func transcript(s *sim.Sim, order []string, err error) string {
	return fmt.Sprintf("%s | %v | %v | live %v | pending %d", strings.Join(order, " "), s.Decisions(), err, s.Live(), s.Clock().Pending())
}

var _ = Describe("a Sim's room on a pool", func() {
	It("runs every kind of run the same on a room another kind of run left, as on a Sim of its own", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		kinds := []string{"finished", "panicked", "crashed", "deadlocked", "parked past the horizon"}
		for seed := int64(1); seed <= 6; seed++ {
			for _, first := range kinds {
				for _, then := range kinds {
					roomRuns[first](sim.Options{Seed: seed, Pool: pool})
					Expect(sim.PoolRooms(pool)).To(Equal(1), "%s gave its room back", first)
					Expect(roomRuns[then](sim.Options{Seed: seed, Pool: pool})).
						To(Equal(roomRuns[then](sim.Options{Seed: seed})), "%s after %s, seed %d", then, first, seed)
				}
			}
		}
	})

	It("is the pool's once the Sim is empty and its driver has returned, and the next Sim on the pool takes it", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		s := sim.New(sim.Options{Seed: 1, Pool: pool})
		s.Go("a", func() {
			Expect(sim.PoolRooms(pool)).To(Equal(0), "the Sim that runs holds it")
			s.Yield(core.Point{Kind: core.PointToolCall})
		})
		Expect(s.Run(nil)).To(Succeed())
		Expect(sim.PoolRooms(pool)).To(Equal(1))

		next := sim.New(sim.Options{Seed: 2, Pool: pool})
		next.Go("b", func() {})
		Expect(sim.PoolRooms(pool)).To(Equal(0), "the next Sim took it with its first actor")
		Expect(next.Run(nil)).To(Succeed())
		Expect(sim.PoolRooms(pool)).To(Equal(1))
	})

	It("is never given back while the Sim's driver has not returned, nor while an actor of the Sim is alive", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		outer := sim.New(sim.Options{Seed: 1, Pool: pool})
		outer.Go("outer", func() {
			// A Sim driven inside another's actor: its room goes back when
			// its own driver returns, the outer one's does not.
			inner := sim.New(sim.Options{Seed: 1, Pool: pool})
			inner.Go("inner", func() { inner.Yield(core.Point{Kind: core.PointToolCall}) })
			Expect(inner.Run(nil)).To(Succeed())
			Expect(sim.PoolRooms(pool)).To(Equal(1), "the inner Sim's")
			outer.Yield(core.Point{Kind: core.PointToolCall})
			Expect(sim.PoolRooms(pool)).To(Equal(1), "the outer Sim still holds its own")
		})
		outer.Clock().AfterFunc(time.Second, func() {
			// A callback runs inside the driver: a Settle in it returns,
			// the driver has not.
			Expect(outer.Settle()).To(Succeed())
			Expect(sim.PoolRooms(pool)).To(Equal(1))
		})
		Expect(outer.Run(nil)).To(Succeed())
		Expect(sim.PoolRooms(pool)).To(Equal(2))

		// Actors left parked or waiting keep it once the driver returns;
		// a Kill from outside the driver gives it back.
		held := sim.New(sim.Options{Seed: 1, Pool: pool})
		Expect(sim.PoolRooms(pool)).To(Equal(2), "a Sim takes a room when it first needs one")
		held.Go("sleeper", func() { held.Clock().Sleep(time.Hour) })
		Expect(sim.PoolRooms(pool)).To(Equal(1))
		Expect(held.RunFor(time.Minute)).To(Succeed())
		Expect(sim.PoolRooms(pool)).To(Equal(1), "a parked actor keeps the room")
		never := make(chan struct{})
		held.Go("waiter", func() { held.Wait("never", never) })
		Expect(held.Run(nil)).To(MatchError(ContainSubstring("deadlock")))
		Expect(sim.PoolRooms(pool)).To(Equal(1), "a deadlock's actors keep the room")
		held.Kill()
		Expect(sim.PoolRooms(pool)).To(Equal(2))
	})

	It("never takes a timer with it: a timer handed out in one run, reset after the room went back, is its own Sim's alone", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		first := sim.New(sim.Options{Seed: 1, Pool: pool})
		fired := 0
		t := first.Clock().AfterFunc(time.Minute, func() { fired++ })
		first.Go("a", func() {})
		Expect(first.Run(nil)).To(Succeed())
		Expect(sim.PoolRooms(pool)).To(Equal(1))

		want, _ := interleaving(sim.Options{Seed: 3})
		second := sim.New(sim.Options{Seed: 3, Pool: pool})
		var order []string
		for _, name := range []string{"a", "b", "c"} {
			second.Go(name, func() {
				for i := range 4 {
					order = append(order, fmt.Sprint(name, i))
					if name == "b" && i == 1 {
						// The first Sim's timer, reset while the second
						// holds the room the first one had.
						Expect(t.Reset(time.Hour)).To(BeTrue())
						Expect(t.Stop()).To(BeTrue())
						Expect(t.Reset(2 * time.Hour)).To(BeFalse())
					}
					second.Yield(core.Point{Kind: core.PointToolCall, Step: i})
				}
			})
		}
		Expect(second.Run(nil)).To(Succeed())
		Expect(strings.Join(order, " ")).To(Equal(want))
		Expect(second.Clock().Pending()).To(Equal(0))
		Expect(first.Clock().Pending()).To(Equal(1))
		Expect(first.RunFor(2 * time.Hour)).To(Succeed())
		Expect(fired).To(Equal(1))
		Expect(first.Clock().Elapsed()).To(Equal(2 * time.Hour))
	})

	It("a run on a warm pool, or after another Sim without a pool, allocates none of the room: only the Sim itself", func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
		// Four actors (the room's first three, and one the room kept from
		// the run before), waits on watched signals, a sleep: what a
		// short run uses.
		run := func(pool *sim.Pool) {
			s := sim.New(sim.Options{Seed: 1, Pool: pool})
			done := core.NewSignal(s)
			for i := range 4 {
				s.Go("peer", func() {
					s.Yield(core.Point{Kind: core.PointToolCall})
					if i == 0 {
						s.Clock().Sleep(time.Second)
						done.Close()
						return
					}
					s.Wait("done", done.C())
				})
			}
			if err := s.Run(nil); err != nil {
				panic(err)
			}
		}
		bytes := func(pool *sim.Pool) float64 {
			_, n := fixture.Cost(100, func() { run(pool) })
			return n
		}
		pool := sim.NewPool(0)
		defer pool.Close()
		// The Sim (in its size class), and what is not the Sim's: two
		// signals' channels, the actors' closures, the sleep's reason and
		// the closure that closes its signal (some 500 bytes).
		Expect(bytes(pool)).To(BeNumerically("<=", float64(sim.SimSize+768)), "the room (%d bytes) was made", sim.RoomSize)
		// Without a pool the run makes its coroutines (iter.Pull's, some
		// 100 bytes each) but not its room: the Sim before it gave its
		// room back to the Sims without a pool.
		Expect(bytes(nil)).To(BeNumerically("<", float64(sim.SimSize+sim.RoomSize)), "without a pool, the room (%d bytes) was made", sim.RoomSize)
	})
})
