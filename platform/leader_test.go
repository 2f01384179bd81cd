package platform_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
)

var _ = Describe("The scheduled-work ticker's leader", func() {
	It("when the leader dies, a survivor takes over within one lease: it tries again when the leader's lease lapses", func() {
		e := newEnv()
		root := e.root("scout")
		_, err := e.p.Cron(root, "* * * * *", "tick")
		Expect(err).NotTo(HaveOccurred())
		e.runner(func(*core.Request, int) *core.Response { return &core.Response{Text: "ok"} })
		var survivorFired []time.Duration
		opts := e.opts
		opts.Instance = "proc-2"
		opts.Observer = platform.ObserverFunc(func(ev platform.Event) {
			if ev.Type == platform.EventScheduleFired {
				survivorFired = append(survivorFired, ev.Time.Sub(epoch))
			}
		})
		survivor, err := platform.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(survivor.Close()).To(Succeed())
			e.settle()
		})
		// proc-1 leads from the first due row on, renewing its 2-minute
		// lease every minute; proc-2 follows, trying every other minute.
		e.runFor(4*time.Minute + 30*time.Second)
		Expect(survivorFired).To(BeEmpty(), "one leader fires while it lives")
		dies := epoch.Add(4*time.Minute + 30*time.Second)
		e.p.Crash()
		e.settle()
		e.runFor(5 * time.Minute)
		Expect(survivorFired).NotTo(BeEmpty())
		Expect(epoch.Add(survivorFired[0])).To(BeTemporally("<=", dies.Add(platform.DefaultLeaderTTL)),
			"the survivor's first fire, at +%s, is more than one lease after the leader died at +4m30s", survivorFired[0])
	})
})

var _ = Describe("The scheduled-work ticker's idle poll", func() {
	It("costs no actor and no allocation: hours of polls with nothing due, a row due tomorrow", func() {
		// No recovery pass in these hours: that pass has work to do.
		e := newEnv(func(o *platform.Options) { o.ScheduleRecoveryInterval = 30 * 24 * time.Hour })
		root := e.root("scout")
		_, err := e.p.Cron(root, "0 9 * * *", "the morning report")
		Expect(err).NotTo(HaveOccurred())
		e.runFor(time.Minute) // the first poll
		steps, jumps := e.sim.Steps(), 0
		var runErr error
		allocs := testing.AllocsPerRun(3, func() {
			if err := e.sim.RunFor(time.Hour); err != nil {
				runErr = err
			}
			jumps++
		})
		Expect(runErr).NotTo(HaveOccurred())
		Expect(e.sim.Steps()).To(Equal(steps), "an idle poll starts no actor")
		Expect(allocs).To(BeZero(), "allocations per hour of idle polls")
		Expect(e.sim.Clock().Now()).To(Equal(epoch.Add(time.Minute + time.Duration(jumps)*time.Hour)))
	})
})
