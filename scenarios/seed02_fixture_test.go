package scenarios_test

import (
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// Seed 02's research coordinator, built with the Go API: the same agents
// as scenarios/builtin/research-coordinator.yaml.

const (
	question    = "Why do leaves change color in autumn?"
	coordinator = "research-coordinator"
	researcher  = "research-agent"
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

func researchAgent() *core.Agent {
	return &core.Agent{
		ID:          researcher,
		Description: "Research one question and return concise findings",
		Prompt: core.Prompt{
			ID:     "research-question",
			Input:  core.MustSchema(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
			Output: core.MustSchema(`{"type":"object","properties":{"summary":{"type":"string"},"findings":{"type":"array","items":{"type":"string"}}},"required":["summary","findings"]}`),
			System: "Research the question carefully. Return a concise summary and concrete findings.",
			Render: core.Field("question"),
		},
	}
}

func researchCoordinator() *core.Agent {
	return &core.Agent{
		ID:          coordinator,
		Description: "Coordinates research and writes the final response",
		Prompt: core.Prompt{
			ID:     "coordinate-research",
			Input:  core.MustSchema(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
			System: "You coordinate a research task. Call research with run_in_background: true, draft while it runs, then use work result before the final answer.",
			Render: core.Field("question"),
		},
		Tools: core.Tools{"research": core.Backgroundable(researchAgent())},
	}
}

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
