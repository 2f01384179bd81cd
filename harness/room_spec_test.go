package harness_test

import (
	"bytes"
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// rendered is everything a reader sees of an outcome, byte for byte: the
// transcript, the JSON report, the trace's JSON and text, the verdicts,
// the schedule and the faults that fired.
func rendered(o *harness.Outcome) []byte {
	GinkgoHelper()
	var b bytes.Buffer
	b.WriteString(transcript(o))
	report, err := harness.ReportJSON(o)
	Expect(err).NotTo(HaveOccurred())
	b.Write(report)
	for _, v := range []any{o.Trace, o.Verdicts, o.Violations, o.Decisions, o.Fired, o.Works, o.Findings, o.Outputs} {
		j, err := json.Marshal(v)
		Expect(err).NotTo(HaveOccurred())
		b.Write(j)
	}
	b.WriteString(o.Trace.Text())
	return b.Bytes()
}

// jobDefects are the planted defects a job's runs fail under, one set a
// pass over the built-ins (none for the first).
var jobDefects = []core.Defects{{}, {CancelOverwritesTerminal: true}, {LeakOutputInStatus: true}}

var _ = Describe("a campaign job's runs reuse the memory of the runs it dropped", func() {
	It("a seed gives the byte-identical transcript, trace, report and verdicts in a job's room as in a fresh run, for every built-in, after crashes and failures", func() {
		pool := sim.NewPool(0)
		defer pool.Close()
		room := harness.NewRoom()
		var crashed, failed, reused, afterFailure, afterCrash int
		lastFailed, lastCrashed := false, false
		for _, defects := range jobDefects {
			for seed := int64(1); seed <= 3; seed++ {
				for _, b := range scenarios.Builtins() {
					sc := builtin(b.Name)
					opts := harness.Options{Seed: seed, Swarm: true, Testing: core.Testing{Defects: defects}, Coroutines: pool}
					fresh := harness.Run(sc, opts)
					roomed := harness.Run(sc, room.Options(opts))
					sameRunAndReport(roomed, fresh)
					Expect(rendered(roomed)).To(Equal(rendered(fresh)), "%s at seed %d", b.Name, seed)
					if lastFailed {
						afterFailure++
					}
					if lastCrashed {
						afterCrash++
					}
					lastFailed, lastCrashed = !roomed.Passed(), roomed.Crashed
					if roomed.Crashed {
						crashed++
					}
					if roomed.Passed() {
						room.Drop(roomed)
						reused++
					} else {
						failed++
					}
				}
			}
		}
		Expect(crashed).To(BeNumerically(">", 0), "some runs crashed")
		Expect(failed).To(BeNumerically(">", 0), "some runs failed")
		Expect(reused).To(BeNumerically(">", 0), "some runs gave their memory back")
		Expect(afterFailure).To(BeNumerically(">", 0), "some runs came after a failure")
		Expect(afterCrash).To(BeNumerically(">", 0), "some runs came after a crash")
	})

	It("an outcome the job keeps stays byte-identical while the job runs many more schedules in its room", func() {
		room := harness.NewRoom()
		sc := builtin("cancel-vs-complete")
		type kept struct {
			o     *harness.Outcome
			bytes []byte
		}
		var keep []kept
		for seed := int64(1); seed <= 400; seed++ {
			opts := harness.Options{Seed: seed, Swarm: true}
			if seed%2 == 0 {
				opts.Testing = core.Testing{Defects: core.Defects{CancelOverwritesTerminal: true}}
			}
			o := harness.Run(sc, room.Options(opts))
			if o.Passed() {
				room.Drop(o)
				continue
			}
			keep = append(keep, kept{o: o, bytes: rendered(o)})
		}
		Expect(len(keep)).To(BeNumerically(">", 10), "failures to keep")
		Expect(len(keep)).To(BeNumerically("<", 200), "passing runs to reuse")
		for _, k := range keep {
			Expect(rendered(k.o)).To(Equal(k.bytes), "the kept failure at seed %d changed", k.o.Seed)
		}
	})

	It("a run that did not take the room, such as one of a scenario Check refused, gives back nothing when the job drops it", func() {
		room := harness.NewRoom()
		sc := builtin("cancel-vs-complete")
		defective := harness.Options{Swarm: true, Testing: core.Testing{Defects: core.Defects{CancelOverwritesTerminal: true}}}
		var failure *harness.Outcome
		for seed := int64(1); failure == nil; seed++ {
			defective.Seed = seed
			if o := harness.Run(sc, room.Options(defective)); !o.Passed() {
				failure = o
			} else {
				room.Drop(o)
			}
		}
		kept := rendered(failure)
		illFormed := &scenarios.Scenario{Name: "ill-formed", Scripts: []scenarios.Script{{Agent: "nobody"}}}
		o := harness.Run(illFormed, room.Options(harness.Options{Seed: 1}))
		Expect(o.Passed()).To(BeFalse())
		room.Drop(o) // a failure like one already found: the job drops it
		for seed := int64(1); seed <= 50; seed++ {
			if o := harness.Run(sc, room.Options(harness.Options{Seed: seed})); o.Passed() {
				room.Drop(o)
			}
		}
		Expect(rendered(failure)).To(Equal(kept))
	})

	It("a campaign's failures keep the byte-identical outcome of their first failing run while the job runs on, failing schedules like them among its runs", func() {
		defects := core.Testing{Defects: core.Defects{CancelOverwritesTerminal: true, LeakOutputInStatus: true}}
		targets := []harness.Target{builtinTarget("cancel-vs-complete"), builtinTarget("research-coordinator")}
		res := harness.Fuzz(context.Background(), targets, harness.CampaignOptions{Seeds: 300, Start: 1, Jobs: 1, Swarm: true,
			Testing: defects, MaxFailures: 100, ShrinkRuns: 20})
		Expect(res.Failures).NotTo(BeEmpty())
		Expect(res.Failing).To(BeNumerically(">", int64(len(res.Failures))), "failing schedules like those found, dropped")
		Expect(res.Schedules-res.Failing).To(BeNumerically(">", 100), "passing schedules, dropped")
		for _, f := range res.Failures {
			fresh := harness.Run(builtin(f.Target), harness.Options{Seed: f.Seed, Swarm: true, Testing: defects})
			Expect(rendered(f.Outcome)).To(Equal(rendered(fresh)), "the failure of %s at seed %d", f.Target, f.Seed)
		}
	})
})
