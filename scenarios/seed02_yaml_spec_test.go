package scenarios_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// Edits that break the built-in YAML scenarios of seed 02.
const (
	withoutResultCalls = `    - label: draft while research runs; a short wait returns safe status
      call: work
      args: {action: result, id: {work-of: research}, timeout: 1s}
    - call: work
      args: {action: result, id: {work-of: research}}
`
	backgroundArgs = `args: {question: Why do leaves change color in autumn?, run_in_background: true}`
	foregroundArgs = `args: {question: Why do leaves change color in autumn?}`
)

// brokenYAML loads a built-in with one edit to its script: cut, or replace
// old with new.
func brokenYAML(t interface {
	Helper()
	Fatalf(string, ...any)
}, name, old string, replacement ...string) *scenarios.Scenario {
	t.Helper()
	src, ok := scenarios.BuiltinSource(name)
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	edited := strings.Replace(string(src), old, strings.Join(replacement, ""), 1)
	if edited == string(src) {
		t.Fatalf("the edit does not apply to %s", name)
	}
	sc, err := scenarios.Load(name+" (broken)", []byte(edited))
	if err != nil {
		t.Fatalf("the broken %s does not load: %v", name, err)
	}
	return sc
}

// verdicts maps each expectation's description to its failure report, ""
// when it held.
func verdicts(o *harness.Outcome) map[string]string {
	out := map[string]string{}
	for _, v := range o.Verdicts {
		out[v.Description] = ""
		if v.Failure != nil {
			out[v.Description] = v.Failure.Report(o.Trace)
		}
	}
	return out
}

const (
	fiveSteps  = "the recipe's five steps, in order: research in the background, a work.ref, safe status, work result, the exact output"
	step2      = "step 2: the research call's continuation gets the work.ref, not the child result"
	step3      = "step 3: status is safe: no status row carries the child's output"
	step5      = "step 5: only the work result round carries the child's exact output"
	inlineOnce = "the foreground call blocks and returns the exact output in the same tool round, with no status after"
	inline     = "a foreground research call returns the child's exact output in the same tool round"
)

// The same steps as seed02_spec_test.go, written as YAML: the built-ins
// research-coordinator and research-foreground.
var _ = Describe("Seed 02: the research coordinator, as the YAML built-ins", func() {
	It("holds all five steps on the background path", func() {
		run := builtin("research-coordinator")
		Expect(verdicts(run)).To(HaveKeyWithValue(fiveSteps, ""))
		Expect(verdicts(run)).To(HaveKeyWithValue(step2, ""))
		Expect(verdicts(run)).To(HaveKeyWithValue(step3, ""))
		Expect(verdicts(run)).To(HaveKeyWithValue(step5, ""))
		Expect(run.Passed()).To(BeTrue())
	})

	It("returns the exact output inline on the foreground path", func() {
		run := builtin("research-foreground")
		Expect(verdicts(run)).To(HaveKeyWithValue(inlineOnce, ""))
		Expect(verdicts(run)).To(HaveKeyWithValue(inline, ""))
		Expect(run.Passed()).To(BeTrue())
	})

	Describe("when the script breaks it", func() {
		It("fails steps 4 and 5 when the coordinator never calls result", func() {
			run := simulate(brokenYAML(GinkgoT(), "research-coordinator", withoutResultCalls))
			v := verdicts(run)
			Expect(run.Passed()).To(BeFalse())
			Expect(v[fiveSteps]).To(HavePrefix("pattern 5 of 5, tool-result agent=research-coordinator tool=work action=result work=(work of research) contains=\"Anthocyanins\", has no match after entry #8, which matched pattern 4"))
			Expect(v[fiveSteps]).To(ContainSubstring("  > #8   +0s     research-coordinator#1 request 2 tools=research,work\n                   status - w-1 · research · running 0s"))
			Expect(v[step5]).To(HavePrefix("w-1 ended cancelled, so its output never reached its owner research-coordinator#1 through work result"))
			Expect(v[step2]).To(BeEmpty())
			Expect(v[step3]).To(BeEmpty())
		})

		It("fails steps 1, 2 and 5 when the coordinator calls research in the foreground", func() {
			run := simulate(brokenYAML(GinkgoT(), "research-coordinator", backgroundArgs, foregroundArgs))
			v := verdicts(run)
			Expect(v[fiveSteps]).To(HavePrefix("pattern 2 of 5, response agent=research-coordinator tool=research in-background=true, has no match after entry #2, which matched pattern 1; the nearest after entry #2 is entry #3, where no call of research has run_in_background: true"))
			Expect(v[fiveSteps]).To(ContainSubstring(`  > #3   +0s     research-coordinator#1 response 1` + "\n" + `                   call call-1 research {"question":"Why do leaves change color in autumn?"}`))
			Expect(v[step2]).To(HavePrefix(`entry #10 matches tool-result agent=research-coordinator tool=research contains="Anthocyanins", which must never happen`))
			Expect(v[step5]).To(HavePrefix("no call of research ran in the background: the research call in entry #10 returned its output inline, not a work.ref"))
			Expect(v).To(HaveKeyWithValue("the script covers every provider step", ContainSubstring(`no earlier "research" call returned a work.ref`)))
		})

		It("fails the foreground path when the coordinator runs research in the background", func() {
			run := simulate(brokenYAML(GinkgoT(), "research-foreground",
				"    - call: research\n      args: {question: Why do leaves change color in autumn?}\n",
				"    - call: research\n      args: {question: Why do leaves change color in autumn?, run_in_background: true}\n"+
					"    - call: work\n      args: {action: result, id: {work-of: research}}\n"))
			v := verdicts(run)
			Expect(v[inlineOnce]).To(HavePrefix("pattern 2 of 4, response agent=research-coordinator tool=research in-background=false, has no match after entry #2"))
			Expect(v[inline]).To(HavePrefix("no foreground call of research ran a child to completion: the research call in entry #7 returned work.ref w-1"))
			Expect(v["never: [work], [tool-result tool=work]"]).To(HavePrefix("entry #5 matches work, which must never happen"))
		})
	})
})
