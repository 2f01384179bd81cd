package serve_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/serve"
)

var _ = Describe("crux-sim's own runtime as the client", func() {
	DescribeTable("passes a built-in scenario through serve, as it does in-process",
		func(ctx SpecContext, name string) {
			s := serveScenario(builtin(name), serve.Options{})
			pr := s.ownRuntime(ctx)
			Expect(pr.Results).NotTo(BeEmpty())
			res := s.srv.Finish("done")
			var text bytes.Buffer
			Expect(harness.WriteReport(&text, res.Outcome)).To(Succeed())
			Expect(res.Passed()).To(BeTrue(), text.String())
		},
		Entry("seed 02's background coordinator", "research-coordinator"),
		Entry("seed 02's foreground coordinator", "research-foreground"),
		Entry("cancel vs completion", "cancel-vs-complete"),
		Entry("send vs exit", "send-vs-exit"),
		Entry("detach vs result", "detach-vs-result"),
		Entry("result timeout vs completion", "result-timeout"),
		Entry("queued cancel", "queued-cancel"),
	)
})
