package scenarios_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// Runs the matcher specs use, each a real run of the harness at seed 1.
var (
	background = func() *harness.Outcome { return simulate(backgroundResearch()) }
	foreground = func() *harness.Outcome { return simulate(foregroundResearch()) }
	queued     = func() *harness.Outcome { return builtin("queued-cancel") }
	prepFails  = func() *harness.Outcome {
		parent := researchCoordinator()
		parent.Tools["work"] = &core.Tool{Description: "an authored work tool"}
		return simulate(prepareOnly("authored-work", parent))
	}
)

// tracer is a caller's own type that carries a trace.
type tracer struct{ t *trace.Trace }

func (x tracer) SemanticTrace() *trace.Trace { return x.t }

var _ = Describe("The Gomega matchers", func() {
	DescribeTable("each succeeds on a run that does what it claims",
		func(m types.GomegaMatcher, run func() *harness.Outcome) {
			Expect(run()).To(m)
		},
		Entry("Meet", Meet(OutputOnlyViaResult{Tool: "research"}), background),
		Entry("HaveSequence", HaveSequence(Pattern{Kind: trace.Request, Step: 1}, Pattern{Kind: trace.Work, To: "completed"}), background),
		Entry("HaveEntries", HaveEntries(Pattern{Kind: trace.Work, To: "completed"}, Pattern{Kind: trace.Request, Step: 1}), background),
		Entry("HaveEntry", HaveEntry(Pattern{Kind: trace.Clock}), background),
		Entry("NeverHave", NeverHave(Pattern{Kind: trace.Detach}), background),
		Entry("OfferTools", OfferTools(coordinator, "research", "work"), background),
		Entry("CallInBackground", CallInBackground(coordinator, "research"), background),
		Entry("CallInForeground", CallInForeground(coordinator, "research"), foreground),
		Entry("ReturnWorkRef", ReturnWorkRef("research"), background),
		Entry("HaveStatusRow", HaveStatusRow(coordinator, RowPattern{State: "completed", ResultAvailable: Bool(true)}), background),
		Entry("CallWork", CallWork(coordinator, "result"), background),
		Entry("DeliverOutputOnlyThroughResult", DeliverOutputOnlyThroughResult("research"), background),
		Entry("ReturnChildOutputInline", ReturnChildOutputInline("research"), foreground),
		Entry("EndWorkIn", EndWorkIn(Ref{Tool: "research", N: 2}, "cancelled"), queued),
		Entry("HaveTransition", HaveTransition(Ref{Tool: "research", N: 2}, "queued", "cancelled"), queued),
		Entry("FailPreparation", FailPreparation(core.ErrWorkToolCollision), prepFails),
		Entry("Finish", Finish(coordinator, "anthocyanins"), foreground),
	)

	DescribeTable("each fails on a run that does not, quoting the transcript around the mismatch",
		func(m types.GomegaMatcher, run func() *harness.Outcome, says ...string) {
			msg := failureOf(run(), m)
			Expect(msg).To(HavePrefix("Expected the run of "))
			for _, s := range says {
				Expect(msg).To(ContainSubstring(s))
			}
		},
		Entry("Meet", Meet(ForegroundOutput{Tool: "research"}), background,
			"to satisfy\n    a foreground research call returns the child's exact output in the same tool round\nbut no foreground call",
			"  > #7   +0s     research-coordinator#1 result call-1 research → work.ref w-1"),
		Entry("HaveSequence", HaveSequence(Pattern{Kind: trace.Work, To: "completed"}, Pattern{Kind: trace.Request, Step: 1}), background,
			"pattern 2 of 2, request step=1, matches entry #2, but only before entry #21",
			"  > #2   +0s     research-coordinator#1 request 1 tools=research,work"),
		Entry("HaveEntries", HaveEntries(Pattern{Kind: trace.Work, To: "completed"}, Pattern{Kind: trace.Work, To: "cancelled"}), background,
			"pattern 2 of 2, work to=cancelled, matches no entry; the nearest is entry #5, where it moved to queued, not cancelled",
			"  > #5   +0s     w-1 research queued (owner research-coordinator#1)"),
		Entry("HaveEntry", HaveEntry(Pattern{Kind: trace.Request, Agent: researcher, Step: 2}), background,
			"the nearest is entry #12, where it is step 1, not 2",
			"  > #12  +0s     research-agent#1 request 1"),
		Entry("NeverHave", NeverHave(Pattern{Kind: trace.Clock, Contains: "+3s"}), background,
			`entry #18 matches clock contains="+3s", which must never happen`,
			"  > #18  +4s     clock jumped +3s to +4s"),
		Entry("OfferTools", OfferTools(coordinator, "work", "research"), background,
			"where it offered tools [research,work], not [work,research]",
			"  > #2   +0s     research-coordinator#1 request 1 tools=research,work"),
		Entry("CallInBackground", CallInBackground(coordinator, "research"), foreground,
			"where no call of research has run_in_background: true",
			"research-coordinator#1 response 1"),
		Entry("CallInForeground", CallInForeground(coordinator, "research"), background,
			"the nearest is entry #3, where no call of research has run_in_background: false",
			`  > #3   +0s     research-coordinator#1 response 1`),
		Entry("ReturnWorkRef", ReturnWorkRef("research"), foreground,
			"where it returned no work.ref",
			"result call-1 research → {"),
		Entry("HaveStatusRow", HaveStatusRow(coordinator, RowPattern{State: "queued"}), background,
			"no status row matches {state=queued} (it carried status - w-1 · research · running 0s)",
			"  > #8   +0s     research-coordinator#1 request 2 tools=research,work"),
		Entry("CallWork", CallWork(coordinator, "cancel"), background,
			"the nearest is entry #14, where its work action is result, not cancel",
			"  > #14  +1s     research-coordinator#1 result call-2 work result w-1"),
		Entry("DeliverOutputOnlyThroughResult", DeliverOutputOnlyThroughResult("research"), foreground,
			"no call of research ran in the background",
			"research-coordinator#1 result call-1 research → {"),
		Entry("ReturnChildOutputInline", ReturnChildOutputInline("research"), background,
			"the research call in entry #7 returned work.ref w-1",
			"  > #7   +0s     research-coordinator#1 result call-1 research → work.ref w-1"),
		Entry("EndWorkIn", EndWorkIn(WorkOf("research"), "cancelled"), queued,
			"w-1 (work of research) ended completed; want cancelled",
			"w-1 research running → completed"),
		Entry("HaveTransition", HaveTransition(WorkOf("research"), "running", "cancelled"), background,
			"where it moved to completed, not cancelled",
			"  > #21  +4s     w-1 research running → completed"),
		Entry("FailPreparation", FailPreparation(nil), background,
			"preparation succeeded; want a preparation error",
			"  > #1   +0s     research-coordinator#1 start"),
		Entry("Finish", Finish(coordinator, "photosynthesis"), background,
			`research-coordinator's final output does not contain "photosynthesis"`,
			"  > #25  +4s     research-coordinator#1 end output"),
	)

	DescribeTable("each returns an error, not a verdict, for an actual value that is not a run",
		func(m types.GomegaMatcher, name string) {
			for _, actual := range []any{42, "a transcript", nil, (*Result)(nil), (*trace.Trace)(nil), (*harness.Outcome)(nil), tracer{}} {
				ok, err := m.Match(actual)
				Expect(ok).To(BeFalse())
				Expect(err).To(MatchError(HavePrefix(name+" matcher expects a *scenarios.Result, a *trace.Trace or a value with a SemanticTrace method.  Got:\n")), "actual %#v", actual)
			}
			_, err := m.Match(42)
			Expect(err).To(MatchError(HaveSuffix("<int>: 42")))
		},
		Entry(nil, Meet(InOrder{}), "Meet"),
		Entry(nil, HaveSequence(), "HaveSequence"),
		Entry(nil, HaveEntries(), "HaveEntries"),
		Entry(nil, HaveEntry(Pattern{}), "HaveEntry"),
		Entry(nil, NeverHave(), "NeverHave"),
		Entry(nil, OfferTools(coordinator), "OfferTools"),
		Entry(nil, CallInBackground(coordinator, "research"), "CallInBackground"),
		Entry(nil, CallInForeground(coordinator, "research"), "CallInForeground"),
		Entry(nil, ReturnWorkRef("research"), "ReturnWorkRef"),
		Entry(nil, HaveStatusRow(coordinator, RowPattern{}), "HaveStatusRow"),
		Entry(nil, CallWork(coordinator, "result"), "CallWork"),
		Entry(nil, DeliverOutputOnlyThroughResult("research"), "DeliverOutputOnlyThroughResult"),
		Entry(nil, ReturnChildOutputInline("research"), "ReturnChildOutputInline"),
		Entry(nil, EndWorkIn(WorkOf("research"), "completed"), "EndWorkIn"),
		Entry(nil, HaveTransition(WorkOf("research"), "queued", "running"), "HaveTransition"),
		Entry(nil, FailPreparation(nil), "FailPreparation"),
		Entry(nil, Finish(coordinator, ""), "Finish"),
	)

	It("reads a *scenarios.Result, a *trace.Trace and any value with a SemanticTrace method alike", func() {
		run := background()
		Expect(run.Result).To(CallWork(coordinator, "result"))
		Expect(run.Trace).To(CallWork(coordinator, "result"))
		Expect(tracer{run.Trace}).To(CallWork(coordinator, "result"))
		Expect(run.Trace).NotTo(CallWork(coordinator, "cancel"))
	})

	It("reads a harness Outcome whole, so claims about preparation see its error", func() {
		Expect(prepFails()).To(FailPreparation(core.ErrWorkToolCollision))
		Expect(prepFails().Trace).NotTo(FailPreparation(nil), "a bare trace carries no preparation error")
	})

	It("says which entry matched, and where, when a negated assertion fails", func() {
		run := background()
		m := CallWork(coordinator, "result")
		Expect(m.Match(run)).To(BeTrue())
		msg := m.NegatedFailureMessage(run)
		Expect(msg).To(HavePrefix("Expected the run of seed-02-background (seed 1) not to satisfy\n" +
			"    all of, in any order: [tool-result agent=research-coordinator tool=work action=result]\n" +
			"but it does: entry #14 matches [tool-result agent=research-coordinator tool=work action=result]\n"))
		Expect(msg).To(ContainSubstring("\n  > #14  +1s     research-coordinator#1 result call-2 work result w-1"))
	})

	It("names every entry of a sequence that matched when a negated sequence fails", func() {
		run := background()
		m := HaveSequence(Pattern{Kind: trace.Request, Step: 1}, Pattern{Kind: trace.Work, To: "completed"})
		Expect(m.Match(run)).To(BeTrue())
		Expect(m.NegatedFailureMessage(run)).To(ContainSubstring("but it does: entry #2 matches pattern 1 of 2, [request step=1]; entry #21 matches pattern 2 of 2, [work to=completed]\n"))
	})

	It("fails a Gomega assertion with the whole message, transcript included", func() {
		failures := InterceptGomegaFailures(func() {
			Expect(background()).To(CallWork(coordinator, "detach"))
		})
		Expect(failures).To(HaveLen(1))
		Expect(failures[0]).To(ContainSubstring("Expected the run of seed-02-background (seed 1) to satisfy\n    all of, in any order: [tool-result agent=research-coordinator tool=work action=detach]\nbut pattern 1 of 1"))
		Expect(failures[0]).To(ContainSubstring("  > #14"))
	})

	It("never changes the run it reads", func() {
		r := &Result{Scenario: "empty"}
		Expect(r).To(NeverHave(Pattern{}))
		Expect(r.Trace).To(BeNil())
	})
})
