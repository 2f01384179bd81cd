package harness_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// The scale benchmarks run generated scenarios whose size is a parameter,
// so that a cost that grows with a run's history (steps) or its width
// (children) shows as a per-step or per-child figure that is not flat.
//
//	go test ./harness -run '^$' -bench 'RunSteps|Fanout' -benchmem

// benchmarkScenario measures one seeded run of a loaded scenario, like
// benchmarkRun, and reports the cost per unit (a step, a child) too.
func benchmarkScenario(b *testing.B, sc *scenarios.Scenario, seed int64, units int, unit string) {
	if o := harness.Run(sc, harness.Options{Seed: seed}); !o.Passed() {
		b.Fatalf("%s does not pass at seed %d: %s %v", sc.Name, seed, o.RootCause(), o.ScenarioVerdicts())
	}
	b.ReportAllocs()
	for b.Loop() {
		harness.Run(sc, harness.Options{Seed: seed})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*units), "ns/"+unit)
}

func loadGenerated(b *testing.B, name, src string) *scenarios.Scenario {
	sc, err := scenarios.Load(name+".yaml", []byte(src))
	if err != nil {
		b.Fatalf("%v\n%s", err, src)
	}
	return sc
}

// stepsScenario is an agent that calls a tool at each of n-1 provider
// steps and answers at step n: its history grows by two messages a step.
func stepsScenario(n int) string {
	var s strings.Builder
	fmt.Fprintf(&s, `name: steps-%d
agents:
  looper:
    description: Reads the clock once a step
    tools:
      clock: {tool: {result: "09:00", latency: 1s}}
run:
  agents: {looper: looper}
  context: What time is it?
options:
  max-steps: %d
script:
  looper:
`, n, n)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&s, "    - {call: clock, args: {n: %d}}\n", i)
	}
	s.WriteString("    - text: It is nine.\n")
	fmt.Fprintf(&s, `expect:
  - count: {match: {request: {agent: looper}}, min: %d, max: %d}
`, n, n)
	return s.String()
}

func BenchmarkRunSteps(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("steps="+strconv.Itoa(n), func(b *testing.B) {
			benchmarkScenario(b, loadGenerated(b, "steps", stepsScenario(n)), 1, n, "step")
		})
	}
}

var fanoutWidths = []int{1, 10, 100, 1000}

// benchmarkFanout runs the scenario gen makes at each of fanoutWidths, with
// the cost per child.
func benchmarkFanout(b *testing.B, name string, gen func(n int) string) {
	for _, n := range fanoutWidths {
		b.Run("width="+strconv.Itoa(n), func(b *testing.B) {
			benchmarkScenario(b, loadGenerated(b, name, gen(n)), 1, n, "child")
		})
	}
}

// workerFanoutScenario is a coordinator that spawns n workers in one
// response and is woken by each worker.complete.
func workerFanoutScenario(n int) string {
	var s strings.Builder
	fmt.Fprintf(&s, `name: worker-fanout-%d
agents:
  coordinator:
    description: Hands each part of a survey to a worker
  researcher:
    description: Surveys one part
platform:
  horizon: 1h
  sessions:
    - agent: coordinator
      send: Survey everything.
script:
  coordinator:
    - calls:
`, n)
	for i := range n {
		fmt.Fprintf(&s, "        - {tool: spawn_worker, args: {task: \"Survey part %d.\", agent: researcher}}\n", i)
	}
	fmt.Fprintf(&s, `    - text: The workers are on it.
    - when: {message: '"event":"worker.complete"'}
      repeat: true
      text: Noted.
  researcher:
    - repeat: true
      latency: 1m
      text: Surveyed.
expect:
  - count: {match: {platform: {event: worker.complete}}, min: %d, max: %d}
`, n, n)
	return s.String()
}

func BenchmarkWorkerFanout(b *testing.B) { benchmarkFanout(b, "worker-fanout", workerFanoutScenario) }

// delegateFanoutScenario is a coordinator that delegates n goals in one
// delegate_task call, blocks until every child answers, and answers.
func delegateFanoutScenario(n int) string {
	var s strings.Builder
	fmt.Fprintf(&s, `name: delegate-fanout-%d
agents:
  coordinator:
    description: Answers by delegating each part
  analyst:
    description: Answers one part
platform:
  horizon: 2h
  sessions:
    - agent: coordinator
      send: Explain every part.
script:
  coordinator:
    - call: delegate_task
      args:
        agent: analyst
        goals:
`, n)
	for i := range n {
		fmt.Fprintf(&s, "          - Explain part %d.\n", i)
	}
	fmt.Fprintf(&s, `    - text: Every part explained.
  analyst:
    - repeat: true
      latency: 2m
      text: Explained.
expect:
  - count: {match: {platform: {event: delegation.complete}}, min: %d, max: %d}
`, n, n)
	return s.String()
}

func BenchmarkDelegateFanout(b *testing.B) {
	benchmarkFanout(b, "delegate-fanout", delegateFanoutScenario)
}

// backgroundFanoutScenario is a coordinator that starts n background
// research children in one response and then rejoins each with a work
// result call: n Work items of one owner, each with its own output.
func backgroundFanoutScenario(n int) string {
	var s strings.Builder
	fmt.Fprintf(&s, `name: background-fanout-%d
agents:
  researcher:
    description: Researches one part
    prompt:
      input: {type: object, properties: {part: {type: integer}}, required: [part]}
      template: "Research part {{.part}}."
  coordinator:
    description: Researches every part in the background
    tools:
      research: {background: researcher}
run:
  agents: {coordinator: coordinator}
  context: Research every part.
options:
  max-steps: %d
  max-outstanding: %d
  max-concurrent: %d
script:
  coordinator:
    - calls:
`, n, n+3, n, n)
	for i := range n {
		fmt.Fprintf(&s, "        - {tool: research, args: {part: %d, run_in_background: true}}\n", i)
	}
	s.WriteString("    - {call: work, args: {action: result, id: {work-of: research}}}\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&s, "    - {call: work, args: {action: result, id: {work-of: research#%d}}}\n", i)
	}
	s.WriteString("    - text: Every part researched.\n  researcher:\n")
	for i := range n {
		fmt.Fprintf(&s, "    - {when: {message: Research part %d.}, latency: 1s, text: Part %d is researched.}\n", i, i)
	}
	fmt.Fprintf(&s, `expect:
  - count: {match: {work: {to: completed}}, min: %d, max: %d}
`, n, n)
	return s.String()
}

func BenchmarkBackgroundFanout(b *testing.B) {
	benchmarkFanout(b, "background-fanout", backgroundFanoutScenario)
}
