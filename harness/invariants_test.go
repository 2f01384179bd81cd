package harness_test

import (
	"encoding/json"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

const coordinator = "research-coordinator#1"

// once plants its entries after the first entry that when accepts.
func once(when func(e trace.Entry) bool, defect func(e trace.Entry) []trace.Entry) func(trace.Entry) []trace.Entry {
	done := false
	return func(e trace.Entry) []trace.Entry {
		if done || !when(e) {
			return nil
		}
		done = true
		return defect(e)
	}
}

func transitionTo(state string) func(e trace.Entry) bool {
	return func(e trace.Entry) bool { return e.Kind == trace.Work && e.Work == "w-1" && e.To() == state }
}

func childEnded(e trace.Entry) bool {
	return e.Kind == trace.RunEnd && e.Mode() == "background" && e.Content != ""
}

const projection = `{"work":{"kind":"work.ref","id":"w-1","targetId":"research-agent","guarantees":{"execution":"process-local","rejoin":"process-local"}},"targetLabel":"research","state":"running","attachment":"attached","attempt":1,"createdAt":"2026-01-01T00:00:00.000Z","resultAvailable":false}`

var _ = Describe("invariants", func() {
	It("output-only-through-result and output-only-via-result hold when two children answer alike and each is read in turn", func() {
		sc := load(`name: twins
agents:
  r:
    description: Research one question
    prompt: {id: r, system: research, input: {type: object, properties: {question: {type: string}}, required: [question]}, template: "{{.question}}"}
  a:
    description: Coordinates
    prompt: {id: a, system: coordinate}
    tools:
      research: {background: r}
run:
  agents: {a: a}
script:
  a:
    - calls:
        - {tool: research, args: {question: one, run_in_background: true}}
        - {tool: research, args: {question: two, run_in_background: true}}
    - call: work
      args: {action: result, id: {work-of: "research#2"}}
    - call: work
      args: {action: result, id: {work-of: "research#1"}}
    - text: both read
  r:
    - {repeat: true, latency: 1s, text: No findings for this question.}
expect:
  - output-only-via-result: research
`)
		for seed := int64(1); seed <= 3; seed++ {
			o := harness.Run(sc, harness.Options{Seed: seed})
			Expect(o.Violations).To(BeEmpty(), "seed %d:\n%s", seed, transcript(o))
			Expect(o.Passed()).To(BeTrue(), "seed %d:\n%s", seed, transcript(o))
		}
	})

	It("hold on every built-in under seeds 1..100", func() {
		for _, b := range scenarios.Builtins() {
			for seed := int64(1); seed <= 100; seed++ {
				o := harness.Run(builtin(b.Name), harness.Options{Seed: seed})
				Expect(o.Violations).To(BeEmpty(), "%s seed %d:\n%s", b.Name, seed, transcript(o))
			}
		}
	})

	DescribeTable("each catches a violation planted in a run, and reports it with the seed, the step and the entry",
		func(invariant string, defect func(trace.Entry) []trace.Entry, planted string) {
			const seed = 7
			sc := load(coordinatorYAML("planted", researchScript, ""))
			o := harness.Run(sc, harness.WithTraceDefect(harness.Options{Seed: seed}, defect))

			var caught *harness.Violation
			for i := range o.Violations {
				if o.Violations[i].Invariant == invariant {
					caught = &o.Violations[i]
					break
				}
			}
			Expect(caught).NotTo(BeNil(), "%s missed it:\n%s", invariant, transcript(o))
			Expect(caught.Seed).To(Equal(int64(seed)))
			Expect(caught.Step).To(BeNumerically(">", 0))
			Expect(caught.Step).To(BeNumerically("<=", o.Steps))
			Expect(caught.Entry).To(BeNumerically(">", 0))
			Expect(trace.Line(&o.Trace.Entries[caught.Entry-1])).To(ContainSubstring(planted))
			Expect(transcript(o)).To(ContainSubstring(fmt.Sprintf("FAIL invariant %q broken at step %d (entry #%d, seed %d)", invariant, caught.Step, caught.Entry, seed)))
			Expect(o.Passed()).To(BeFalse())

			clean := harness.Run(load(coordinatorYAML("planted", researchScript, "")), harness.Options{Seed: seed})
			Expect(clean.Violations).To(BeEmpty(), "without the defect the run is clean")
		},
		Entry("legal-transitions: running never goes back to queued", "legal-transitions",
			once(transitionTo("running"), func(e trace.Entry) []trace.Entry {
				return []trace.Entry{{Kind: trace.Work, Run: e.Run, Agent: e.Agent, Work: "w-1", Label: e.Label, Part: &trace.WorkPart{From: "running", To: "queued"}}}
			}), "running → queued"),
		Entry("terminal-states-never-change: completed stays completed", "terminal-states-never-change",
			once(transitionTo("completed"), func(e trace.Entry) []trace.Entry {
				return []trace.Entry{{Kind: trace.Work, Run: e.Run, Agent: e.Agent, Work: "w-1", Label: e.Label, Part: &trace.WorkPart{From: "completed", To: "cancelled"}}}
			}), "completed → cancelled"),
		Entry("no-child-content-in-status: a status row never carries child output", "no-child-content-in-status",
			once(childEnded, func(e trace.Entry) []trace.Entry {
				return []trace.Entry{{Kind: trace.Request, Run: coordinator, Agent: "research-coordinator", Step: 9,
					Part: &trace.RequestPart{Status: []string{"- w-1 · research · completed 5s · " + e.Content}}}}
			}), "status - w-1 · research · completed 5s · {"),
		Entry("no-child-content-in-status: a projection never carries child output, not even as a JSON string of its own", "no-child-content-in-status",
			once(childEnded, func(e trace.Entry) []trace.Entry {
				note, _ := json.Marshal(e.Content)
				return []trace.Entry{{Kind: trace.ToolResult, Run: coordinator, Agent: "research-coordinator", Step: 2, Action: "result", Work: "w-1",
					Call:    &core.ToolCall{ID: "call-96", Name: "work"},
					Content: strings.TrimSuffix(projection, "}") + `,"note":` + string(note) + "}"}}
			}), "call-96"),
		Entry("output-only-through-result: the owner's requests carry the output only after work result returned it", "output-only-through-result",
			once(childEnded, func(e trace.Entry) []trace.Entry {
				return []trace.Entry{{Kind: trace.Request, Run: coordinator, Agent: "research-coordinator", Step: 9,
					Part: &trace.RequestPart{Messages: []core.Message{{Role: core.RoleUser, Content: "Leaked early: " + e.Content}}}}}
			}), "Leaked early"),
		Entry("not-found-for-detached-and-foreign: another owner's lookup answers not_found", "not-found-for-detached-and-foreign",
			once(transitionTo("running"), func(e trace.Entry) []trace.Entry {
				return []trace.Entry{{Kind: trace.ToolResult, Run: "intruder#1", Agent: "intruder", Step: 1, Action: "status", Work: "w-1",
					Call: &core.ToolCall{ID: "call-99", Name: "work"}, Content: projection}}
			}), "intruder#1"),
		Entry("send-idempotent: cursors count up by one per Work", "send-idempotent",
			once(transitionTo("running"), func(e trace.Entry) []trace.Entry {
				return []trace.Entry{{Kind: trace.ToolResult, Run: coordinator, Agent: "research-coordinator", Step: 2, Action: "send", Work: "w-1",
					Call:    &core.ToolCall{ID: "call-98", Name: "work"},
					Content: `{"workId":"w-1","id":"send-1","cursor":"3","acceptedAt":"2026-01-01T00:00:00.000Z","outcome":"accepted"}`}}
			}), `"cursor":"3"`),
		Entry("caps: a result call answers by the timeout it asked for", "caps",
			func() func(trace.Entry) []trace.Entry {
				call := &core.ToolCall{ID: "call-97", Name: "work", Arguments: `{"action":"result","id":"w-1","timeout":"1s"}`}
				started := once(transitionTo("running"), func(e trace.Entry) []trace.Entry {
					return []trace.Entry{{Kind: trace.ToolCall, Run: coordinator, Agent: "research-coordinator", Step: 2, Call: call}}
				})
				answered := once(childEnded, func(e trace.Entry) []trace.Entry {
					return []trace.Entry{{Kind: trace.ToolResult, Run: coordinator, Agent: "research-coordinator", Step: 2, Action: "result",
						Work: "w-1", Call: call, Content: projection}}
				})
				return func(e trace.Entry) []trace.Entry { return append(started(e), answered(e)...) }
			}(), "call-97"),
		Entry("caps: a status block has at most 12 rows", "caps",
			once(func(e trace.Entry) bool { return e.Kind == trace.Request && e.Run == coordinator }, func(e trace.Entry) []trace.Entry {
				rows := make([]string, 13)
				for i := range rows {
					rows[i] = fmt.Sprintf("- w-%d · research · running 0s", i+1)
				}
				return []trace.Entry{{Kind: trace.Request, Run: coordinator, Agent: "research-coordinator", Step: 9, Part: &trace.RequestPart{Status: rows}}}
			}), "request 9"),
	)

	It("output-only-through-result and no-child-content-in-status: among 40 children's outputs, the one that leaked is caught and named", func() {
		const leaked = "Part 22 is researched."
		var work string
		defect := func(e trace.Entry) []trace.Entry {
			if e.Kind != trace.RunEnd || e.Content != leaked {
				return nil
			}
			work = e.Work
			return []trace.Entry{
				{Kind: trace.Request, Run: "coordinator#1", Agent: "coordinator", Step: 90,
					Part: &trace.RequestPart{Messages: []core.Message{{Role: core.RoleUser, Content: "Leaked early: " + leaked}}}},
				{Kind: trace.Request, Run: "coordinator#1", Agent: "coordinator", Step: 91,
					Part: &trace.RequestPart{Status: []string{"- " + e.Work + " · research · completed 1s · " + leaked}}},
			}
		}
		sc := load(backgroundFanoutScenario(40))
		o := harness.Run(sc, harness.WithTraceDefect(harness.Options{Seed: 5}, defect))
		Expect(work).NotTo(BeEmpty())
		Expect(o.Violations).To(ContainElements(
			SatisfyAll(HaveField("Invariant", "output-only-through-result"),
				HaveField("Message", "the output of "+work+" is in a request message of coordinator#1 before a work result returned it")),
			SatisfyAll(HaveField("Invariant", "no-child-content-in-status"),
				HaveField("Message", `a status row of coordinator#1 carries child content "`+leaked+`"`)),
		), transcript(o))
		Expect(harness.Run(sc, harness.Options{Seed: 5}).Violations).To(BeEmpty(), "without the defect the run is clean")
	})

	It("caps: a result wait never outlasts 30 s", func() {
		sc := load(coordinatorYAML("slow-result", `
research-coordinator:
  - call: research
    args: {question: Why do leaves change color?, run_in_background: true}
  - call: work
    args: {action: result, id: {work-of: research}}
  - call: work
    args: {action: result, id: {work-of: research}, timeout: 5s}
  - text: Done.
research-agent:
  - latency: 1h
    output: {summary: Too late.}
`, ""))
		results := 0
		// At +35s, answer as a result the call made at +0s: a wait of 35 s.
		defect := func(e trace.Entry) []trace.Entry {
			if e.Kind != trace.ToolResult || e.Action != "result" {
				return nil
			}
			if results++; results != 2 {
				return nil
			}
			return []trace.Entry{{Kind: trace.ToolResult, Run: e.Run, Agent: e.Agent, Step: 1, Action: "result", Work: "w-1",
				Call: &core.ToolCall{ID: "call-1", Name: "work"}, Content: projection}}
		}
		o := harness.Run(sc, harness.WithTraceDefect(harness.Options{Seed: 3}, defect))
		Expect(o.Violations).To(ContainElement(SatisfyAll(
			HaveField("Invariant", "caps"), HaveField("Seed", int64(3)),
			HaveField("Message", ContainSubstring("waited 35s (cap 30s)")))), transcript(o))

		clean := harness.Run(load(coordinatorYAML("slow-result", `
research-coordinator:
  - call: research
    args: {question: Why do leaves change color?, run_in_background: true}
  - call: work
    args: {action: result, id: {work-of: research}}
  - text: Done.
research-agent:
  - latency: 1h
    output: {summary: Too late.}
`, "")), harness.Options{Seed: 3})
		Expect(clean.Violations).To(BeEmpty(), "a wait of exactly 30 s is within the cap")
		Expect(entries(clean, "work result w-1")).To(ConsistOf(HavePrefix("+30s ")))
	})
})
