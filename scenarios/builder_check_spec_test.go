package scenarios_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	. "github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// loaderSays loads the background research built-in with one edit to its
// file and returns the loader's one problem, without its file:line:column.
func loaderSays(old, new string) string {
	src, _ := BuiltinSource("research-coordinator")
	edited := strings.Replace(string(src), old, new, 1)
	Expect(edited).NotTo(Equal(string(src)), "the edit applies")
	_, err := Load("edited.yaml", []byte(edited))
	Expect(err).To(HaveOccurred())
	le, ok := err.(*LoadError)
	Expect(ok).To(BeTrue())
	Expect(le.Problems).To(HaveLen(1))
	return le.Problems[0].Message
}

var _ = Describe("the Go builder checks what the YAML loader checks, with the same suggestions", func() {
	It("an unknown agent in Script(...) is refused as the loader refuses it", func() {
		sc := backgroundResearch().Script("research-agnet", scripted.Say("x"))
		err := sc.Check()
		Expect(err).To(MatchError(`script for agent "research-agnet", which is not declared (did you mean "research-agent"?)`))
		Expect(loaderSays("\n  research-agent:\n    - latency", "\n  research-agnet:\n    - latency")).To(Equal(err.Error()))
	})

	It("an unknown tool key in scripted.WorkOf is refused as the loader refuses work-of", func() {
		sc := backgroundResearch(
			scripted.Calls(research(true)),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("reserch")})),
			scripted.Say(answer))
		err := sc.Check()
		Expect(err).To(MatchError(`turn 2 of "research-coordinator": refers to the work of "reserch", but "research-coordinator" has no backgroundable tool of that name (did you mean "research"?)`))
		Expect(loaderSays("id: {work-of: research}, timeout", "id: {work-of: reserch}, timeout")).To(
			HaveSuffix(strings.TrimPrefix(err.Error(), `turn 2 of "research-coordinator": `)))
	})

	It("an unknown state in EndWorkIn is an error of the matcher, in the loader's words", func() {
		run := simulate(backgroundResearch())
		_, err := EndWorkIn(WorkOf("research"), "complete").Match(run)
		Expect(err).To(MatchError(`EndWorkIn matcher: work-ends: "complete" is not a Work state (did you mean "completed"?)`))
		Expect(loaderSays("in: [completed]", "in: [complete]")).To(HaveSuffix(`"complete" is not a Work state (did you mean "completed"?)`))
	})

	It("an unknown state or Work reference in a Go scenario's expectations is refused by Check", func() {
		sc := backgroundResearch().Expect(WorkEnds{Work: WorkOf("reserch"), States: []string{"complete"}})
		err := sc.Check()
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`work-ends: "complete" is not a Work state (did you mean "completed"?)`))
		Expect(err.Error()).To(ContainSubstring(`work-ends work "reserch" never resolves: no agent has a backgroundable tool "reserch" (did you mean "research"?)`))
	})

	It("harness.Run runs nothing of an ill-formed scenario and says why first", func() {
		o := harness.Run(backgroundResearch().Script("research-agnet", scripted.Say("x")), harness.Options{Seed: 1})
		Expect(o.Trace.Entries).To(BeEmpty())
		Expect(o.Passed()).To(BeFalse())
		Expect(o.RootCause()).To(Equal(`root cause: script for agent "research-agnet", which is not declared (did you mean "research-agent"?)`))
	})

	It("a well-formed Go scenario passes Check", func() {
		Expect(backgroundResearch().Check()).To(Succeed())
	})
})
