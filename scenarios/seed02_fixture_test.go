package scenarios_test

import (
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// Seed 02's research coordinator, built with the Go API from the shared
// fixture: the same agents as scenarios/builtin/research-coordinator.yaml.

const (
	question    = fixture.Question
	coordinator = fixture.CoordinatorID
	researcher  = fixture.ResearchID
	answer      = "Leaves change colour in autumn because shorter days stop chlorophyll production, " +
		"revealing carotenoids, while anthocyanins form from trapped sugars."
)

// findings is the research child's exact output.
var findings = map[string]any{
	"summary": "Chlorophyll breaks down as days shorten, unmasking other pigments.",
	"findings": []string{
		"Shorter days and cooler nights halt chlorophyll production.",
		"Carotenoids (yellow, orange) were present all summer and become visible.",
		"Anthocyanins (red, purple) are newly made from sugars trapped in the leaf.",
	},
}

// findingsJSON is findings as the child returns it, byte for byte.
const findingsJSON = `{"findings":["Shorter days and cooler nights halt chlorophyll production.","Carotenoids (yellow, orange) were present all summer and become visible.","Anthocyanins (red, purple) are newly made from sugars trapped in the leaf."],"summary":"Chlorophyll breaks down as days shorten, unmasking other pigments."}`

func researchCoordinator() *core.Agent { return fixture.Coordinator(fixture.ResearchAgent()) }

// research is the coordinator's call of the research tool.
func research(background bool) scripted.Call {
	args := map[string]any{"question": question}
	if background {
		args["run_in_background"] = true
	}
	return scripted.Use("research", args)
}

// workResult is a work result call for the Work research returned.
func workResult(timeout string) scripted.Call {
	args := map[string]any{"action": "result", "id": scripted.WorkOf("research")}
	if timeout != "" {
		args["timeout"] = timeout
	}
	return scripted.Use("work", args)
}

// researchFindings is the child's one turn: four seconds of research, then
// the findings.
func researchFindings() scripted.Turn {
	t := scripted.Final(findings)
	t.Latency = 4 * time.Second
	return t
}

// backgroundResearch is seed 02's background path: research in the
// background, a short result wait that returns status while drafting, the
// result, the answer.
func backgroundResearch(coordinatorTurns ...scripted.Turn) *scenarios.Scenario {
	if coordinatorTurns == nil {
		coordinatorTurns = []scripted.Turn{
			scripted.Calls(research(true)),
			scripted.Calls(workResult("1s")),
			scripted.Calls(workResult("")),
			scripted.Say(answer),
		}
	}
	return scenarios.New("seed-02-background").
		Describe("the coordinator researches in the background and rejoins with work result").
		Agent("coordinator", researchCoordinator()).
		Context(map[string]any{"question": question}).
		Script(coordinator, coordinatorTurns...).
		Script(researcher, researchFindings())
}

// foregroundResearch is seed 02's foreground path: the call blocks and
// returns the child's output in the same tool round.
func foregroundResearch(coordinatorTurns ...scripted.Turn) *scenarios.Scenario {
	if coordinatorTurns == nil {
		coordinatorTurns = []scripted.Turn{
			scripted.Calls(research(false)),
			scripted.Say(answer),
		}
	}
	return scenarios.New("seed-02-foreground").
		Describe("the coordinator calls research in the foreground").
		Agent("coordinator", researchCoordinator()).
		Context(map[string]any{"question": question}).
		Script(coordinator, coordinatorTurns...).
		Script(researcher, researchFindings())
}

// simulate runs a scenario at seed 1.
func simulate(sc *scenarios.Scenario) *harness.Outcome {
	return harness.Run(sc, harness.Options{Seed: 1})
}

// builtin runs a built-in scenario at seed 1.
func builtin(name string) *harness.Outcome {
	sc, err := scenarios.Builtin(name)
	if err != nil {
		panic(err)
	}
	return simulate(sc)
}

// prepareOnly is a one-agent scenario without a script, for what
// preparation decides.
func prepareOnly(name string, a *core.Agent) *scenarios.Scenario {
	return scenarios.New(name).Agent("main", a).Context(map[string]any{"question": question})
}
