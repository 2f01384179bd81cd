package harness_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/sim"
)

// These specs run seed 03's platform through scenarios on the harness's
// simulator: virtual time, seeded scheduling, crashes that restart the
// process on the durable store, and the platform invariants. Each rule's
// own behaviour is specified in platform's specs (see
// docs/platform.md); here it is what the harness adds: the rules hold on
// its clock and under its faults and seeds.

// events returns the platform entries of an event type.
func events(o *harness.Outcome, typ platform.EventType) []trace.Entry {
	var out []trace.Entry
	for _, e := range o.Trace.Entries {
		if e.Kind == platform.TraceKind && e.Label == string(typ) {
			out = append(out, e)
		}
	}
	return out
}

func at(es []trace.Entry) []time.Duration {
	out := make([]time.Duration, len(es))
	for i, e := range es {
		out[i] = e.At
	}
	return out
}

var _ = Describe("the platform on virtual time", func() {
	It("the stale threshold (10 minutes) and the 60-minute delegation ceiling pass in virtual time", func() {
		o := harness.Run(builtin("delegate-stale"), harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeTrue(), transcript(o))
		Expect(o.Elapsed).To(Equal(2 * time.Hour))
		Expect(at(events(o, platform.EventDelegationStale))).To(Equal([]time.Duration{10 * time.Minute}))
		failed := events(o, platform.EventDelegationFailed)
		Expect(at(failed)).To(Equal([]time.Duration{time.Hour}))
		Expect(failed[0].Detail).To(ContainSubstring("status=timeout"))
	})

	It("the ceiling and the threshold are the scenario's platform options", func() {
		sc := load(`name: short-ceiling
agents:
  lead: {}
  helper: {}
platform:
  horizon: 1h
  delegation-ceiling: 20m
  stale-threshold: 5m
  sessions:
    - {agent: lead, send: go}
script:
  lead:
    - call: delegate_task
      args: {goal: look, agent: helper}
    - text: gave up
  helper:
    - {latency: 2h, text: too late}
`)
		o := harness.Run(sc, harness.Options{Seed: 3})
		Expect(o.Passed()).To(BeTrue(), transcript(o))
		Expect(at(events(o, platform.EventDelegationStale))).To(Equal([]time.Duration{5 * time.Minute}))
		Expect(at(events(o, platform.EventDelegationFailed))).To(Equal([]time.Duration{20 * time.Minute}))
	})

	It("a fixed loop expires after 3 days and a dynamic loop after 7, in an 8-day run", func() {
		o := harness.Run(builtin("loop-week"), harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeTrue(), transcript(o))
		Expect(o.Elapsed).To(Equal(8 * 24 * time.Hour))
		Expect(at(events(o, platform.EventScheduleCompleted))).To(Equal([]time.Duration{72 * time.Hour, 168 * time.Hour}))
		Expect(o.Platform.Schedules).To(HaveLen(2))
		for _, s := range o.Platform.Schedules {
			Expect(s.State).To(Equal(store.ScheduleCompleted), s.ID)
			Expect(s.Reason).To(Equal("expired"), s.ID)
		}
		Expect(o.Platform.Schedules[0].Runs).To(Equal(72))
		Expect(o.Platform.Schedules[1].Runs).To(Equal(168))
		Expect(events(o, platform.EventScheduleFired)).To(HaveLen(240))
	})
})

var _ = Describe("a crash on the platform", func() {
	It("drops the process and a new one on the durable store retries the crashed attempts with their prior attempts", func() {
		o := harness.Run(builtin("task-dag-crash"), harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeTrue(), transcript(o))
		Expect(o.Crashed).To(BeTrue())
		Expect(o.Platform.Crashes).To(Equal(1))
		Expect(entries(o, "fault crash: proc-1 exits")).To(HaveLen(1))
		Expect(entries(o, "note restart: proc-2 on the durable store; root sessions reopened: lead#1")).To(HaveLen(1))

		crashed := 0
		for _, t := range o.Platform.Tasks {
			for _, a := range o.Platform.Attempts[t.ID] {
				if a.Outcome == store.OutcomeCrashed {
					crashed++
					Expect(a.Instance).To(Equal("proc-1"))
				}
			}
		}
		Expect(crashed).To(BeNumerically(">", 0))
		// Each crashed attempt is reaped a minute after its 30-minute lease
		// and retried with a prompt that says so.
		retries := events(o, platform.EventTaskRetry)
		Expect(retries).To(HaveLen(crashed))
		Expect(retries[0].At).To(Equal(31 * time.Minute))
		Expect(entries(o, "## Prior attempts on this task\\n\\n### Attempt 1: crashed\\n(this attempt crashed before it reported anything)")).NotTo(BeEmpty())
		// The restored root is the same session: its tasks' outcomes reach it.
		Expect(entries(o, "platform lead#1 worker.complete")).To(HaveLen(5))
	})

	It("at random points across task-dag-crash loses no task and never runs a child before its parents are done", func() {
		runs, crashed := 0, 0
		for seed := int64(1); seed <= 40; seed++ {
			for _, swarm := range []bool{false, true} {
				o := harness.Run(builtin("task-dag-crash"), harness.Options{Seed: seed, Swarm: swarm})
				Expect(o.Violations).To(BeEmpty(), "seed %d swarm %t:\n%s", seed, swarm, transcript(o))
				runs++
				if o.Crashed {
					crashed++
				}
				doneAt := map[string]time.Time{}
				for _, t := range o.Platform.Tasks {
					Expect(t.State).To(Equal(store.TaskDone), "seed %d swarm %t: %s lost", seed, swarm, t.ID)
					as := o.Platform.Attempts[t.ID]
					doneAt[t.ID] = as[len(as)-1].EndedAt
				}
				for _, t := range o.Platform.Tasks {
					for _, a := range o.Platform.Attempts[t.ID] {
						for _, p := range t.Parents {
							Expect(a.StartedAt).NotTo(BeTemporally("<", doneAt[p]),
								"seed %d swarm %t: attempt %d of %s started before its parent %s was done", seed, swarm, a.N, t.ID, p)
						}
					}
				}
			}
		}
		Expect(crashed).To(BeNumerically(">", runs/2))
	})
})

var _ = Describe("the platform invariants", func() {
	// first plants its events after the first event that when accepts.
	first := func(when func(e platform.Event) bool, defect func(e platform.Event) []platform.Event) func(platform.Event) []platform.Event {
		done := false
		return func(e platform.Event) []platform.Event {
			if done || !when(e) {
				return nil
			}
			done = true
			return defect(e)
		}
	}
	of := func(typ platform.EventType) func(e platform.Event) bool {
		return func(e platform.Event) bool { return e.Type == typ && e.Task != "" }
	}
	withParents := func(e platform.Event) bool { return e.Type == platform.EventTaskCreated && len(e.Parents) > 0 }

	DescribeTable("each catches a violation planted in a platform run, with the seed, the step and the entry",
		func(scenario, invariant string, defect func(platform.Event) []platform.Event, planted string) {
			const seed = 5
			o := harness.Run(builtin(scenario), harness.WithPlatformDefect(harness.Options{Seed: seed}, defect))
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
			Expect(trace.Line(&o.Trace.Entries[caught.Entry-1])).To(ContainSubstring(planted))
			Expect(transcript(o)).To(ContainSubstring(fmt.Sprintf("FAIL invariant %q broken at step %d (entry #%d, seed %d)", invariant, caught.Step, caught.Entry, seed)))

			clean := harness.Run(builtin(scenario), harness.Options{Seed: seed})
			Expect(clean.Violations).To(BeEmpty(), "without the defect the run is clean")
		},
		Entry("task-lifecycle-legal: a done task never starts again", "task-dag-crash", "task-lifecycle-legal",
			first(of(platform.EventWorkerComplete), func(e platform.Event) []platform.Event {
				return []platform.Event{{Session: e.Session, Type: platform.EventTaskStarted, Task: e.Task, Attempt: 9}}
			}), "task.started"),
		Entry("parents-before-children: a child never starts before its parents are done", "task-dag-crash", "parents-before-children",
			first(withParents, func(e platform.Event) []platform.Event {
				return []platform.Event{{Session: e.Session, Type: platform.EventTaskPromoted, Task: e.Task}}
			}), "task.promoted"),
		Entry("unblock-and-cancel-by-spawner: another session never cancels a task", "task-block-unblock", "unblock-and-cancel-by-spawner",
			first(of(platform.EventTaskBlocked), func(e platform.Event) []platform.Event {
				return []platform.Event{{Session: "intruder-session", Type: platform.EventTaskCancelled, Task: e.Task, Status: "blocked"}}
			}), "task.cancelled"),
	)

	It("unblock-and-cancel-by-spawner catches an unblock_task by another session that was not refused", func() {
		defect := func(e trace.Entry) []trace.Entry {
			if e.Kind != trace.ToolResult || e.Call == nil || e.Call.Name != platform.ToolUnblockTask || !e.IsError {
				return nil
			}
			ok := e
			ok.IsError, ok.Content = false, `{"task_id":"task-1","state":"ready"}`
			return []trace.Entry{ok}
		}
		o := harness.Run(builtin("task-block-unblock"), harness.WithTraceDefect(harness.Options{Seed: 2}, defect))
		Expect(o.Violations).NotTo(BeEmpty())
		Expect(o.Violations[0].Invariant).To(Equal("unblock-and-cancel-by-spawner"))
		Expect(o.Violations[0].Message).To(ContainSubstring("unblock_task of task-1 by"))
		Expect(o.Violations[0].Message).To(ContainSubstring("succeeded"))
	})

	It("no-lost-task catches a task that a gone process holds past its lease", func() {
		hook := func(s store.Store, now time.Time) {
			t, err := s.CreateTask(context.Background(), store.Task{ID: "task-99", Prompt: "orphan", Spawner: "nobody", MaxAttempts: 3, CreatedAt: now.Add(-3 * time.Hour)})
			Expect(err).NotTo(HaveOccurred())
			_, ok, err := s.Claim(context.Background(), "proc-ghost", now.Add(-2*time.Hour), 30*time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue(), "claimed %s", t.ID)
		}
		o := harness.Run(builtin("task-dag-crash"), harness.WithHorizonHook(harness.Options{Seed: 1}, hook))
		Expect(o.Violations).To(HaveLen(1))
		Expect(o.Violations[0].Invariant).To(Equal("no-lost-task"))
		Expect(o.Violations[0].Message).To(ContainSubstring("task-99 is running in proc-ghost, which is gone"))
		Expect(strings.Count(o.Violations[0].Message, "task-")).To(Equal(1))
	})

	It("an end-of-run invariant is checked once, at a platform run's horizon, and sees the process still alive", func() {
		var calls []string
		probe := harness.Invariant{Name: "probe", End: func(_ *harness.Facts, end *harness.End) string {
			calls = append(calls, fmt.Sprintf("%s %s", trace.Offset(end.At.Sub(sim.Epoch)), end.Platform.Instance()))
			return "the probe always objects"
		}}
		o := harness.Run(builtin("task-dag-crash"), harness.Options{Seed: 1, Invariants: []harness.Invariant{probe}})
		Expect(calls).To(HaveLen(1))
		Expect(calls[0]).To(HaveSuffix(" proc-2"), "the process that restarted after the crash")
		Expect(o.Violations).To(HaveLen(1))
		Expect(o.Violations[0].Invariant).To(Equal("probe"))
		Expect(o.Violations[0].Entry).To(Equal(len(o.Trace.Entries)), "found at the end of the trace, the horizon's note being last")
	})

	It("an end-of-run invariant is checked once after a run of top-level agents, with no platform", func() {
		var ends []*harness.End
		probe := harness.Invariant{Name: "probe", End: func(_ *harness.Facts, end *harness.End) string {
			ends = append(ends, end)
			return ""
		}}
		o := harness.Run(builtin("research-coordinator"), harness.Options{Seed: 1, Invariants: []harness.Invariant{probe}})
		Expect(o.Passed()).To(BeTrue())
		Expect(ends).To(HaveLen(1))
		Expect(ends[0].Platform).To(BeNil())
		Expect(ends[0].At.Sub(sim.Epoch)).To(Equal(o.Elapsed))
	})

	It("no-lost-task is an invariant like any other: left out of Options.Invariants, it is not checked", func() {
		hook := func(s store.Store, now time.Time) {
			_, err := s.CreateTask(context.Background(), store.Task{ID: "task-99", Prompt: "orphan", Spawner: "nobody", MaxAttempts: 3, CreatedAt: now.Add(-3 * time.Hour)})
			Expect(err).NotTo(HaveOccurred())
			_, _, err = s.Claim(context.Background(), "proc-ghost", now.Add(-2*time.Hour), 30*time.Minute)
			Expect(err).NotTo(HaveOccurred())
		}
		var others []harness.Invariant
		for _, inv := range harness.PlatformInvariants() {
			if inv.Name != "no-lost-task" {
				others = append(others, inv)
			}
		}
		o := harness.Run(builtin("task-dag-crash"), harness.WithHorizonHook(harness.Options{Seed: 1, Invariants: others}, hook))
		Expect(o.Violations).To(BeEmpty())
	})
})

var _ = Describe("the training collector's tenants in a scenario file", func() {
	// Two roots of two tenants each call the skill; the collector runs for
	// each tenant. A root's tenant decides whose bucket its trajectories
	// reach, and a training expectation can name the bucket it reads.
	const twoTenants = `name: two-tenants
agents:
  acme-shop:
    tools: &tools
      price-lookup:
        tool:
          input: {type: object, properties: {product: {type: string}}}
          result: {price: 49}
  globex-shop:
    tools: *tools
platform:
  horizon: 1h
  skills: [price-lookup]
  sessions:
    - {agent: acme-shop, tenant: acme, send: "price of cache-pro?"}
    - {agent: globex-shop, tenant: globex, send: "price of disk-max?"}
  actions:
    - {collect-training: {tenant: acme}, at: 30m}
    - {collect-training: {tenant: globex}, at: 30m}
script:
  acme-shop:
    - call: price-lookup
      args: {product: cache-pro}
    - text: 49 dollars
  globex-shop:
    - call: price-lookup
      args: {product: disk-max}
    - text: 49 dollars
expect:
  - name: each tenant's bucket holds only its own root's trajectory
    training: {tenant: acme, contains: cache-pro, rows: 1}
  - training: {tenant: acme, contains: disk-max, rows: 0}
  - training: {tenant: globex, contains: disk-max, rows: 1}
  - training: {tenant: globex, rows: 1}
  - training: {rows: 2}
`

	It("a session's tenant is the bucket its tree's trajectories are exported to, and a training expectation reads one tenant's", func() {
		o := harness.Run(load(twoTenants), harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeTrue(), transcript(o))
		Expect(o.Platform.Training).To(HaveLen(2))
		for _, t := range o.Platform.Training {
			Expect(t.Arguments).To(ContainSubstring(map[string]string{"acme": "cache-pro", "globex": "disk-max"}[t.Tenant]), t.Tenant)
		}
	})
})
