package harness_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/platform"
)

var _ = Describe("Platform replicas sharing a store", func() {
	It("an outcome a replica delivers to a session of another process is checked once, where it was emitted: the task invariants hold", func() {
		sc := load(`name: replicas-share-tasks
agents:
  lead: {description: Owns the plan}
  builder: {description: Works on one task}
platform:
  horizon: 2h
  replicas: 2
  max-running-tasks: 2
  task-poll-interval: 1m
  sessions:
    - agent: lead
  tasks:
    - {name: a, prompt: "[a] one", agent: builder}
    - {name: b, prompt: "[b] two", agent: builder}
    - {name: c, prompt: "[c] three", agent: builder}
    - {name: d, prompt: "[d] four", agent: builder}
    - {name: e, prompt: "[e] five", agent: builder, parents: [a, b, c, d]}
script:
  lead:
    - {repeat: true, text: Noted.}
  builder:
    - {when: {step: 1}, repeat: true, latency: 5m, call: worker_complete, args: {summary: done}}
    - {when: {step: 2}, repeat: true, text: Reported.}
`)
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeTrue(), transcript(o))
		delivered := 0
		for _, e := range events(o, platform.EventWorkerComplete) {
			if strings.Contains(e.Detail, "from=proc-2") {
				delivered++
			}
		}
		Expect(delivered).To(BeNumerically(">=", 1), "some task ran on the replica and its outcome reached the lead's process\n%s", transcript(o))
		Expect(transcript(harness.Run(sc, harness.Options{Seed: 1}))).To(Equal(transcript(o)), "the same scenario and seed, the same transcript")
	})
})
