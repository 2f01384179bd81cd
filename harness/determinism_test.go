package harness_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

var _ = Describe("determinism", func() {
	It("the same scenario and seed give a byte-identical transcript, trace and schedule: every built-in, seeds 1..60", func() {
		for _, b := range scenarios.Builtins() {
			for seed := int64(1); seed <= 60; seed++ {
				Expect(harness.CheckDeterminism(builtin(b.Name), harness.Options{Seed: seed})).To(Succeed(), "%s seed %d", b.Name, seed)
			}
		}
	})

	It("the check reports a scenario that is not deterministic, with the first line that differs", func() {
		calls := 0 // state kept between runs: the second run sees other numbers
		counter := &core.Tool{Run: func(context.Context, core.ToolCall, any) (any, error) {
			calls++
			return map[string]int{"calls": calls}, nil
		}}
		agent := &core.Agent{ID: "counter-agent", Tools: core.Tools{"count": counter}}
		sc := scenarios.New("stateful").Agent("main", agent).
			Script("counter-agent", scripted.Calls(scripted.Use("count", map[string]any{})), scripted.Say("done"))

		err := harness.CheckDeterminism(sc, harness.Options{Seed: 5})
		var de *harness.DeterminismError
		Expect(errors.As(err, &de)).To(BeTrue(), "got %v", err)
		Expect(de.What).To(Equal("transcript"))
		Expect(de.Seed).To(Equal(int64(5)))
		Expect(de.First).To(ContainSubstring(`{"calls":1}`))
		Expect(de.Second).To(ContainSubstring(`{"calls":2}`))
		Expect(err.Error()).To(ContainSubstring("stateful seed 5 is not deterministic"))
	})

	It("the scheduling stream is independent of the fault stream: extra fault draws do not shift a single scheduling choice", func() {
		for seed := int64(1); seed <= 40; seed++ {
			plain := harness.Run(builtin("cancel-vs-complete"), harness.Options{Seed: seed})
			// A provider error on every step of every agent that never fires
			// still draws from the fault stream once per provider step.
			drawing := builtin("cancel-vs-complete")
			drawing.Inject(
				scenarios.Fault{Kind: scenarios.FaultProviderError, Agent: "research-agent", Probability: 1e-12},
				scenarios.Fault{Kind: scenarios.FaultProviderError, Agent: "research-coordinator", Probability: 1e-12},
			)
			o := harness.Run(drawing, harness.Options{Seed: seed})
			Expect(o.Decisions).To(Equal(plain.Decisions), "seed %d", seed)
			Expect(transcript(o)).To(Equal(transcript(plain)), "seed %d", seed)
		}
	})

	It("the schedule depends on the seed: different seeds choose different interleavings", func() {
		schedules := map[string]bool{}
		for seed := int64(1); seed <= 20; seed++ {
			o := harness.Run(builtin("research-coordinator"), harness.Options{Seed: seed})
			Expect(o.Passed()).To(BeTrue())
			var s []byte
			for _, d := range o.Decisions {
				s = append(s, byte('0'+d.Choice))
			}
			schedules[string(s)] = true
		}
		Expect(len(schedules)).To(BeNumerically(">", 1))
	})

	It("a recorded schedule, replayed, reproduces its run", func() {
		o := harness.Run(builtin("detach-vs-result"), harness.Options{Seed: 11})
		choices := make([]int, len(o.Decisions))
		for i, d := range o.Decisions {
			choices[i] = d.Choice
		}
		// The detach fault's jitter is drawn from the fault stream, so the
		// seed stays; only the scheduling stream is replaced.
		again := harness.Run(builtin("detach-vs-result"), harness.Options{Seed: 11, Replay: choices})
		Expect(transcript(again)).To(Equal(transcript(o)))
		Expect(again.Decisions).To(Equal(o.Decisions))
	})
})
