package core_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/budget"
)

var _ = Describe("Cost that does not grow with an owner's Work", func() {
	// requestBytes is what one turn of an owner holding n Work items (half
	// finished, half unfinished) allocates, averaged over a few turns, and
	// the status block its request carried.
	requestBytes := func(n int) (uint64, *core.StatusBlock) {
		f := newScaleFixture(n)
		DeferCleanup(f.rt.Close)
		f.start(GinkgoT(), append(jobCalls(n/2, false, 0), jobCalls(n-n/2, true, n/2)...))
		<-f.started
		var block *core.StatusBlock
		f.turns = func(req *core.Request) *core.Response {
			block = req.Status
			return &core.Response{Text: "noted"}
		}
		turn := func() {
			_, err := f.rt.RunWith(context.Background(), f.agent, nil, core.RunOptions{Owner: "owner"})
			Expect(err).NotTo(HaveOccurred())
		}
		turn() // warm
		const turns = 8
		return budget.Allocated(func() {
			for range turns {
				turn()
			}
		}) / turns, block
	}

	It("samples the status block of an owner holding 4,000 Work items with the bytes it takes for 40: it reads the 12 rows it shows", func() {
		small, smallBlock := requestBytes(40)
		large, largeBlock := requestBytes(4000)
		Expect(smallBlock.Rows).To(HaveLen(core.MaxStatusRows))
		Expect(largeBlock.Rows).To(HaveLen(core.MaxStatusRows))
		Expect(largeBlock.Omitted).To(Equal(4000 - core.MaxStatusRows))
		By("the unfinished Work first, oldest first: the first holding job is the oldest unfinished item")
		Expect(largeBlock.Rows[0].State).To(Equal(core.WorkState("running")))
		Expect(largeBlock.Rows[1].State).To(Equal(core.WorkState("queued")))
		Expect(large).To(BeNumerically("<", small+1024),
			"a request of an owner holding 4,000 items allocated %d bytes, one holding 40 allocated %d", large, small)
	})
})
