package harness_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
)

// Work still running when its owner's run ends is cancelled when the
// runtime closes: a finding says so for each such item, and not for Work
// its owner cancelled itself, with a cancel call of its own.
var _ = Describe("Work the runtime closed", func() {
	DescribeTable("is a finding for each item its owner did not cancel, and only for those",
		func(n int, cancelled ...int) {
			var script strings.Builder
			script.WriteString("research-coordinator:\n  - calls:\n")
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&script, "      - {tool: research, args: {question: q%d, run_in_background: true}}\n", i)
			}
			for _, c := range cancelled {
				fmt.Fprintf(&script, "  - {call: work, args: {action: cancel, id: {work-of: research#%d}}}\n", c)
			}
			script.WriteString("  - text: Done without the research.\nresearch-agent:\n")
			for range n {
				script.WriteString("  - {latency: 1h, output: {summary: late}}\n")
			}
			o := harness.Run(load(coordinatorYAML("closed-by-runtime", script.String(), "")), harness.Options{Seed: 1})
			Expect(o.Err).NotTo(HaveOccurred())
			var want []string
			for i := 1; i <= n; i++ {
				if !containsInt(cancelled, i) {
					want = append(want, fmt.Sprintf("w-%d (research) was still running when the runtime closed and was cancelled", i))
				}
			}
			var got []string
			for _, f := range o.Findings {
				if strings.Contains(f, "when the runtime closed") {
					got = append(got, f)
				}
			}
			Expect(got).To(Equal(want))
		},
		Entry("three items, one cancelled by its owner", 3, 2),
		Entry("eight items, two cancelled by their owner (the trace's cancels read once)", 8, 3, 6),
	)
})

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
