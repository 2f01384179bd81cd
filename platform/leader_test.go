package platform_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
	"github.com/crux-sim/crux-sim/sim"
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

var _ = Describe("The platform's idle wake-ups on the simulator's clock", func() {
	// jumpsInADay counts the clock's jumps in a day on which nothing is
	// due (one row, due in February), with no recovery pass and no
	// workspace sweep (both have work to do), checking that no actor ran.
	jumpsInADay := func(mod func(*platform.Options)) int {
		noLeaks := fixture.LeakCheck()
		jumps := 0
		s := sim.New(sim.Options{ReplayStrict: true, Start: epoch, OnJump: func(from, to time.Time) { jumps++ }})
		opts := platform.Options{
			Core:                     core.Options{Provider: scripted.New(), Clock: s.Clock(), IDs: &core.SequentialIDs{}, Executor: s},
			Agents:                   map[string]*core.Agent{"scout": agent("scout")},
			Store:                    store.NewMemory(),
			Instance:                 "proc-1",
			ScheduleRecoveryInterval: 30 * 24 * time.Hour,
			WorkspaceSweepInterval:   30 * 24 * time.Hour,
		}
		mod(&opts)
		p, err := platform.New(opts)
		Expect(err).NotTo(HaveOccurred())
		root, err := p.NewSession(platform.SessionOptions{Agent: "scout", User: "ada"})
		Expect(err).NotTo(HaveOccurred())
		_, err = p.Cron(root, "0 9 1 2 *", "the yearly report")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Settle()).To(Succeed())
		jumps, steps := 0, s.Steps()
		Expect(s.RunFor(24 * time.Hour)).To(Succeed())
		Expect(s.Steps()).To(Equal(steps), "actor steps")
		Expect(s.Clock().Elapsed()).To(Equal(24 * time.Hour))
		Expect(p.Close()).To(Succeed())
		Expect(s.Settle()).To(Succeed())
		Expect(noLeaks()).To(Succeed())
		return jumps
	}

	It("stop the clock nowhere: a day of idle polls is one jump, to the horizon, with no actor step", func() {
		Expect(jumpsInADay(func(o *platform.Options) { o.NoSweepers = true })).To(Equal(1),
			"clock jumps in a day of 1,440 idle polls")
	})

	It("stop the clock nowhere beside the sweepers: a day of idle polls and idle sweeper ticks is one jump", func() {
		// The board and inbox sweepers (every five minutes) find nothing.
		Expect(jumpsInADay(func(*platform.Options) {})).To(Equal(1),
			"clock jumps in a day of 1,440 idle polls and 288 idle sweeper ticks")
	})
})

var _ = Describe("The ticker's idle polls skipped in spans on the simulator's clock", func() {
	// firedAt runs a platform on the simulator with rows due at each of
	// at, none at a poll's instant, and returns when each fired.
	firedAt := func(at ...time.Duration) []time.Duration {
		s := sim.New(sim.Options{ReplayStrict: true, Start: epoch})
		p, err := platform.New(platform.Options{
			Core:     core.Options{Provider: scripted.New(), Clock: s.Clock(), IDs: &core.SequentialIDs{}, Executor: s},
			Agents:   map[string]*core.Agent{"scout": agent("scout")},
			Store:    store.NewMemory(),
			Instance: "proc-1",
		})
		Expect(err).NotTo(HaveOccurred())
		root, err := p.NewSession(platform.SessionOptions{Agent: "scout", User: "ada"})
		Expect(err).NotTo(HaveOccurred())
		for _, d := range at {
			_, err = p.Once(root, epoch.Add(d), "the report")
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(s.RunFor(6 * time.Hour)).To(Succeed())
		var fired []time.Duration
		for _, e := range ofType(p.AllEvents(), platform.EventScheduleFired) {
			fired = append(fired, e.Time.Sub(epoch))
		}
		Expect(p.Close()).To(Succeed())
		Expect(s.Settle()).To(Succeed())
		return fired
	}

	It("end a span a poll before the next due row: a row due between two polls fires at its time, not at the poll after it", func() {
		due := []time.Duration{
			2*time.Hour + 30*time.Second,
			4*time.Hour - 1,
			5*time.Hour + 1,
		}
		Expect(firedAt(due...)).To(Equal(due))
	})
})

// dueCounter is a store that counts the ticker's NextDue calls. Its
// Memory counts its schedule writes (store.ScheduleWriteCounter) unless
// opaque hides that, as a store shared through a server does not.
type dueCounter struct {
	*store.Memory
	asked int
}

func (d *dueCounter) NextDue(ctx context.Context) (time.Time, bool, error) {
	d.asked++
	return d.Memory.NextDue(ctx)
}

// opaque is a store with nothing but the Store methods.
type opaque struct{ store.Store }

var _ = Describe("The scheduled-work ticker's idle poll on a store that counts its schedule writes", func() {
	// No recovery pass in these hours: that pass has work to do.
	noRecovery := func(o *platform.Options) { o.ScheduleRecoveryInterval = 30 * 24 * time.Hour }

	// askedInAnIdleHour is how many times a platform on the store that wrap
	// makes of counted asks it for its next due row in an hour of idle
	// polls, a morning cron written before it.
	askedInAnIdleHour := func(wrap func(*dueCounter) store.Store) int {
		GinkgoHelper()
		counted := &dueCounter{Memory: store.NewMemory()}
		e := newEnv(noRecovery, func(o *platform.Options) { o.Store = wrap(counted) })
		root := e.root("scout")
		_, err := e.p.Cron(root, "0 9 * * *", "the morning report")
		Expect(err).NotTo(HaveOccurred())
		e.runFor(time.Minute)
		asked := counted.asked
		e.runFor(time.Hour)
		return counted.asked - asked
	}

	It("asks the store for its next due row only after a schedule write: an hour of idle polls asks nothing", func() {
		Expect(askedInAnIdleHour(func(c *dueCounter) store.Store { return c })).To(Equal(0), "NextDue calls in 60 idle polls with no schedule written")
	})

	It("asks a store that does not count its writes on every poll", func() {
		Expect(askedInAnIdleHour(func(c *dueCounter) store.Store { return opaque{c} })).To(Equal(60), "NextDue calls in 60 idle polls")
	})

	It("sees a row another process wrote between two polls at the next poll", func() {
		e := newEnv(noRecovery)
		e.runner(func(*core.Request, int) *core.Response { return &core.Response{Text: "ok"} })
		root := e.root("scout")
		e.runFor(90 * time.Second) // past the first idle poll, before the second
		// Another process on the same store writes a row due now.
		Expect(e.store.CreateSchedule(context.Background(), store.Schedule{ID: "elsewhere-1", User: "ada",
			Agent: "scout", Origin: root, Root: root, Kind: store.ScheduleOnce, Prompt: "from elsewhere",
			State: store.ScheduleActive, NextRun: e.sim.Clock().Now(), CreatedAt: e.sim.Clock().Now()})).To(Succeed())
		e.runFor(time.Minute)
		fired := ofType(e.p.Events(root), platform.EventScheduleFired)
		Expect(fired).To(HaveLen(1))
		Expect(fired[0].Time).To(Equal(epoch.Add(2*time.Minute)), "the second poll fires it")
	})
})
