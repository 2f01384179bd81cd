package harness_test

import (
	"bytes"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// dryCoordinator is the research coordinator with its last two turns cut:
// its third request finds the script dry, so it never calls work result nor
// answers, and the expectations about those fail as a consequence.
func dryCoordinator() *scenarios.Scenario {
	sc, err := scenarios.Builtin("research-coordinator")
	Expect(err).NotTo(HaveOccurred())
	for i := range sc.Scripts {
		if sc.Scripts[i].Agent == "research-coordinator" {
			sc.Scripts[i].Turns = sc.Scripts[i].Turns[:len(sc.Scripts[i].Turns)-2]
		}
	}
	return sc
}

var _ = Describe("the Pass matcher: every expectation held", func() {
	It("succeeds on a run where every expectation and every check held", func() {
		sc, _ := scenarios.Builtin("research-coordinator")
		Expect(harness.Run(sc, harness.Options{Seed: 7})).To(scenarios.Pass())
	})

	It("fails naming the root cause first, then each failed expectation with its nearest miss and the transcript window", func() {
		run := harness.Run(dryCoordinator(), harness.Options{Seed: 1})
		m := scenarios.Pass()
		Expect(m.Match(run)).To(BeFalse())
		msg := m.FailureMessage(run)
		first, rest, _ := strings.Cut(msg, "\n")
		Expect(first).To(MatchRegexp(`^Expected the run of research-coordinator \(seed 1\) to pass, but \d+ of \d+ claims failed; root cause: script: agent "research-coordinator" ran dry at step 3 of run 1`))
		Expect(rest).To(HavePrefix("FAIL the script covers every provider step\n"), "the cause is listed before what failed because of it")
		Expect(rest).To(ContainSubstring("FAIL " + dryCoordinator().Expectations[0].Describe()))
		Expect(rest).To(ContainSubstring("FAIL research-coordinator finishes with output"))
		Expect(rest).To(MatchRegexp(`the nearest( after entry #\d+)? is entry #14, where it does not contain "Anthocyanins"`), "each failed expectation shows its nearest miss")
		Expect(rest).To(MatchRegexp(`(?m)^       > #\d+ `), "and the transcript around it, the entry at fault marked")
		for _, v := range run.Verdicts {
			if v.Failure != nil {
				Expect(rest).To(ContainSubstring("FAIL "+v.Description), "every failed claim is listed")
			}
		}
	})

	It("lists a broken invariant as a failed claim", func() {
		sc, _ := scenarios.Builtin("cancel-vs-complete")
		var broken *harness.Outcome
		for seed := int64(1); seed <= 60 && broken == nil; seed++ {
			o := harness.Run(sc, harness.Options{Seed: seed, Swarm: true, Testing: core.Testing{Defects: core.Defects{CancelOverwritesTerminal: true}}})
			if len(o.Violations) > 0 {
				broken = o
			}
		}
		Expect(broken).NotTo(BeNil(), "the planted defect breaks an invariant in some seed")
		m := scenarios.Pass()
		Expect(m.Match(broken)).To(BeFalse())
		Expect(m.FailureMessage(broken)).To(ContainSubstring("FAIL invariant " + broken.Violations[0].Invariant))
	})

	It("says every claim that held when a negated assertion fails", func() {
		sc, _ := scenarios.Builtin("research-coordinator")
		run := harness.Run(sc, harness.Options{Seed: 7})
		m := scenarios.Pass()
		Expect(m.Match(run)).To(BeTrue())
		Expect(m.NegatedFailureMessage(run)).To(HavePrefix("Expected the run of research-coordinator (seed 7) not to pass, but all 6 claims held:\nPASS "))
	})

	It("returns an error, not a verdict, for a value that is not a judged run", func() {
		_, err := scenarios.Pass().Match(&scenarios.Result{})
		Expect(err).To(MatchError(ContainSubstring("Pass matcher expects a judged run")))
		_, err = scenarios.Pass().Match((*harness.Outcome)(nil))
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("the root cause first", func() {
	It("the text report's first line says the script ran dry, before the expectations that failed because of it", func() {
		var b bytes.Buffer
		Expect(harness.WriteReport(&b, harness.Run(dryCoordinator(), harness.Options{Seed: 1}))).To(Succeed())
		first, _, _ := strings.Cut(b.String(), "\n")
		Expect(first).To(HavePrefix(`FAIL research-coordinator (seed 1): root cause: script: agent "research-coordinator" ran dry at step 3 of run 1`))
	})

	It("a passing run's report starts with its name, as before", func() {
		sc, _ := scenarios.Builtin("research-coordinator")
		var b bytes.Buffer
		Expect(harness.WriteReport(&b, harness.Run(sc, harness.Options{Seed: 1}))).To(Succeed())
		Expect(b.String()).To(HavePrefix("== research-coordinator · seed 1 ==\n"))
	})

	It("a fuzz failure is signed by its root cause, not by the first expectation that failed because of it", func() {
		run := harness.Run(dryCoordinator(), harness.Options{Seed: 1})
		Expect(harness.Signature(run)).To(Equal("check the script covers every provider step"))
	})
})
