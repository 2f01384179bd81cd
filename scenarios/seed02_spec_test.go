package scenarios_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	. "github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// Seed 02's "Test the behavior", written with the Go builder and the
// matchers. The same steps are written in YAML in
// builtin/research-coordinator.yaml and builtin/research-foreground.yaml.
var _ = Describe("Seed 02: the research coordinator, built in Go", func() {
	Describe("the background path", func() {
		var run *harness.Outcome
		BeforeEach(func() { run = simulate(backgroundResearch()) })

		It("1. calls research with run_in_background: true, offered research and the automatic work tool", func() {
			Expect(run).To(OfferTools(coordinator, "research", "work"))
			Expect(run).To(CallInBackground(coordinator, "research"))
		})

		It("2. gives its continuation a work.ref, not the child result", func() {
			Expect(run).To(ReturnWorkRef("research"))
			Expect(run).To(HaveSequence(
				Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "research", WorkRef: Bool(true)},
				Pattern{Kind: trace.Request, Agent: coordinator, Step: 2},
			))
			Expect(run).To(NeverHave(
				Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "research", Contains: "Anthocyanins"},
				Pattern{Kind: trace.Request, Agent: coordinator, Step: 2, Message: "Anthocyanins"},
			))
		})

		It("3. shows safe background status on a later request", func() {
			Expect(run).To(HaveStatusRow(coordinator, RowPattern{Work: WorkOf("research"), Label: "research", State: "running", ResultAvailable: Bool(false)}))
			Expect(run).To(NeverHave(Pattern{Kind: trace.Request, Status: &RowPattern{Contains: "Anthocyanins"}}))
		})

		It("4. calls the automatic work tool with action result", func() {
			Expect(run).To(CallWork(coordinator, "result"))
		})

		It("5. receives the child's exact output only in that result round", func() {
			Expect(run).To(DeliverOutputOnlyThroughResult("research"))
			Expect(run).To(HaveEntry(Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "work", Action: "result", Work: WorkOf("research"), Equals: findingsJSON}))
		})

		It("takes the five steps in that order, and the Work ends completed", func() {
			Expect(run).To(HaveSequence(
				Pattern{Kind: trace.Request, Agent: coordinator, Step: 1, Tools: []string{"research", "work"}, NoStatus: true},
				Pattern{Kind: trace.Response, Agent: coordinator, Tool: "research", InBackground: Bool(true)},
				Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "research", WorkRef: Bool(true)},
				Pattern{Kind: trace.Request, Agent: coordinator, Status: &RowPattern{Work: WorkOf("research"), State: "running"}},
				Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "work", Action: "result", Work: WorkOf("research"), Equals: findingsJSON},
			))
			Expect(run).To(EndWorkIn(WorkOf("research"), "completed"))
			Expect(run).To(Finish(coordinator, "anthocyanins"))
		})

		It("breaks no invariant of the harness", func() {
			Expect(run.Violations).To(BeEmpty())
			Expect(run.ScriptFailures).To(BeEmpty())
			Expect(run.Findings).To(BeEmpty())
		})
	})

	Describe("the foreground path", func() {
		var run *harness.Outcome
		BeforeEach(func() { run = simulate(foregroundResearch()) })

		It("calls research without run_in_background", func() {
			Expect(run).To(CallInForeground(coordinator, "research"))
		})

		It("returns the child's exact output in the same tool round", func() {
			Expect(run).To(ReturnChildOutputInline("research"))
			Expect(run).To(HaveSequence(
				Pattern{Kind: trace.Response, Agent: coordinator, Step: 1, Tool: "research"},
				Pattern{Kind: trace.RunEnd, Agent: researcher, Mode: "foreground", Equals: findingsJSON},
				Pattern{Kind: trace.ToolResult, Agent: coordinator, Step: 1, Tool: "research", WorkRef: Bool(false), Equals: findingsJSON},
			))
		})

		It("creates no Work, so no status and no work call follow", func() {
			Expect(run).To(NeverHave(
				Pattern{Kind: trace.Work},
				Pattern{Kind: trace.ToolResult, Tool: "work"},
				Pattern{Kind: trace.Request, Agent: coordinator, Status: &RowPattern{}},
			))
			Expect(run).To(Finish(coordinator, "anthocyanins"))
		})
	})

	// Each spec below changes the script so that the coordinator breaks a
	// step, and checks that the matcher for that step fails and says why,
	// quoting the transcript around the entry at fault.
	Describe("when the script breaks it", func() {
		It("fails step 4 and 5 when the coordinator never calls result", func() {
			run := simulate(backgroundResearch(scripted.Calls(research(true)), scripted.Say(answer)))

			msg := failureOf(run, CallWork(coordinator, "result"))
			Expect(msg).To(ContainSubstring("Expected the run of seed-02-background (seed 1) to satisfy"))
			Expect(msg).To(ContainSubstring("pattern 1 of 1, tool-result agent=research-coordinator tool=work action=result, matches no entry"))
			Expect(msg).To(ContainSubstring("the nearest is entry #7, where it is about research, not work, and its work action is none, not result"))
			Expect(msg).To(ContainSubstring("  > #7   +0s     research-coordinator#1 result call-1 research → work.ref w-1"))

			msg = failureOf(run, DeliverOutputOnlyThroughResult("research"))
			Expect(msg).To(ContainSubstring("w-1 ended cancelled, so its output never reached its owner research-coordinator#1 through work result"))
			Expect(msg).To(ContainSubstring("  > #14  +0s     w-1 research cancel-requested → cancelled"))
		})

		It("fails step 1 and 2 when the coordinator calls research in the foreground", func() {
			run := simulate(backgroundResearch(scripted.Calls(research(false)), scripted.Say(answer)))

			msg := failureOf(run, CallInBackground(coordinator, "research"))
			Expect(msg).To(ContainSubstring("the nearest is entry #3, where no call of research has run_in_background: true"))
			Expect(msg).To(ContainSubstring(`  > #3   +0s     research-coordinator#1 response 1`))
			Expect(msg).To(ContainSubstring(`call call-1 research {"question":"Why do leaves change color in autumn?"}`))

			msg = failureOf(run, ReturnWorkRef("research"))
			Expect(msg).To(ContainSubstring("where it returned no work.ref"))

			msg = failureOf(run, DeliverOutputOnlyThroughResult("research"))
			Expect(msg).To(MatchRegexp(`no call of research ran in the background: the research call in entry #\d+ returned its output inline, not a work.ref`))
		})

		It("fails the foreground path when the coordinator runs research in the background", func() {
			run := simulate(foregroundResearch(scripted.Calls(research(true)), scripted.Calls(workResult("")), scripted.Say(answer)))

			msg := failureOf(run, ReturnChildOutputInline("research"))
			Expect(msg).To(ContainSubstring("no foreground call of research ran a child to completion: the research call in entry #7 returned work.ref w-1"))
			Expect(msg).To(ContainSubstring("  > #7   +0s     research-coordinator#1 result call-1 research → work.ref w-1 target=research-agent"))
			Expect(failureOf(run, CallInForeground(coordinator, "research"))).To(ContainSubstring("no call of research has run_in_background: false"))
		})
	})
})

// failureOf returns the failure message of an assertion that must fail.
func failureOf(actual any, m interface {
	Match(any) (bool, error)
	FailureMessage(any) string
}) string {
	GinkgoHelper()
	ok, err := m.Match(actual)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeFalse(), "the matcher succeeded; it must fail")
	return m.FailureMessage(actual)
}
