package scenarios_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// A loaded scenario's top-level agents are prepared once, when it loads,
// for every run's runtime to share; the runtime finds an agent in that
// preparation by its pointer, so an agent put in place of a loaded one is
// run as it is, not as the one it replaced was prepared.
var _ = Describe("A loaded scenario's agents", func() {
	load := func() *Scenario {
		GinkgoHelper()
		sc, err := Load("spec.yaml", []byte("name: spec\n"+agentsYAML+foregroundScript))
		Expect(err).NotTo(HaveOccurred())
		return sc
	}

	It("are prepared once, when the file loads, and run from that preparation", func() {
		sc := load()
		set := sc.PreparedAgents()
		Expect(set).NotTo(BeNil())
		for seed := range int64(3) {
			run := harness.Run(sc, harness.Options{Seed: seed})
			Expect(run.Passed()).To(BeTrue(), "seed %d", seed)
			Expect(run.Outputs["coordinator"].Output.Raw).To(Equal("Done."))
		}
		Expect(sc.PreparedAgents()).To(BeIdenticalTo(set), "the runs do not prepare the scenario again")
	})

	It("keep the form they were prepared in when changed in place (an agent is not modified once prepared)", func() {
		sc := load()
		sc.Run.Agents["coordinator"].MaxSteps = 1
		run := harness.Run(sc, harness.Options{Seed: 1})
		Expect(run.Outputs["coordinator"].Err).NotTo(HaveOccurred(), "the loaded budget, as prepared at load")
		Expect(run.Outputs["coordinator"].Output.Raw).To(Equal("Done."))
	})

	It("are not prepared ahead for a scenario built in Go", func() {
		sc := New("go").Agent("a", &core.Agent{ID: "a"})
		Expect(sc.PreparedAgents()).To(BeNil())
	})

	It("run as they are when one is put in place of a loaded agent", func() {
		sc := load()
		Expect(harness.Run(sc, harness.Options{Seed: 1}).Passed()).To(BeTrue())
		one := *sc.Run.Agents["coordinator"]
		one.MaxSteps = 1 // the script needs two steps
		sc.Run.Agents["coordinator"] = &one
		run := harness.Run(sc, harness.Options{Seed: 1})
		Expect(run.PrepareErr).NotTo(HaveOccurred())
		Expect(run.Outputs["coordinator"].Err).To(MatchError(core.ErrStepBudget),
			"the replacement's step budget, not the loaded agent's")
	})
})
