package harness_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
)

// researchScript starts research in the background and rejoins it.
const researchScript = `
research-coordinator:
  - call: research
    args: {question: Why do leaves change color?, run_in_background: true}
  - call: work
    args: {action: result, id: {work-of: research}}
  - call: work
    args: {action: status, id: {work-of: research}}
  - text: Done.
research-agent:
  - call: lookup
    args: {topic: leaves}
  - latency: 5s
    output: {summary: Chlorophyll breaks down in autumn light.}
`

func faultEntries(o *harness.Outcome) []string {
	var out []string
	for _, e := range o.Trace.Entries {
		if e.Kind == trace.Fault || e.Kind == trace.Action {
			out = append(out, e.Detail)
		}
	}
	return out
}

var _ = Describe("fault injection", func() {
	It("a provider error on step N of agent A fails exactly that step, and the run sees it", func() {
		sc := load(coordinatorYAML("provider-error", researchScript, `
- provider-error: {agent: research-coordinator, step: 2, message: upstream 503}
`))
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(faultEntries(o)).To(ConsistOf("provider error on research-coordinator step 2: upstream 503"))
		Expect(entries(o, "research-coordinator#1 response 2")).To(ConsistOf(ContainSubstring("injected provider error: upstream 503")))
		Expect(entries(o, "research-coordinator#1 request")).To(HaveLen(2))
		Expect(o.Outputs["coordinator"].Err).To(MatchError(ContainSubstring("upstream 503")))
	})

	It("added latency on step N of agent A delays that step in virtual time", func() {
		sc := load(coordinatorYAML("latency", researchScript, `
- latency: {agent: research-agent, step: 1, latency: 20s}
`))
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(faultEntries(o)).To(ConsistOf("latency 20s on research-agent step 1"))
		// Step 1 answers at +20s, step 2 adds its scripted 5s, and the
		// coordinator's result wait returns the output then.
		Expect(entries(o, "research-agent#1 response 1")).To(ConsistOf(HavePrefix("+20s ")))
		Expect(entries(o, "w-1 research running → completed")).To(ConsistOf(HavePrefix("+25s ")))
		Expect(workResult(o, "result", 2)).To(Equal("output"))
	})

	It("a drawn latency comes from the seed's latency stream: it varies across seeds and not across runs", func() {
		sc := func() string {
			return coordinatorYAML("drawn-latency", researchScript, `
- latency: {agent: research-agent, step: 1, min: 1s, max: 20s}
`)
		}
		drawn := map[string]bool{}
		for seed := int64(1); seed <= 12; seed++ {
			first := faultEntries(harness.Run(load(sc()), harness.Options{Seed: seed}))
			Expect(faultEntries(harness.Run(load(sc()), harness.Options{Seed: seed}))).To(Equal(first))
			drawn[strings.Join(first, "")] = true
		}
		Expect(len(drawn)).To(BeNumerically(">", 6))
	})

	It("a child failure (a provider error in the child) ends its Work failed, and the owner sees the state, never the error text", func() {
		sc := load(coordinatorYAML("child-failure", researchScript, `
- provider-error: {agent: research-agent, step: 2, message: child exploded in a secret way}
`))
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(lifecycle(o, "w-1")).To(Equal("queued > running > failed"))
		Expect(workResult(o, "result", 2)).To(Equal("status failed"))
		Expect(o.Violations).To(BeEmpty())
		for _, e := range o.Trace.Entries {
			if e.Agent == "research-coordinator" {
				Expect(e.Content).NotTo(ContainSubstring("secret way"))
			}
		}
	})

	It("a probable fault fires or not by the seed's fault stream, the same way every time for a seed", func() {
		fired := map[bool]int{}
		for seed := int64(1); seed <= 30; seed++ {
			src := coordinatorYAML("maybe", researchScript, `
- provider-error: {agent: research-agent, step: 1, probability: 0.5}
`)
			o := harness.Run(load(src), harness.Options{Seed: seed})
			Expect(transcript(harness.Run(load(src), harness.Options{Seed: seed}))).To(Equal(transcript(o)))
			fired[len(faultEntries(o)) > 0]++
		}
		Expect(fired[true]).To(BeNumerically(">", 5))
		Expect(fired[false]).To(BeNumerically(">", 5))
	})

	DescribeTable("a cancel, send or detach issued on the owner's behalf lands at arbitrary points across seeds",
		func(fault string, landed string) {
			src := coordinatorYAML("action", researchScript, fault)
			points := map[int]bool{}
			for seed := int64(1); seed <= 40; seed++ {
				o := harness.Run(load(src), harness.Options{Seed: seed})
				Expect(o.Violations).To(BeEmpty(), transcript(o))
				for i, e := range o.Trace.Entries {
					if e.Kind == trace.Action && strings.Contains(e.Detail, landed) {
						points[i] = true
					}
				}
			}
			Expect(len(points)).To(BeNumerically(">=", 3), "the action always landed at the same place")
		},
		Entry("cancel", `
- cancel: {work: research, jitter: 12}
`, "cancel w-1 →"),
		Entry("send", `
- send: {work: research, message: Mention anthocyanins., jitter: 12}
`, "send w-1 →"),
		Entry("detach", `
- detach: {work: research, jitter: 12}
`, "detach w-1 →"),
	)

	It("two injected sends to one Work are two commands, each accepted with its own receipt and cursor", func() {
		sc := load(coordinatorYAML("two-sends", researchScript, `
- send: {work: research, message: Mention anthocyanins.}
- send: {work: research, message: Mention carotenoids.}
`))
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(o.Violations).To(BeEmpty(), transcript(o))
		var answers []string
		for _, e := range o.Trace.Entries {
			if e.Kind == trace.Action && strings.HasPrefix(e.Detail, "send ") && strings.Contains(e.Detail, "→") {
				answers = append(answers, e.Detail)
			}
		}
		Expect(answers).To(HaveLen(2), transcript(o))
		Expect(answers[0]).To(ContainSubstring(`"cursor":"1"`))
		Expect(answers[1]).To(ContainSubstring(`"cursor":"2"`), "the second send is not a conflict with the first")
	})

	It("a crash drops all process-local state: nothing runs after it, the trace says what was lost, no goroutine is left", func() {
		before := goleak.IgnoreCurrent()
		sc := load(coordinatorYAML("crash", researchScript, `
- crash:
    after: {request: {agent: research-coordinator, step: 2}}
`))
		o := harness.Run(sc, harness.Options{Seed: 2})
		Expect(o.Crashed).To(BeTrue())
		Expect(goleak.Find(before)).To(Succeed())

		text := o.Trace.Text()
		crashAt := strings.Index(text, "fault crash:")
		Expect(crashAt).To(BeNumerically(">", 0))
		after := text[crashAt:]
		Expect(after).To(ContainSubstring(`crash ends actor "main" waiting on parallel coordinator`))
		Expect(after).To(MatchRegexp(`crash loses w-1 research \(running, owner research-coordinator#1\)`))
		// Only the crash and what it lost follow it: no run ends, no
		// transitions, no requests.
		for _, line := range strings.Split(strings.TrimSpace(after), "\n")[1:] {
			Expect(line).To(MatchRegexp(`^\+\S+\s+note crash (ends|loses) `))
		}
		Expect(o.Works).To(HaveLen(1))
		Expect(string(o.Works[0].State)).To(Equal("running"), "the Work as the crash found it")
		Expect(o.Elapsed).To(BeNumerically("<", 5*time.Second))
	})

	It("a crash at a point drawn by jitter lands at different points across seeds, each reproduced by its seed", func() {
		src := coordinatorYAML("crash-jitter", researchScript, `
- crash: {jitter: 15}
`)
		at := map[int]int64{}
		for seed := int64(1); seed <= 30; seed++ {
			o := harness.Run(load(src), harness.Options{Seed: seed})
			Expect(o.Crashed).To(BeTrue())
			at[len(o.Trace.Entries)] = seed
		}
		Expect(len(at)).To(BeNumerically(">=", 3))
		for n, seed := range at {
			Expect(harness.Run(load(src), harness.Options{Seed: seed}).Trace.Entries).To(HaveLen(n))
		}
	})
})
