package scenarios_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// What a match costs: a pattern is asked of every entry of every run and a
// script's condition of every request, so reading a rendered status row or
// the tools a request offered builds nothing.
var _ = Describe("Matching cost", func() {
	BeforeEach(func() {
		if raceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
	})

	It("reads a rendered status row without allocating", func() {
		e := &trace.Entry{Kind: trace.Request, Run: "coord#1", Status: []string{
			"- w-1 · research · running 4s",
			"- w-2 · research · completed 2s · Result available",
		}}
		t := &trace.Trace{Entries: []trace.Entry{*e}}
		patterns := []Pattern{
			{Kind: trace.Request, Status: &RowPattern{Label: "research", State: "completed", ResultAvailable: Bool(true)}},
			{Kind: trace.Request, Status: &RowPattern{State: "running", ResultAvailable: Bool(false)}},
		}
		for _, p := range patterns {
			Expect(p.Match(t, e)).To(BeTrue(), "%s", &p)
			Expect(testing.AllocsPerRun(50, func() { p.Match(t, e) })).To(BeZero(), "allocations matching %s", &p)
		}
		miss := Pattern{Kind: trace.Request, Status: &RowPattern{State: "failed"}}
		Expect(miss.Match(t, e)).To(BeFalse())
	})

	It("matches a request's offered tools without allocating", func() {
		req := &core.Request{Run: "coord#1", Agent: "coord",
			Tools: []core.ToolSpec{{Name: "research"}, {Name: "work"}}}
		p := &Pattern{Kind: trace.Request, ToolsInclude: []string{"work"}, ToolsExclude: []string{"search"}}
		Expect(MatchRequest(p, req)).To(BeTrue())
		Expect(testing.AllocsPerRun(50, func() { MatchRequest(p, req) })).To(BeZero())
		Expect(MatchRequest(&Pattern{Tools: []string{"work", "research"}}, req)).To(BeFalse(), "the order of the tools counts")
	})
})
