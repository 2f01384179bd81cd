package harness_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
)

// lifecycle is the states a Work item went through, as "queued > running >
// completed".
func lifecycle(o *harness.Outcome, work string) string {
	var states []string
	for _, e := range o.Trace.Entries {
		if e.Kind == trace.Work && e.Work == work {
			states = append(states, e.To())
		}
	}
	return strings.Join(states, " > ")
}

// workResult says what the coordinator's work call of an action at a step
// answered: the child's output, not_found, a status projection (with its
// state), a receipt, or an error.
func workResult(o *harness.Outcome, action string, step int) string {
	for _, e := range o.Trace.Entries {
		if e.Kind != trace.ToolResult || e.Action != action || e.Agent != "research-coordinator" || e.Step != step {
			continue
		}
		switch {
		case e.IsError:
			return "error"
		case e.Content == `{"status":"not_found"}`:
			return "not_found"
		case strings.HasPrefix(e.Content, `{"work":{"kind":"work.ref"`):
			for _, st := range []string{"queued", "running", "cancel-requested", "completed", "failed", "cancelled"} {
				if strings.Contains(e.Content, `"state":"`+st+`"`) {
					return "status " + st
				}
			}
			return "status"
		case strings.Contains(e.Content, `"outcome":"accepted"`):
			return "accepted"
		default:
			return "output"
		}
	}
	return "no " + action + " call"
}

func guidanceDelivered(o *harness.Outcome) bool {
	for _, e := range o.Trace.Entries {
		if e.Kind == trace.Guidance {
			return true
		}
	}
	return false
}

// A race is a built-in scenario and what decides how it resolved.
type race struct {
	name     string
	resolved func(o *harness.Outcome) string
	// must lists resolutions that seeds 1..100 have to reach.
	must []string
}

var races = []race{
	{name: "cancel-vs-complete", resolved: func(o *harness.Outcome) string { return lifecycle(o, "w-1") },
		// completion beats the cancel; the cancel is observed and wins.
		must: []string{"queued > running > cancel-requested > completed", "queued > running > cancel-requested > cancelled"}},
	{name: "send-vs-exit", resolved: func(o *harness.Outcome) string {
		if guidanceDelivered(o) {
			return "send " + workResult(o, "send", 2) + ", guidance delivered"
		}
		return "send " + workResult(o, "send", 2) + ", never delivered"
	}, must: []string{"send accepted, guidance delivered", "send accepted, never delivered", "send error, never delivered"}},
	{name: "detach-vs-result", resolved: func(o *harness.Outcome) string {
		return "result " + workResult(o, "result", 2) + ", then status " + workResult(o, "status", 3)
	}, must: []string{"result output, then status not_found", "result not_found, then status not_found"}},
	{name: "result-timeout", resolved: func(o *harness.Outcome) string { return "the 2s wait returns " + workResult(o, "result", 2) },
		must: []string{"the 2s wait returns output", "the 2s wait returns status running"}},
	{name: "queued-cancel", resolved: func(o *harness.Outcome) string { return lifecycle(o, "w-2") },
		must: []string{"queued > cancelled"}},
}

var _ = Describe("lifecycle races", func() {
	for _, rc := range races {
		It(rc.name+" resolves more than one way across seeds 1..100, every one of them reproduced exactly by its seed", func() {
			first := map[string]int64{}  // resolution → first seed that reached it
			shown := map[string]string{} // its transcript
			for seed := int64(1); seed <= 100; seed++ {
				o := harness.Run(builtin(rc.name), harness.Options{Seed: seed})
				Expect(o.Passed()).To(BeTrue(), "seed %d:\n%s", seed, transcript(o))
				how := rc.resolved(o)
				if _, seen := first[how]; !seen {
					first[how], shown[how] = seed, transcript(o)
				}
			}
			AddReportEntry("resolutions (first seed)", first)
			Expect(len(first)).To(BeNumerically(">=", 2), "seeds 1..100 all resolved %s the same way: %v", rc.name, first)
			for _, how := range rc.must {
				Expect(first).To(HaveKey(how), "no seed in 1..100 resolves %s as %q; seen: %v", rc.name, how, first)
			}
			for how, seed := range first {
				again := harness.Run(builtin(rc.name), harness.Options{Seed: seed})
				Expect(rc.resolved(again)).To(Equal(how), "seed %d", seed)
				Expect(transcript(again)).To(Equal(shown[how]), "seed %d resolved %q but its transcript changed on a second run", seed, how)
			}
		})
	}

	It("cancel-vs-complete: a cancel accepted while the child runs is cancel-requested, and only the child's next boundary turns it into cancelled", func() {
		var cancelled *harness.Outcome
		for seed := int64(1); seed <= 100 && cancelled == nil; seed++ {
			o := harness.Run(builtin("cancel-vs-complete"), harness.Options{Seed: seed})
			if strings.HasSuffix(lifecycle(o, "w-1"), "cancelled") {
				cancelled = o
			}
		}
		Expect(cancelled).NotTo(BeNil())
		Expect(entries(cancelled, "work cancel w-1")).To(ContainElement(ContainSubstring(`"accepted":true,"state":"cancel-requested"`)))
		Expect(entries(cancelled, "research-agent#1 end")).To(ConsistOf(ContainSubstring("context canceled")))
	})

	It("cancel-vs-complete: when completion wins, the result call returns the child's exact output", func() {
		var completed *harness.Outcome
		for seed := int64(1); seed <= 100 && completed == nil; seed++ {
			o := harness.Run(builtin("cancel-vs-complete"), harness.Options{Seed: seed})
			if strings.HasSuffix(lifecycle(o, "w-1"), "completed") {
				completed = o
			}
		}
		Expect(completed).NotTo(BeNil())
		Expect(workResult(completed, "result", 3)).To(Equal("output"))
		Expect(entries(completed, "work result w-1")).To(ConsistOf(ContainSubstring("Chlorophyll breaks down")))
	})
})
