package harness_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// observed re-reads a simulated run's trace as if another runtime had
// produced it, with edit applied to a copy of its entries.
func observed(name string, edit func([]trace.Entry) []trace.Entry) (*scenarios.Scenario, *harness.Outcome, harness.Observed) {
	sc, err := scenarios.Builtin(name)
	Expect(err).NotTo(HaveOccurred())
	sim := harness.Run(sc, harness.Options{Seed: 1})
	entries := slices.Clone(sim.Trace.Entries)
	if edit != nil {
		entries = edit(entries)
	}
	return sc, sim, harness.Observed{Trace: &trace.Trace{Start: sim.Trace.Start, Entries: entries}, Steps: 4}
}

var _ = Describe("judging a run observed outside the simulator", func() {
	It("gives a simulated run's trace the verdicts the simulation gave it", func() {
		for _, name := range []string{"research-coordinator", "research-foreground", "cancel-vs-complete", "detach-vs-result", "queued-cancel"} {
			sc, sim, ob := observed(name, nil)
			o := harness.Judge(sc, ob)
			Expect(o.Observed).To(BeTrue())
			Expect(o.Violations).To(BeEmpty(), name)
			Expect(o.Verdicts).To(HaveLen(len(sc.Expectations)), name)
			for i, v := range o.Verdicts {
				Expect(v.Description).To(Equal(sim.Verdicts[i].Description))
				Expect(v.Failure == nil).To(Equal(sim.Verdicts[i].Failure == nil), "%s: %s", name, v.Description)
			}
		}
	})

	It("finds a child's output in a status row as the simulation's invariants would, and fails the expectation that names it", func() {
		sc, _, ob := observed("research-coordinator", func(es []trace.Entry) []trace.Entry {
			out := ""
			for i := range es {
				if es[i].Kind == trace.RunEnd && es[i].Mode() == "background" {
					out = es[i].Content
				}
			}
			for i := range es {
				if es[i].Kind == trace.Request && es[i].Agent == "research-coordinator" && es[i].Step == 4 {
					es[i].EditRequest().Status = []string{es[i].Status()[0] + " · " + out}
				}
			}
			return es
		})
		o := harness.Judge(sc, ob)
		Expect(o.Passed()).To(BeFalse())
		var broken []string
		for _, v := range o.Violations {
			broken = append(broken, v.Invariant)
		}
		Expect(broken).To(ContainElement("no-child-content-in-status"))
		failed := map[string]bool{}
		for _, v := range o.Verdicts {
			failed[v.Description] = v.Failure != nil
		}
		Expect(failed).To(HaveKeyWithValue("step 3: status is safe: no status row carries the child's output", true))

		var text bytes.Buffer
		Expect(harness.WriteReport(&text, o)).To(Succeed())
		Expect(text.String()).To(HavePrefix("== research-coordinator · served ==\n"))
		Expect(text.String()).To(ContainSubstring(`invariant "no-child-content-in-status" broken at entry #`))
		Expect(text.String()).To(ContainSubstring("FAIL research-coordinator (served): 5 of 6 expectations held"))
		Expect(text.String()).To(ContainSubstring("; 4 requests, "))
		doc, err := harness.ReportJSON(o)
		Expect(err).NotTo(HaveOccurred())
		var report struct {
			Passed   bool `json:"passed"`
			Verdicts []struct {
				Passed bool `json:"passed"`
			} `json:"verdicts"`
		}
		Expect(json.Unmarshal(doc, &report)).To(Succeed())
		Expect(report.Passed).To(BeFalse())
		Expect(report.Verdicts).To(HaveLen(6))
	})

	It("accepts Work states sampled with the states between them unseen, and refuses a state the lifecycle cannot reach", func() {
		work := func(from, to string) trace.Entry {
			return trace.Entry{Kind: trace.Work, Run: "c#1", Agent: "research-agent", Work: "w-1", Label: "research", Part: &trace.WorkPart{From: from, To: to}}
		}
		judge := func(es ...trace.Entry) []harness.Violation {
			sc := scenarios.New("sampled")
			return harness.Judge(sc, harness.Observed{Trace: &trace.Trace{Entries: es}}).Violations
		}
		Expect(judge(work("", "queued"), work("queued", "completed"))).To(BeEmpty(), "running went unseen")
		Expect(judge(work("", "running"), work("running", "cancelled"))).To(BeEmpty(), "cancel-requested went unseen")
		v := judge(work("", "completed"), work("completed", "running"))
		Expect(v).NotTo(BeEmpty())
		Expect(v[0].Invariant).To(Equal("legal-transitions"))
		Expect(v[0].Message).To(ContainSubstring("cannot reach"))
		v = judge(work("", "done"))
		Expect(v).To(HaveLen(1))
		Expect(v[0].Message).To(ContainSubstring(`"done", which is not a Work state`))
	})

	It("holds a result wait to the 30 s cap exactly, unless the observer allows slack for real time", func() {
		// A result call answered 30.001s after the answer that made it.
		call := &core.ToolCall{ID: "call-1", Name: "work", Arguments: `{"action":"result","id":"w-1"}`}
		es := []trace.Entry{
			{Kind: trace.ToolCall, Run: "c#1", Agent: "c", Step: 1, Call: call},
			{Kind: trace.ToolResult, Run: "c#1", Agent: "c", Step: 1, Call: call, Action: "result", Work: "w-1",
				Content: "{}", At: core.MaxResultWait + time.Millisecond},
		}
		caps := func(ob harness.Observed) []string {
			var out []string
			for _, v := range harness.Judge(scenarios.New("waited"), ob).Violations {
				if v.Invariant == "caps" {
					out = append(out, v.Message)
				}
			}
			return out
		}
		Expect(caps(harness.Observed{Trace: &trace.Trace{Entries: es}})).To(Equal([]string{"a result call of c#1 waited 30.001s (cap 30s)"}))
		Expect(caps(harness.Observed{Trace: &trace.Trace{Entries: es}, ResultWaitSlack: time.Millisecond})).To(BeEmpty())
		es[1].At += time.Millisecond
		Expect(caps(harness.Observed{Trace: &trace.Trace{Entries: es}, ResultWaitSlack: time.Millisecond})).To(Equal(
			[]string{"a result call of c#1 waited 30.002s (cap 30s, and 1ms for real time)"}))
	})

	It("notes completed Work whose result its owner never read", func() {
		sc, _, ob := observed("research-coordinator", func(es []trace.Entry) []trace.Entry {
			return slices.DeleteFunc(es, func(e trace.Entry) bool { return e.Kind == trace.ToolResult && e.Action == "result" })
		})
		o := harness.Judge(sc, ob)
		Expect(o.Findings).To(ContainElement("w-1 (research) completed but its result was never read"))
	})
})
