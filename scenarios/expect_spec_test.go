package scenarios_test

import (
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/fixture"
	. "github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// check runs an expectation against a run and returns its failure report
// (message and transcript window), or "" when it holds.
func check(run *harness.Outcome, e Expectation) string {
	f := e.Check(run.Result)
	if f == nil {
		return ""
	}
	return f.Report(run.Trace)
}

// doctored returns a copy of the run whose entry n (1-based) is changed,
// for claims about what a faulty runtime or a recorded session might show.
func doctored(run *harness.Outcome, n int, change func(e *trace.Entry)) *harness.Outcome {
	t := *run.Trace
	t.Entries = slices.Clone(t.Entries)
	change(&t.Entries[n-1])
	r := *run.Result
	r.Trace = &t
	o := *run
	o.Result = &r
	return &o
}

var _ = Describe("Expectations", func() {
	var run *harness.Outcome
	BeforeEach(func() { run = simulate(backgroundResearch()) })

	requestOf := func(step int) Pattern { return Pattern{Kind: trace.Request, Agent: coordinator, Step: step} }
	resultCall := Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "work", Action: "result"}

	Describe("InOrder", func() {
		It("holds when the patterns match entries in order, with others between", func() {
			Expect(check(run, InOrder{requestOf(1), resultCall, requestOf(4)})).To(BeEmpty())
		})

		It("fails out of order, naming the entry that matched too early", func() {
			Expect(check(run, InOrder{requestOf(3), requestOf(2)})).To(HavePrefix(
				"pattern 2 of 2, request agent=research-coordinator step=2, matches entry #8, but only before entry #15, which matched pattern 1; the sequence is out of order\n"))
		})

		It("fails on a missing step, showing the nearest entry after the previous match and how it differs", func() {
			msg := check(run, InOrder{requestOf(2), {Kind: trace.ToolResult, Agent: coordinator, Action: "cancel"}})
			Expect(msg).To(HavePrefix("pattern 2 of 2, tool-result agent=research-coordinator action=cancel, has no match after entry #8, which matched pattern 1; " +
				"the nearest after entry #8 is entry #14, where its work action is result, not cancel\n"))
			Expect(msg).To(ContainSubstring("  > #14  +1s     research-coordinator#1 result call-2 work result w-1"))
		})

		It("fails on a first pattern that matches nothing, saying so", func() {
			Expect(check(run, InOrder{{Kind: trace.Detach}})).To(Equal("pattern 1 of 1, detach, matches no entry; there is no detach entry at all"))
		})
	})

	Describe("InAnyOrder", func() {
		It("holds when each pattern matches an entry of its own, in any order", func() {
			Expect(check(run, InAnyOrder{requestOf(4), requestOf(1)})).To(BeEmpty())
		})

		It("holds whenever some assignment gives each pattern an entry of its own, not only the first-come one", func() {
			anyRequest := Pattern{Kind: trace.Request, Agent: coordinator}
			Expect(check(run, InAnyOrder{anyRequest, requestOf(1)})).To(BeEmpty())
			Expect(check(run, InAnyOrder{anyRequest, anyRequest, anyRequest, requestOf(1)})).To(BeEmpty())
			Expect(check(run, InAnyOrder{anyRequest, anyRequest, anyRequest, anyRequest, requestOf(1)})).To(HavePrefix(
				"pattern 5 of 5, request agent=research-coordinator step=1, matches only entries that other patterns already matched"))
		})

		It("fails when two patterns would need the same entry", func() {
			once := Pattern{Kind: trace.ToolResult, Tool: "research"}
			Expect(check(run, InAnyOrder{once, once})).To(HavePrefix(
				"pattern 2 of 2, tool-result tool=research, matches only entries that other patterns already matched, such as #7; each pattern needs an entry of its own"))
		})

		It("fails on a pattern that matches nothing, quoting its nearest miss", func() {
			msg := check(run, InAnyOrder{{Kind: trace.Request, Agent: coordinator, Tools: []string{"research"}}})
			Expect(msg).To(HavePrefix("pattern 1 of 1, request agent=research-coordinator tools=[research], matches no entry; " +
				"the nearest is entry #2, where it offered tools [research,work], not [research]\n"))
			Expect(msg).To(ContainSubstring("  > #2   +0s     research-coordinator#1 request 1 tools=research,work"))
		})
	})

	Describe("Subset", func() {
		It("holds when every entry of a shape is one of the allowed", func() {
			Expect(check(run, Subset{Of: Pattern{Kind: trace.ToolResult, Tool: "work"}, Allowed: []Pattern{{Action: "result"}, {Action: "status"}}})).To(BeEmpty())
		})

		It("fails at the first entry that is none of them", func() {
			msg := check(run, Subset{Of: Pattern{Kind: trace.ToolResult, Tool: "work"}, Allowed: []Pattern{{Action: "status"}}})
			Expect(msg).To(HavePrefix("entry #14 matches tool-result tool=work but none of the allowed patterns [entry action=status]\n"))
			Expect(msg).To(ContainSubstring("  > #14"))
		})
	})

	Describe("Never", func() {
		It("holds when no entry matches", func() {
			Expect(check(run, Never{Patterns: []Pattern{{Kind: trace.Work, To: "failed"}}})).To(BeEmpty())
		})

		It("fails at the first entry that matches, quoting it", func() {
			msg := check(run, Never{Patterns: []Pattern{{Kind: trace.Clock}}})
			Expect(msg).To(HavePrefix("entry #13 matches clock, which must never happen\n"))
			Expect(msg).To(ContainSubstring("  > #13  +1s     clock jumped +1s to +1s"))
		})

		It("counts only entries after the first match of After", func() {
			afterDone := Pattern{Kind: trace.Work, To: "completed"}
			Expect(check(run, Never{Patterns: []Pattern{{Kind: trace.Clock}}, After: &afterDone})).To(BeEmpty())
			Expect(check(run, Never{Patterns: []Pattern{{Kind: trace.Request}}, After: &afterDone})).To(HavePrefix("entry #23 matches request"))
		})

		It("holds vacuously when After never matches", func() {
			never := Pattern{Kind: trace.Detach}
			Expect(check(run, Never{Patterns: []Pattern{{}}, After: &never})).To(BeEmpty())
		})
	})

	Describe("Count", func() {
		It("holds within its bounds", func() {
			Expect(check(run, Count{Pattern: resultCall, Min: 2, Max: 2})).To(BeEmpty())
			Expect(check(run, Count{Pattern: resultCall, Min: 1, Max: -1})).To(BeEmpty())
		})

		It("fails outside them, saying how many matched", func() {
			Expect(check(run, Count{Pattern: resultCall, Min: 3, Max: -1})).To(HavePrefix(
				"2 entries match tool-result agent=research-coordinator tool=work action=result; want at least 3\n"))
			Expect(check(run, Count{Pattern: resultCall, Min: 0, Max: 1})).To(HavePrefix("2 entries match tool-result agent=research-coordinator tool=work action=result; want between 0 and 1"))
			Expect(check(run, Count{Pattern: resultCall, Min: 1, Max: 1})).To(ContainSubstring("want exactly 1"))
		})
	})

	Describe("OutputOnlyViaResult", func() {
		It("holds when the output first reaches the owner as a work result", func() {
			Expect(check(run, OutputOnlyViaResult{Tool: "research"})).To(BeEmpty())
		})

		It("fails when the output reaches the owner in a tool result before work result returns it", func() {
			leaked := doctored(run, 14, func(e *trace.Entry) { e.Content = findingsJSON; e.Action = "status" })
			Expect(check(leaked, OutputOnlyViaResult{Tool: "research"})).To(HavePrefix(
				"the exact output of w-1 reached its owner research-coordinator#1 in entry #14, a work result, before any work result call returned it"))
		})

		It("fails when the output shows in a request message or a status row of the owner", func() {
			inMessage := doctored(run, 15, func(e *trace.Entry) {
				e.EditRequest().Messages = []core.Message{{Role: core.RoleUser, Content: findingsJSON}}
			})
			Expect(check(inMessage, OutputOnlyViaResult{Tool: "research"})).To(HavePrefix("the exact output of w-1 reached its owner research-coordinator#1 in a request message (entry #15)"))
			inStatus := doctored(run, 15, func(e *trace.Entry) {
				e.EditRequest().Status = []string{"- w-1 · research · running 1s · " + findingsJSON}
			})
			Expect(check(inStatus, OutputOnlyViaResult{Tool: "research"})).To(HavePrefix("the exact output of w-1 appears in a status row of research-coordinator#1 (entry #15)"))
		})

		It("fails when completed Work is never read, unless unread Work is allowed", func() {
			unread := simulate(backgroundResearch(scripted.Calls(research(true)), scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})), scripted.Say(answer)).
				With(Options{Settle: true}))
			Expect(check(unread, OutputOnlyViaResult{Tool: "research"})).To(HavePrefix("w-1 completed, but its owner research-coordinator#1 never read its output with a work result call"))
			Expect(check(unread, OutputOnlyViaResult{Tool: "research", AllowUnread: true})).To(BeEmpty())
		})

		It("fails when the tool never ran in the background", func() {
			Expect(check(simulate(foregroundResearch()), OutputOnlyViaResult{Tool: "research"})).To(HavePrefix(
				"no call of research ran in the background: the research call in entry #"))
		})
	})

	Describe("ForegroundOutput", func() {
		It("holds when a foreground call returns the child's exact output in the same tool round", func() {
			Expect(check(simulate(foregroundResearch()), ForegroundOutput{Tool: "research"})).To(BeEmpty())
		})

		It("fails when the tool result is not the child's exact output", func() {
			fg := simulate(foregroundResearch())
			at := matching(fg, Pattern{Kind: trace.ToolResult, Tool: "research"})[0]
			changed := doctored(fg, at, func(e *trace.Entry) { e.Content = `{"summary":"paraphrased"}` })
			Expect(check(changed, ForegroundOutput{Tool: "research"})).To(HavePrefix(
				`the foreground research call returned "{\"summary\":\"paraphrased\"}", not the child's exact output`))
		})

		It("fails when every call ran in the background", func() {
			Expect(check(run, ForegroundOutput{Tool: "research"})).To(HavePrefix(
				"no foreground call of research ran a child to completion: the research call in entry #7 returned work.ref w-1\n"))
		})
	})

	Describe("WorkEnds", func() {
		It("holds when the Work ends in one of the states", func() {
			Expect(check(run, WorkEnds{Work: WorkOf("research"), States: []string{"cancelled", "completed"}})).To(BeEmpty())
		})

		It("fails on another end state, at the last transition", func() {
			msg := check(run, WorkEnds{Work: WorkOf("research"), States: []string{"cancelled"}})
			Expect(msg).To(HavePrefix("w-1 (work of research) ended completed; want cancelled\n"))
			Expect(msg).To(ContainSubstring("  > #21  +4s     w-1 research running → completed"))
		})

		It("fails when the reference never resolves", func() {
			Expect(check(simulate(foregroundResearch()), WorkEnds{Work: WorkOf("research"), States: []string{"completed"}})).To(HavePrefix(
				"there is no work of research: no call of research returned a work.ref (the first returned its output inline)"))
		})
	})

	Describe("AgentEnds", func() {
		It("holds for a top-level run that succeeded with the output", func() {
			Expect(check(run, AgentEnds{Agent: coordinator, Contains: "anthocyanins"})).To(BeEmpty())
			Expect(check(run, AgentEnds{Agent: coordinator, Equals: answer, Failed: Bool(false)})).To(BeEmpty())
		})

		It("fails on other output, quoting the end of the run", func() {
			msg := check(run, AgentEnds{Agent: coordinator, Contains: "photosynthesis"})
			Expect(msg).To(HavePrefix(`research-coordinator's final output does not contain "photosynthesis"`))
			Expect(msg).To(ContainSubstring("  > #25  +4s     research-coordinator#1 end output"))
			Expect(check(run, AgentEnds{Agent: coordinator, Equals: "Done."})).To(HavePrefix(`research-coordinator's final output is "Leaves change colour`))
		})

		It("fails a run that failed, or one that should have and did not", func() {
			failing := simulate(backgroundResearch().Inject(Fault{Kind: FaultProviderError, Agent: coordinator, Step: 1, Message: "overloaded"}))
			Expect(check(failing, AgentEnds{Agent: coordinator})).To(HavePrefix("research-coordinator failed: "))
			Expect(check(failing, AgentEnds{Agent: coordinator, Failed: Bool(true), Contains: "overloaded"})).To(BeEmpty())
			Expect(check(run, AgentEnds{Agent: coordinator, Failed: Bool(true)})).To(HavePrefix("research-coordinator succeeded, but it should have failed"))
		})

		It("fails for an agent that never finished a top-level run", func() {
			Expect(check(run, AgentEnds{Agent: researcher})).To(HavePrefix("research-agent never finished a top-level run; the trace ends here"))
		})
	})

	Describe("PrepareFails", func() {
		reserved := func() *harness.Outcome {
			child := fixture.ResearchAgent()
			child.Prompt.Input = core.MustSchema(`{"type":"object","properties":{"question":{"type":"string"},"run_in_background":{"type":"boolean"}}}`)
			parent := researchCoordinator()
			parent.Tools = core.Tools{"research": core.Backgroundable(child)}
			return simulate(prepareOnly("prepare", parent))
		}

		It("holds when preparation fails before any provider call, with the error asked for", func() {
			Expect(check(reserved(), PrepareFails{Is: core.ErrReservedField, Contains: "run_in_background"})).To(BeEmpty())
		})

		It("fails when preparation succeeded", func() {
			Expect(check(run, PrepareFails{})).To(HavePrefix("preparation succeeded; want a preparation error"))
		})

		It("fails when preparation failed for another reason", func() {
			Expect(check(reserved(), PrepareFails{Is: core.ErrWorkToolCollision})).To(ContainSubstring("which is not"))
			Expect(check(reserved(), PrepareFails{Contains: "timeout"})).To(ContainSubstring(`which does not contain "timeout"`))
		})
	})

	It("reports a Named expectation by its name", func() {
		named := Named{Name: "the coordinator rejoins", Expectation: InOrder{resultCall}}
		Expect(named.Describe()).To(Equal("the coordinator rejoins"))
		Expect(named.Check(run.Result)).To(BeNil())
	})
})
