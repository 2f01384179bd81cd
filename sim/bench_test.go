package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

// BenchmarkHandOff is the scheduler's hand-off alone: two actors that
// yield at a semantic point 1,000 times each, so that every step is a
// choice between two runnable actors, a resume and a park; ns/step is the
// cost of one.
func BenchmarkHandOff(b *testing.B) {
	const yields = 1000
	b.ReportAllocs()
	p := core.Point{Kind: core.PointToolCall}
	for b.Loop() {
		s := sim.New(sim.Options{Seed: 1})
		for _, name := range []string{"a", "b"} {
			s.Go(name, func() {
				for range yields {
					s.Yield(p)
				}
			})
		}
		if err := s.Run(nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*(yields+1)), "ns/step")
}

// BenchmarkIdleTimer is a timer callback that re-arms its own timer, as a
// poller that finds nothing to do does, 10,000 times over a clock that
// holds three other timers; ns/fire is the cost of one jump, fire and
// Reset.
func BenchmarkIdleTimer(b *testing.B) {
	const fires = 10_000
	b.ReportAllocs()
	for b.Loop() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		for i := range 3 {
			clock.AfterFunc(time.Duration(fires+i)*time.Hour, func() {})
		}
		var t interface{ Reset(time.Duration) bool }
		t = clock.AfterFunc(time.Minute, func() { t.Reset(time.Minute) })
		if err := s.RunFor(fires * time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fires), "ns/fire")
}

// BenchmarkSkippedIdleRounds is the clock running the idle rounds it was
// told of (SkipIdle) without stopping at them: two pollers, every minute
// and every five, whose every round is idle, beside two far timers, for a
// week of virtual time; the top of the heap changes at every five-minute
// round. ns/round is the cost of one.
func BenchmarkSkippedIdleRounds(b *testing.B) {
	skippedIdle(b, func(t clockwork.Timer, period time.Duration) {
		t.(interface {
			SkipIdle(func(time.Duration) (time.Duration, bool))
		}).SkipIdle(func(time.Duration) (time.Duration, bool) { return period, true })
	})
}

// BenchmarkSkippedIdleSpans is BenchmarkSkippedIdleRounds with the
// pollers' rounds told in spans (SkipIdleSpan): each is idle for as long
// as the simulation runs, so the clock asks each once and counts the
// rounds between its stops. ns/round is the cost of one.
func BenchmarkSkippedIdleSpans(b *testing.B) {
	skippedIdle(b, func(t clockwork.Timer, period time.Duration) {
		t.(interface {
			SkipIdleSpan(func(time.Duration) (time.Duration, time.Duration, bool))
		}).SkipIdleSpan(func(time.Duration) (time.Duration, time.Duration, bool) { return period, math.MaxInt64, true })
	})
}

// skippedIdle runs the week of BenchmarkSkippedIdleRounds, each poller's
// timer told its idle rounds by tell.
func skippedIdle(b *testing.B, tell func(t clockwork.Timer, period time.Duration)) {
	const horizon = 7 * 24 * time.Hour
	rounds := int(horizon/time.Minute + horizon/(5*time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		s := sim.New(sim.Options{Seed: 1})
		clock := s.Clock()
		for i := range 2 {
			clock.AfterFunc(horizon+time.Duration(i+1)*time.Hour, func() {})
		}
		for _, period := range []time.Duration{time.Minute, 5 * time.Minute} {
			var t clockwork.Timer
			t = clock.AfterFunc(period, func() { t.Reset(period) })
			tell(t, period)
		}
		if err := s.RunFor(horizon); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rounds), "ns/round")
}

// BenchmarkStepAlone is a step of the only runnable actor, with a hook told
// of every step, as a run of one agent mostly takes: an actor that yields
// 1,000 times; ns/step is the cost of one.
func BenchmarkStepAlone(b *testing.B) {
	const yields = 1000
	b.ReportAllocs()
	p := core.Point{Kind: core.PointToolCall}
	steps := 0
	for b.Loop() {
		s := sim.New(sim.Options{Seed: 1, OnStep: func(a *sim.Actor) { steps += a.Point.Step + 1 }})
		s.Go("alone", func() {
			for range yields {
				s.Yield(p)
			}
		})
		if err := s.Run(nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(yields+1)), "ns/step")
}
