package sim_test

import (
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

// peers runs n actors alive at once (none ends before all have started),
// and returns the goroutines they ran on.
func peers(s *sim.Sim, n int) map[string]bool {
	ids := map[string]bool{}
	for range n {
		s.Go("peer", func() {
			ids[goroutineID()] = true
			for len(ids) < n {
				s.Yield(core.Point{Kind: core.PointToolCall})
			}
		})
	}
	Expect(s.Run(nil)).To(Succeed())
	return ids
}

var _ = Describe("a pool of coroutines", func() {
	It("keeps a Sim's idle coroutines once its driver returns: the next Sim's actors run on the goroutines the last one's ran on", func() {
		before := goleak.IgnoreCurrent()
		pool := sim.NewPool(0)
		first := peers(sim.New(sim.Options{Seed: 1, Pool: pool}), 3)
		Expect(first).To(HaveLen(3))
		Expect(sim.PoolIdle(pool)).To(Equal(3))
		Expect(goleak.Find(before)).NotTo(Succeed(), "the pool's three goroutines are alive")

		second := peers(sim.New(sim.Options{Seed: 2, Pool: pool}), 3)
		Expect(second).To(Equal(first))
		Expect(sim.PoolIdle(pool)).To(Equal(3))
		pool.Close()
		Expect(sim.PoolIdle(pool)).To(Equal(0))
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("a Sim without a pool still leaves no goroutine behind, and shares none with the next", func() {
		before := goleak.IgnoreCurrent()
		first := peers(sim.New(sim.Options{Seed: 1}), 3)
		Expect(goleak.Find(before)).To(Succeed())
		second := peers(sim.New(sim.Options{Seed: 1}), 3)
		for id := range second {
			Expect(first).NotTo(HaveKey(id))
		}
	})

	It("is bounded: it keeps at most its size of idle coroutines and ends the others", func() {
		before := goleak.IgnoreCurrent()
		pool := sim.NewPool(2)
		first := peers(sim.New(sim.Options{Seed: 1, Pool: pool}), 5)
		Expect(first).To(HaveLen(5))
		Expect(sim.PoolIdle(pool)).To(Equal(2))
		second := peers(sim.New(sim.Options{Seed: 1, Pool: pool}), 5)
		shared := 0
		for id := range second {
			if first[id] {
				shared++
			}
		}
		Expect(shared).To(Equal(2), "two of the five ran on kept coroutines, three on new ones")
		pool.Close()
		Expect(goleak.Find(before)).To(Succeed())

		Expect(sim.DefaultPoolSize).To(Equal(64))
		big := sim.NewPool(0)
		defer big.Close()
		peers(sim.New(sim.Options{Seed: 1, Pool: big}), 70)
		Expect(sim.PoolIdle(big)).To(Equal(sim.DefaultPoolSize))
	})

	It("never keeps a killed actor's coroutine: the next Sim's actors do not run on it", func() {
		before := goleak.IgnoreCurrent()
		pool := sim.NewPool(0)
		s := sim.New(sim.Options{Seed: 1, Pool: pool})
		never := make(chan struct{})
		var killed, finished string
		s.Go("killed", func() {
			killed = goroutineID()
			s.Wait("a signal that never comes", never)
		})
		s.Go("finished", func() { finished = goroutineID() })
		Expect(s.RunUntilIdle()).To(Succeed())
		Expect(sim.PoolIdle(pool)).To(Equal(1), "the finished actor's coroutine")
		s.Kill()
		Expect(sim.PoolIdle(pool)).To(Equal(1), "the killed actor's coroutine ended")

		next := peers(sim.New(sim.Options{Seed: 1, Pool: pool}), 3)
		Expect(next).To(HaveKey(finished))
		Expect(next).NotTo(HaveKey(killed))
		pool.Close()
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("never keeps a panicked actor's coroutine, and the next Sim on the pool runs as it would on new ones", func() {
		before := goleak.IgnoreCurrent()
		pool := sim.NewPool(0)
		s := sim.New(sim.Options{Seed: 3, Pool: pool})
		var faulty string
		ids := map[string]bool{}
		chain(s, 2, func() { ids[goroutineID()] = true })
		s.Go("faulty", func() {
			faulty = goroutineID()
			s.Yield(core.Point{Kind: core.PointToolCall})
			panic("in the middle of a step")
		})
		s.Go("parked", func() {
			defer func() { recover() }() // recovers the kill: it still ends
			for {
				s.Yield(core.Point{Kind: core.PointProviderStep})
			}
		})
		Expect(func() { _ = s.Run(nil) }).To(PanicWith(BeAssignableToTypeOf(&sim.ActorPanic{})))
		Expect(sim.PoolIdle(pool)).To(BeNumerically("<=", 1), "at most the chain's coroutine, if it had finished")

		for seed := int64(1); seed <= 10; seed++ {
			fresh, _ := interleaving(sim.Options{Seed: seed})
			pooled, ps := interleaving(sim.Options{Seed: seed, Pool: pool})
			Expect(pooled).To(Equal(fresh), "seed %d", seed)
			Expect(ps.Steps()).To(Equal(15))
		}
		Expect(peers(sim.New(sim.Options{Seed: 1, Pool: pool}), 3)).NotTo(HaveKey(faulty))
		pool.Close()
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("a Sim on a pool makes the same choices in the same order as one without, on coroutines other actors ran on", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		for seed := int64(1); seed <= 20; seed++ {
			fresh, fs := interleaving(sim.Options{Seed: seed})
			pooled, ps := interleaving(sim.Options{Seed: seed, Pool: pool})
			Expect(pooled).To(Equal(fresh), "seed %d", seed)
			Expect(ps.Decisions()).To(Equal(fs.Decisions()), "seed %d", seed)
		}
	})

	It("a Sim that gives coroutines back to a closed pool ends them", func() {
		before := goleak.IgnoreCurrent()
		pool := sim.NewPool(0)
		s := sim.New(sim.Options{Seed: 1, Pool: pool})
		release := make(chan struct{})
		s.Go("held", func() { s.Wait("release", release) })
		Expect(s.RunUntilIdle()).To(Succeed())
		pool.Close()
		pool.Close() // twice is fine
		close(release)
		Expect(s.Run(nil)).To(Succeed())
		Expect(sim.PoolIdle(pool)).To(Equal(0))
		Expect(goleak.Find(before)).To(Succeed())
		peers(sim.New(sim.Options{Seed: 1, Pool: pool}), 2) // a closed pool lends nothing and keeps nothing
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("is safe for several Sims at once, on several goroutines", func() {
		before := goleak.IgnoreCurrent()
		pool := sim.NewPool(4)
		want := map[int64]string{}
		for seed := int64(1); seed <= 10; seed++ {
			want[seed], _ = interleaving(sim.Options{Seed: seed})
		}
		var wg sync.WaitGroup
		got := make([]map[int64]string, 3)
		for g := range got {
			got[g] = map[int64]string{}
			wg.Go(func() {
				defer GinkgoRecover()
				for range 20 {
					for seed := int64(1); seed <= 10; seed++ {
						got[g][seed], _ = interleaving(sim.Options{Seed: seed, Pool: pool})
					}
				}
			})
		}
		wg.Wait()
		for _, g := range got {
			Expect(g).To(Equal(want))
		}
		Expect(sim.PoolIdle(pool)).To(BeNumerically("<=", 4))
		pool.Close()
		Expect(goleak.Find(before)).To(Succeed())
	})

	It("a run on a warm pool makes no coroutine: it allocates iter.Pull's six fewer per actor alive at once", func() {
		run := func(pool *sim.Pool) float64 {
			return testing.AllocsPerRun(20, func() {
				s := sim.New(sim.Options{Seed: 1, Pool: pool})
				for range 3 {
					s.Go("peer", func() { s.Yield(core.Point{Kind: core.PointToolCall}) })
				}
				if err := s.Run(nil); err != nil {
					panic(err)
				}
			})
		}
		pool := sim.NewPool(0)
		defer pool.Close()
		// The body the room's coroutines run is made once a room, not
		// once a coroutine (it was 3*7), and a Sim without a pool takes
		// the room, body and all, that the Sim before it gave back (it
		// was 3*6+1).
		Expect(run(nil) - run(pool)).To(BeNumerically("==", 3*6))
	})
})
