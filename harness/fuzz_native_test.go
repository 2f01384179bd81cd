package harness_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// workCallScenario is a coordinator whose second step calls the work tool
// with arguments given verbatim, malformed or not.
func workCallScenario(args string) *scenarios.Scenario {
	child := &core.Agent{ID: "research-agent", Description: "research",
		Prompt: core.Prompt{Input: core.MustSchema(`{"type":"object","properties":{"question":{"type":"string"}}}`)}}
	coordinator := &core.Agent{ID: "coordinator", Tools: core.Tools{"research": core.Backgroundable(child)}}
	return scenarios.New("work-tool-input").Agent("coordinator", coordinator).
		Script("coordinator",
			scripted.Calls(scripted.Use("research", map[string]any{"question": "q", "run_in_background": true})),
			scripted.Calls(scripted.Call{Name: "work", Args: args}),
			scripted.Say("done")).
		Script("research-agent", scripted.Say("findings of the research child")).
		Expect(scenarios.AgentEnds{Agent: "coordinator", Equals: "done"})
}

// FuzzWorkToolInput: whatever arguments a model sends the work tool, the
// run goes on, the answer is JSON (a projection, a receipt, the child's
// output or a model-facing error), and every invariant holds.
func FuzzWorkToolInput(f *testing.F) {
	for _, seed := range []string{
		`{"action":"list"}`, `{"action":"status","id":"w-1"}`, `{"action":"result","id":"w-1","timeout":"30s"}`,
		`{"action":"result","id":"w-1","timeout":"-1s"}`, `{"action":"cancel","id":"w-1"}`, `{"action":"detach","id":"w-1"}`,
		`{"action":"send","id":"w-1","message":"go"}`, `{"action":"send","id":"w-1"}`, `{"action":"nope"}`,
		`{"action":"status"}`, `{"action":"status","id":7}`, `{"id":"w-1"}`, `[1,2]`, `{`, ``, `null`,
		`{"action":"result","id":"w-1","timeout":"1.5m"}`, `{"action":"list","extra":true}`,
	} {
		f.Add(seed, int64(1))
	}
	f.Fuzz(func(t *testing.T, args string, seed int64) {
		o := harness.Run(workCallScenario(args), harness.Options{Seed: seed})
		if !o.Passed() {
			var b strings.Builder
			_ = harness.WriteReport(&b, o)
			t.Fatalf("work tool input %q broke the run:\n%s", args, b.String())
		}
		for _, e := range o.Trace.Entries {
			if e.Kind == trace.ToolResult && e.Call != nil && e.Call.Name == "work" {
				if e.Content != "findings of the research child" && !json.Valid([]byte(e.Content)) {
					t.Fatalf("the work tool answered %q with %q, which is neither the child's output nor JSON", args, e.Content)
				}
			}
		}
	})
}

// FuzzScheduleChoices: every interleaving the scheduler can choose keeps
// every invariant and every expectation of the race scenarios.
func FuzzScheduleChoices(f *testing.F) {
	races := []string{"cancel-vs-complete", "send-vs-exit", "detach-vs-result", "result-timeout", "queued-cancel"}
	loaded := make([]*scenarios.Scenario, len(races))
	for i, name := range races {
		sc, err := scenarios.Builtin(name)
		if err != nil {
			f.Fatal(err)
		}
		loaded[i] = sc
	}
	f.Add([]byte{0, 1, 0, 1, 1, 0, 2})
	f.Add([]byte{1, 0, 0, 0, 1, 1, 1, 1})
	f.Add([]byte{2, 3, 2, 1, 0})
	f.Add([]byte{3})
	f.Add([]byte{4, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		sc := loaded[int(data[0])%len(loaded)]
		choices := make([]int, len(data)-1)
		for i, b := range data[1:] {
			choices[i] = int(b % 4)
		}
		o := harness.Run(sc, harness.Options{Seed: 1, Replay: choices, ReplayStrict: true})
		if !o.Passed() {
			var b strings.Builder
			_ = harness.WriteReport(&b, o)
			t.Fatalf("%s failed under choices %v:\n%s", sc.Name, choices, b.String())
		}
	})
}

// FuzzAnyLoadedScenarioRunsToTheSameOutcome: whatever file the loader
// accepts runs to an outcome (the run never panics, whatever the file
// asks of the runtime, the script or the platform), and the same file and
// seed give the same trace twice. The seeds are the built-in scenarios;
// run it past the suite with
// go test -run '^$' -fuzz FuzzAnyLoadedScenario ./harness.
func FuzzAnyLoadedScenarioRunsToTheSameOutcome(f *testing.F) {
	for _, b := range scenarios.Builtins() {
		src, _ := scenarios.BuiltinSource(b.Name)
		f.Add(src, int64(1))
	}
	f.Fuzz(func(t *testing.T, src []byte, seed int64) {
		sc, err := scenarios.Load("fuzz.yaml", src)
		if err != nil {
			return
		}
		o := harness.Run(sc, harness.Options{Seed: seed})
		again := harness.Run(sc, harness.Options{Seed: seed})
		if a, b := o.Trace.Text(), again.Trace.Text(); a != b {
			t.Fatalf("two runs of one file at seed %d differ:\n%s\n----\n%s", seed, a, b)
		}
	})
}
