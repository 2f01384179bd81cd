package sim_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

var _ = Describe("virtual time", func() {
	It("a week of virtual timers runs in a few hundred steps, every timer at its instant", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		var hourly, daily []time.Duration
		s.Go("hourly", func() {
			for range 7 * 24 {
				clock.Sleep(time.Hour)
				hourly = append(hourly, clock.Elapsed())
			}
		})
		s.Go("daily", func() {
			for range 7 {
				clock.Sleep(24 * time.Hour)
				daily = append(daily, clock.Elapsed())
			}
		})
		var ticks int
		var tick func()
		tick = func() {
			ticks++
			clock.AfterFunc(15*time.Minute, tick)
		}
		clock.AfterFunc(15*time.Minute, tick)

		Expect(s.RunFor(7 * 24 * time.Hour)).To(Succeed())
		Expect(clock.Elapsed()).To(Equal(7 * 24 * time.Hour))
		Expect(hourly).To(HaveLen(168))
		Expect(hourly[0]).To(Equal(time.Hour))
		Expect(hourly[167]).To(Equal(168 * time.Hour))
		Expect(daily).To(Equal([]time.Duration{24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 96 * time.Hour, 120 * time.Hour, 144 * time.Hour, 168 * time.Hour}))
		Expect(ticks).To(Equal(7 * 24 * 4))
		Expect(s.Steps()).To(Equal(168 + 1 + 7 + 1)) // one step per wake-up, plus each actor's last
		Expect(s.Live()).To(BeEmpty())
	})

	It("virtual time starts at a fixed instant and moves only when nothing can run", func() {
		s := sim.New(sim.Options{Seed: 3})
		Expect(s.Clock().Now()).To(Equal(sim.Epoch))
		var sawBusy time.Duration = -1
		s.Go("sleeper", func() { s.Clock().Sleep(time.Minute) })
		s.Go("busy", func() {
			for range 50 {
				s.Yield(core.Point{Kind: core.PointToolCall})
			}
			sawBusy = s.Clock().Elapsed()
		})
		Expect(s.Run(nil)).To(Succeed())
		Expect(sawBusy).To(Equal(time.Duration(0)))
		Expect(s.Clock().Elapsed()).To(Equal(time.Minute))
	})

	It("RunFor runs to its horizon: the clock ends there, timers past it stay pending, actors still waiting stay parked", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		var woke []time.Duration
		s.Go("sleeper", func() {
			clock.Sleep(2 * time.Hour)
			woke = append(woke, clock.Elapsed())
		})
		Expect(s.RunFor(90 * time.Minute)).To(Succeed())
		Expect(clock.Elapsed()).To(Equal(90 * time.Minute))
		Expect(woke).To(BeEmpty())
		Expect(clock.Pending()).To(Equal(1))
		Expect(s.Live()).To(HaveLen(1))
		Expect(s.RunFor(time.Hour)).To(Succeed())
		Expect(woke).To(Equal([]time.Duration{2 * time.Hour}))
		Expect(clock.Elapsed()).To(Equal(150 * time.Minute))
		Expect(s.Live()).To(BeEmpty())
	})

	It("timers fire up to the horizon with no actor alive, and an actor a callback starts runs at its instant", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		var ran []time.Duration
		var arm func()
		arm = func() {
			clock.AfterFunc(time.Hour, func() {
				s.Go("job", func() { ran = append(ran, clock.Elapsed()) })
				arm()
			})
		}
		arm()
		Expect(s.RunFor(3*time.Hour + time.Minute)).To(Succeed())
		Expect(ran).To(Equal([]time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}))
	})

	It("Settle runs what can run now and fires what is due now, without moving the clock", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		var log []string
		clock.AfterFunc(0, func() { log = append(log, "due now") })
		clock.AfterFunc(time.Second, func() { log = append(log, "later") })
		s.Go("actor", func() { log = append(log, "actor") })
		Expect(s.Settle()).To(Succeed())
		Expect(log).To(ConsistOf("actor", "due now"))
		Expect(clock.Elapsed()).To(BeZero())
	})

	It("Step does one thing at a time: an actor step, or the timers of the earliest deadline", func() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		s.Go("sleeper", func() { clock.Sleep(time.Minute) })
		Expect(s.Step()).To(BeTrue()) // the sleeper parks
		Expect(clock.Elapsed()).To(BeZero())
		Expect(s.Step()).To(BeTrue()) // the clock jumps and its timer fires
		Expect(clock.Elapsed()).To(Equal(time.Minute))
		Expect(s.Step()).To(BeTrue()) // the sleeper ends
		Expect(s.Step()).To(BeFalse())
		Expect(s.Steps()).To(Equal(2))
	})

	It("the clock starts at Options.Start when one is given, and Elapsed counts from there", func() {
		monday := time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC)
		s := sim.New(sim.Options{Seed: 1, Start: monday})
		s.Go("sleeper", func() { s.Clock().Sleep(time.Hour) })
		Expect(s.Run(nil)).To(Succeed())
		Expect(s.Clock().Now()).To(Equal(monday.Add(time.Hour)))
		Expect(s.Clock().Elapsed()).To(Equal(time.Hour))
	})
})

var _ = Describe("deadlock detection", func() {
	It("reports, when nothing can run and no timer is pending, what every actor waits on", func() {
		s := sim.New(sim.Options{Seed: 1})
		approval := make(chan struct{})
		done := make(chan struct{})
		s.Go("reviewer", func() {
			s.Wait("the approval inbox", approval)
			close(done)
		})
		s.Go("coordinator", func() { s.Wait("the reviewer's verdict", done) })
		s.Go("ticker", func() { s.Clock().Sleep(time.Second) })

		err := s.Run(nil)
		var dl *sim.DeadlockError
		Expect(errors.As(err, &dl)).To(BeTrue(), "got %v", err)
		Expect(dl.At).To(Equal(time.Second))
		Expect(dl.Actors).To(HaveLen(2))
		Expect(err.Error()).To(ContainSubstring("deadlock at +1s"))
		Expect(err.Error()).To(ContainSubstring("reviewer waits on the approval inbox"))
		Expect(err.Error()).To(ContainSubstring("coordinator waits on the reviewer's verdict"))
		s.Kill()
		Expect(s.Live()).To(BeEmpty())
	})

})
