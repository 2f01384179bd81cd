package platform_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
)

var _ = Describe("The event logs", func() {
	It("hold every event the observer saw, each on its own log, in order, however long a log grows", func() {
		e := newEnv()
		root := e.root("scout")
		e.runner(func(_ *core.Request, n int) *core.Response { return &core.Response{Text: fmt.Sprintf("run %d", n)} })
		e.send(root, "/loop 5m ping")
		e.runFor(24 * time.Hour) // 289 runs: hundreds of events on the root's log, a short log per run
		e.settle()

		Expect(e.seen).To(HaveLen(3+7*289), "the root's 2 and 2 a run, scheduler.leader, 5 a run on its own log")
		Expect(e.p.AllEvents()).To(Equal(e.seen))
		byLog := map[string][]platform.Event{}
		for _, ev := range e.seen {
			byLog[ev.Session] = append(byLog[ev.Session], ev)
		}
		Expect(byLog[root]).To(HaveLen(2 + 2*289))
		for id, want := range byLog {
			Expect(e.p.Events(id)).To(Equal(want), "the log of %q", id)
		}
	})
})
