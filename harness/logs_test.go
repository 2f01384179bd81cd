package harness_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

var _ = Describe("the log invariant", func() {
	It("no-child-content-in-logs: the redacted request log carries no child output or failure text, on every built-in", func() {
		for _, b := range scenarios.Builtins() {
			for seed := int64(1); seed <= 20; seed++ {
				o := harness.Run(builtin(b.Name), harness.Options{Seed: seed, CheckLogs: true})
				Expect(o.Violations).To(BeEmpty(), "%s seed %d:\n%s", b.Name, seed, transcript(o))
				Expect(transcript(o)).To(Equal(transcript(harness.Run(builtin(b.Name), harness.Options{Seed: seed}))),
					"checking the log changes nothing else")
			}
		}
	})

	It("no-child-content-in-logs: a log that carries a child's output is caught, with the seed, the step and the trace entry it came after", func() {
		o := harness.Run(builtin("research-coordinator"), harness.WithLogContent(harness.Options{Seed: 4, CheckLogs: true}))
		Expect(o.Violations).To(ContainElement(SatisfyAll(
			HaveField("Invariant", "no-child-content-in-logs"),
			HaveField("Seed", int64(4)),
			HaveField("Step", BeNumerically(">", 0)),
			HaveField("Entry", BeNumerically(">", 0)),
			HaveField("Message", ContainSubstring("Chlorophyll breaks down")))))
		for _, v := range o.Violations {
			Expect(v.String()).NotTo(ContainSubstring("entry #0"), "a violation names a trace entry that exists")
		}
		Expect(o.Passed()).To(BeFalse())
	})

	It("no-child-content-in-logs: a log that carries a child's failure text is caught", func() {
		sc := load(coordinatorYAML("leaky-failure", researchScript, `
- provider-error: {agent: research-agent, step: 2, message: the secret reason it broke}
`))
		o := harness.Run(sc, harness.WithLogContent(harness.Options{Seed: 1, CheckLogs: true}))
		Expect(o.Violations).To(ContainElement(SatisfyAll(
			HaveField("Invariant", "no-child-content-in-logs"),
			HaveField("Message", ContainSubstring("injected provider error: the secret reason")))))
		clean := harness.Run(load(coordinatorYAML("leaky-failure", researchScript, `
- provider-error: {agent: research-agent, step: 2, message: the secret reason it broke}
`)), harness.Options{Seed: 1, CheckLogs: true})
		Expect(clean.Violations).To(BeEmpty(), "the redacted log says only that the child failed")
	})
})
