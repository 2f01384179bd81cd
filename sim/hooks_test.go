package sim_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

// hookLog is what a simulation's hooks were told, in order.
type hookLog struct{ lines []string }

func (l *hookLog) step(a *sim.Actor) {
	l.lines = append(l.lines, fmt.Sprintf("step %s %d done=%v", a.Name, a.Point.Step, a.Done))
}

func (l *hookLog) jump(from, to time.Time) {
	l.lines = append(l.lines, fmt.Sprintf("jump %v %v", from.Sub(sim.Epoch), to.Sub(sim.Epoch)))
}

// logHooks is a hookLog as sim.Hooks.
type logHooks struct{ *hookLog }

func (h logHooks) Step(a *sim.Actor)       { h.step(a) }
func (h logHooks) Jump(from, to time.Time) { h.jump(from, to) }

// hookedWorld runs seed's world of actors that sleep and yield, with the
// hooks hook makes from its log, and returns what the hooks were told and
// the decisions.
func hookedWorld(seed uint64, hook func(l *hookLog) sim.Options) ([]string, []sim.Decision) {
	l := &hookLog{}
	opts := hook(l)
	opts.Seed = int64(seed)
	s := sim.New(opts)
	rng := rand.New(rand.NewPCG(seed, 11))
	for i := range 1 + rng.IntN(4) {
		steps, naps := 1+rng.IntN(5), make([]time.Duration, 5)
		for j := range naps {
			naps[j] = time.Duration(rng.IntN(3)) * time.Second
		}
		s.Go(fmt.Sprint("actor", i), func() {
			for j := range steps {
				if naps[j] > 0 {
					s.Clock().Sleep(naps[j])
				}
				s.Yield(core.Point{Kind: core.PointToolCall, Step: j})
			}
		})
	}
	Expect(s.Run(nil)).To(Succeed())
	Expect(s.RunFor(time.Duration(rng.IntN(3)) * time.Second)).To(Succeed())
	return l.lines, s.Decisions()
}

var _ = Describe("Options.Hooks", func() {
	It("is told of every step and jump as OnStep and OnJump are, alone, together or beside them", func() {
		funcs := func(l *hookLog) sim.Options { return sim.Options{OnStep: l.step, OnJump: l.jump} }
		for seed := range uint64(200) {
			want, decisions := hookedWorld(seed, funcs)
			Expect(want).NotTo(BeEmpty())
			got, gotDecisions := hookedWorld(seed, func(l *hookLog) sim.Options { return sim.Options{Hooks: logHooks{l}} })
			Expect(got).To(Equal(want), "seed %d", seed)
			Expect(gotDecisions).To(Equal(decisions), "seed %d", seed)

			// OnStep alone, and OnJump alone, are told of just their own.
			var steps, jumps []string
			for _, line := range want {
				if line[:4] == "step" {
					steps = append(steps, line)
				} else {
					jumps = append(jumps, line)
				}
			}
			got, _ = hookedWorld(seed, func(l *hookLog) sim.Options { return sim.Options{OnStep: l.step} })
			Expect(got).To(Equal(steps), "seed %d", seed)
			got, _ = hookedWorld(seed, func(l *hookLog) sim.Options { return sim.Options{OnJump: l.jump} })
			Expect(got).To(Equal(jumps), "seed %d", seed)

			// Beside OnStep and OnJump, Hooks is told after them.
			got, _ = hookedWorld(seed, func(l *hookLog) sim.Options {
				return sim.Options{OnStep: l.step, OnJump: l.jump, Hooks: logHooks{l}}
			})
			var twice []string
			for _, line := range want {
				twice = append(twice, line, line)
			}
			Expect(got).To(Equal(twice), "seed %d", seed)
			got, _ = hookedWorld(seed, func(l *hookLog) sim.Options { return sim.Options{OnJump: l.jump, Hooks: logHooks{l}} })
			var jumpsTwice []string
			for _, line := range want {
				jumpsTwice = append(jumpsTwice, line)
				if line[:4] == "jump" {
					jumpsTwice = append(jumpsTwice, line)
				}
			}
			Expect(got).To(Equal(jumpsTwice), "seed %d", seed)
		}
	})
})
