package scenarios_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	. "github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// matching returns the 1-based numbers of the entries a pattern matches.
func matching(run *harness.Outcome, p Pattern) []int {
	var out []int
	for i := range run.Trace.Entries {
		if p.Match(run.Trace, &run.Trace.Entries[i]) {
			out = append(out, i+1)
		}
	}
	return out
}

// Entry numbers below are those of the seed-1 transcript of the Go-built
// background path (the same as golden/research-coordinator.txt).
var _ = Describe("Pattern", func() {
	var run *harness.Outcome
	BeforeEach(func() { run = simulate(backgroundResearch()) })

	It("matches every entry when no field is set", func() {
		Expect(matching(run, Pattern{})).To(HaveLen(len(run.Trace.Entries)))
	})

	It("restricts the kind of entry with Kind", func() {
		Expect(matching(run, Pattern{Kind: trace.Request, Agent: coordinator})).To(Equal([]int{2, 8, 15, 23}))
	})

	It("names agents by id, not by the run's name for them", func() {
		Expect(matching(run, Pattern{Agent: "coordinator"})).To(BeEmpty())
		Expect(matching(run, Pattern{Kind: trace.RunStart, Agent: coordinator})).To(Equal([]int{1}))
	})

	It("selects a provider step with Step", func() {
		Expect(matching(run, Pattern{Kind: trace.Request, Agent: coordinator, Step: 3})).To(Equal([]int{15}))
	})

	It("holds Tools to exactly these tools in this order", func() {
		Expect(matching(run, Pattern{Kind: trace.Request, Step: 1, Tools: []string{"research", "work"}})).To(Equal([]int{2}))
		Expect(matching(run, Pattern{Kind: trace.Request, Step: 1, Tools: []string{"work", "research"}})).To(BeEmpty())
		Expect(matching(run, Pattern{Kind: trace.Request, Step: 1, Tools: []string{"research"}})).To(BeEmpty())
	})

	It("holds ToolsInclude to at least these tools and ToolsExclude to none of them", func() {
		Expect(matching(run, Pattern{Kind: trace.Request, Step: 1, ToolsInclude: []string{"work"}})).To(Equal([]int{2}))
		Expect(matching(run, Pattern{Kind: trace.Request, ToolsExclude: []string{"work"}})).To(Equal([]int{12}))
	})

	It("matches a status row by Work, label, state and result availability", func() {
		running := RowPattern{Work: WorkOf("research"), Label: "research", State: "running", ResultAvailable: Bool(false)}
		Expect(matching(run, Pattern{Kind: trace.Request, Status: &running})).To(Equal([]int{8, 15}))
		done := RowPattern{State: "completed", ResultAvailable: Bool(true), Contains: "Result available"}
		Expect(matching(run, Pattern{Kind: trace.Request, Status: &done})).To(Equal([]int{23}))
		Expect(matching(run, Pattern{Kind: trace.Request, Status: &RowPattern{Label: "lookup"}})).To(BeEmpty())
	})

	It("matches a request without a status block with NoStatus", func() {
		Expect(matching(run, Pattern{Kind: trace.Request, Agent: coordinator, NoStatus: true})).To(Equal([]int{2}))
	})

	It("matches a new message of a request with Message", func() {
		Expect(matching(run, Pattern{Kind: trace.Request, Message: "autumn"})).To(Equal([]int{2, 12}))
	})

	It("matches guidance delivered by send with Guidance, and only guidance", func() {
		send := builtin("send-vs-exit")
		Expect(matching(send, Pattern{Kind: trace.Request, Guidance: "red pigments"})).To(HaveLen(1))
		Expect(matching(send, Pattern{Kind: trace.Request, Guidance: "autumn"})).To(BeEmpty())
	})

	It("matches the tool a result answers, or any tool a response calls, with Tool", func() {
		Expect(matching(run, Pattern{Kind: trace.ToolResult, Tool: "research"})).To(Equal([]int{7}))
		Expect(matching(run, Pattern{Kind: trace.Response, Tool: "work"})).To(Equal([]int{9, 16}))
	})

	It("tells background calls from foreground ones with InBackground", func() {
		Expect(matching(run, Pattern{Kind: trace.Response, Tool: "research", InBackground: Bool(true)})).To(Equal([]int{3}))
		Expect(matching(run, Pattern{Kind: trace.Response, Tool: "research", InBackground: Bool(false)})).To(BeEmpty())
		fg := simulate(foregroundResearch())
		Expect(matching(fg, Pattern{Kind: trace.Response, Tool: "research", InBackground: Bool(false)})).To(HaveLen(1))
	})

	It("matches the work tool's action with Action", func() {
		Expect(matching(run, Pattern{Kind: trace.ToolResult, Action: "result"})).To(Equal([]int{14, 22}))
		Expect(matching(run, Pattern{Kind: trace.ToolResult, Action: "cancel"})).To(BeEmpty())
	})

	It("resolves Work to the id the N-th background call of a tool returned", func() {
		Expect(matching(run, Pattern{Kind: trace.Work, Work: WorkOf("research")})).To(Equal([]int{5, 6, 21}))
		queued := builtin("queued-cancel")
		second := Pattern{Kind: trace.Work, Work: Ref{Tool: "research", N: 2}, To: "cancelled"}
		Expect(matching(queued, second)).To(HaveLen(1))
		Expect(matching(queued, Pattern{Work: Ref{Tool: "research", N: 3}})).To(BeEmpty(), "a reference that does not resolve matches nothing")
	})

	It("matches a result that is, or is not, a work.ref with WorkRef", func() {
		Expect(matching(run, Pattern{Kind: trace.ToolResult, WorkRef: Bool(true)})).To(Equal([]int{7}))
		Expect(matching(run, Pattern{Kind: trace.ToolResult, WorkRef: Bool(false)})).To(Equal([]int{14, 22}))
	})

	It("matches model-facing tool errors with IsError", func() {
		bad := simulate(backgroundResearch(
			scripted.Calls(research(true)),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("research"), "timeout": "soon"})),
			scripted.Calls(workResult("")),
			scripted.Say(answer)))
		Expect(matching(bad, Pattern{Kind: trace.ToolResult, IsError: Bool(true), Contains: "timeout"})).To(HaveLen(1))
		Expect(matching(run, Pattern{Kind: trace.ToolResult, IsError: Bool(true)})).To(BeEmpty())
	})

	It("matches a lookup answered exactly {\"status\":\"not_found\"} with NotFound", func() {
		detached := builtin("detach-vs-result")
		Expect(matching(detached, Pattern{Kind: trace.ToolResult, Tool: "work", NotFound: Bool(true)})).NotTo(BeEmpty())
		Expect(matching(run, Pattern{Kind: trace.ToolResult, NotFound: Bool(true)})).To(BeEmpty())
	})

	It("looks for text in content, text, output, errors and call arguments with Contains", func() {
		Expect(matching(run, Pattern{Contains: "Anthocyanins"})).To(Equal([]int{19, 20, 22}))
		Expect(matching(run, Pattern{Kind: trace.Response, Contains: `"timeout":"1s"`})).To(Equal([]int{9}))
	})

	It("holds content to exactly this text with Equals", func() {
		Expect(matching(run, Pattern{Kind: trace.ToolResult, Equals: findingsJSON})).To(Equal([]int{22}))
		Expect(matching(run, Pattern{Kind: trace.ToolResult, Equals: "Anthocyanins"})).To(BeEmpty())
	})

	It("matches Work transitions by From and To", func() {
		Expect(matching(run, Pattern{Kind: trace.Work, From: "running", To: "completed"})).To(Equal([]int{21}))
		Expect(matching(run, Pattern{Kind: trace.Work, To: "cancelled"})).To(BeEmpty())
	})

	It("tells top-level, foreground and background runs apart with Mode", func() {
		Expect(matching(run, Pattern{Kind: trace.RunStart, Mode: "background"})).To(Equal([]int{11}))
		Expect(matching(run, Pattern{Kind: trace.RunStart, Mode: "top"})).To(Equal([]int{1}))
	})

	It("matches runs and steps that ended in an error with Failed", func() {
		failing := simulate(backgroundResearch().Inject(Fault{Kind: FaultProviderError, Agent: coordinator, Step: 1, Message: "overloaded"}))
		Expect(matching(failing, Pattern{Kind: trace.RunEnd, Agent: coordinator, Failed: Bool(true), Contains: "overloaded"})).To(HaveLen(1))
		Expect(matching(run, Pattern{Kind: trace.RunEnd, Failed: Bool(true)})).To(BeEmpty())
	})

	It("explains a miss field by field, and explains nothing exactly when it matches", func() {
		p := Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "work", Action: "cancel", WorkRef: Bool(true)}
		Expect(p.Mismatches(run.Trace, &run.Trace.Entries[13])).To(Equal([]string{
			"its work action is result, not cancel",
			"it returned no work.ref",
		}))
		patterns := []Pattern{
			{}, {Kind: trace.Request, Tools: []string{"research", "work"}, NoStatus: true},
			{Status: &RowPattern{State: "running"}}, {Tool: "research", InBackground: Bool(true)},
			{Work: WorkOf("research"), To: "completed"}, {Kind: trace.ToolResult, WorkRef: Bool(false), Equals: findingsJSON},
			{Mode: "background", Failed: Bool(false)}, {Agent: researcher, Contains: "Carotenoids"},
		}
		for _, p := range patterns {
			for i := range run.Trace.Entries {
				e := &run.Trace.Entries[i]
				Expect(p.Match(run.Trace, e)).To(Equal(p.Mismatches(run.Trace, e) == nil), "pattern %s, entry #%d", &p, i+1)
			}
		}
	})

	It("reads as its fields when shown in a failure message", func() {
		p := Pattern{Kind: trace.ToolResult, Agent: coordinator, Tool: "work", Action: "result", Work: Ref{Tool: "research", N: 2}, WorkRef: Bool(false), Contains: "x"}
		Expect(p.String()).To(Equal(`tool-result agent=research-coordinator tool=work action=result work=(work of research#2) work-ref=false contains="x"`))
		Expect((&Pattern{}).String()).To(Equal("entry"))
	})
})

var _ = Describe("Ref", func() {
	It("reads tool, tool#N and agent/tool#N", func() {
		Expect(ParseRef("research")).To(Equal(Ref{Tool: "research"}))
		Expect(ParseRef("research#2")).To(Equal(Ref{Tool: "research", N: 2}))
		Expect(ParseRef("research-coordinator/research#3")).To(Equal(Ref{Tool: "research", N: 3, Agent: "research-coordinator"}))
	})

	It("rejects an ordinal below 1, a non-number and an empty tool", func() {
		for _, bad := range []string{"research#0", "research#x", "", "research-coordinator/"} {
			_, err := ParseRef(bad)
			Expect(err).To(HaveOccurred(), bad)
		}
	})

	It("resolves to the Work id the N-th background call returned, among an agent's calls when it names one", func() {
		run := builtin("queued-cancel")
		id, ok := WorkOf("research").Resolve(run.Trace)
		Expect(ok).To(BeTrue())
		Expect(id).To(Equal("w-1"))
		id, ok = Ref{Tool: "research", N: 2, Agent: coordinator}.Resolve(run.Trace)
		Expect(ok).To(BeTrue())
		Expect(id).To(Equal("w-2"))
		_, ok = Ref{Tool: "research", Agent: researcher}.Resolve(run.Trace)
		Expect(ok).To(BeFalse())
	})

	It("says which Work it means", func() {
		Expect(Ref{Tool: "research", N: 2, Agent: coordinator}.String()).To(Equal("work of research-coordinator/research#2"))
		Expect(WorkOf("research").IsZero()).To(BeFalse())
		Expect(Ref{}.IsZero()).To(BeTrue())
	})
})
