package scenarios_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// agentsYAML declares seed 02's agents, with a lookup tool for the child
// and a background index tool for the coordinator; specs add a script and
// expectations.
const agentsYAML = `
agents:
  research-agent:
    description: Research one question and return concise findings
    prompt:
      input: {type: object, properties: {question: {type: string}}, required: [question]}
      output: {type: object, properties: {summary: {type: string}, pages: {type: integer}}, required: [summary]}
      template: "{{.question}}"
    tools:
      lookup: {tool: {input: {type: object, properties: {topic: {type: string}}}, echo: true, latency: 1s}}
      archive: {tool: {error: archive unavailable}}
      clock: {tool: {result: {time: "09:00"}}}
  research-coordinator:
    prompt:
      input: {type: object, properties: {question: {type: string}}, required: [question]}
      template: "{{.question}}"
    tools:
      research: {background: research-agent}
      index: {background-tool: {result: {pages: 3}, latency: 2s}}
run:
  agents: {coordinator: research-coordinator}
  context: {question: Why do leaves change color?}
`

// foregroundScript has the coordinator call research in the foreground
// (the child answers with a structured output) and finish with "Done.".
const foregroundScript = `
script:
  research-coordinator:
    - call: research
      args: {question: q}
    - text: Done.
  research-agent:
    - output: {summary: s, pages: 2}
`

// runYAML loads a scenario from the shared agents and a script, and runs it.
func runYAML(script string) *harness.Outcome {
	GinkgoHelper()
	sc, err := Load("spec.yaml", []byte("name: spec\n"+agentsYAML+script))
	Expect(err).NotTo(HaveOccurred())
	return simulate(sc)
}

var _ = Describe("Loading a scenario file", func() {
	It("runs what the file says: a when turn answers only a request it matches", func() {
		run := runYAML(`
script:
  research-coordinator:
    - call: research
      args: {question: Why do leaves change color?, run_in_background: true}
    - label: rejoin once research is done
      when: {status: {work: research, state: completed}}
      call: work
      args: {action: result, id: {work-of: research}}
    - label: meanwhile, check on it, slowly
      when: {status: {work: research, state: running}}
      latency: 5s
      call: work
      args: {action: status, id: {work-of: research}}
    - text: Done.
  research-agent:
    - latency: 3s
      output: {summary: Chlorophyll breaks down.}
`)
		Expect(run.Passed()).To(BeTrue())
		// The status call comes first although its turn is written second:
		// the rejoin turn waited until research showed completed.
		Expect(run).To(HaveSequence(
			Pattern{Kind: trace.ToolResult, Tool: "work", Action: "status", Work: WorkOf("research")},
			Pattern{Kind: trace.Request, Agent: coordinator, Status: &RowPattern{Work: WorkOf("research"), State: "completed"}},
			Pattern{Kind: trace.ToolResult, Tool: "work", Action: "result", Work: WorkOf("research"), Equals: `{"summary":"Chlorophyll breaks down."}`},
		))
	})

	It("runs a background-tool as Work whose latency passes on the virtual clock", func() {
		run := runYAML(`
script:
  research-coordinator:
    - call: index
      args: {run_in_background: true}
    - call: work
      args: {action: result, id: {work-of: index}}
    - text: Done.
`)
		Expect(run.Passed()).To(BeTrue())
		Expect(run).To(HaveEntry(Pattern{Kind: trace.ToolResult, Tool: "work", Action: "result", Equals: `{"pages":3}`}))
		done := matching(run, Pattern{Kind: trace.Work, Work: WorkOf("index"), To: "completed"})
		Expect(done).To(HaveLen(1))
		Expect(run.Trace.Entries[done[0]-1].At).To(Equal(2 * time.Second))
	})

	It("scripts the N-th run of an agent with AGENT#N, before its shared script", func() {
		run := runYAML(`
script:
  research-coordinator:
    - calls:
        - {tool: research, args: {question: first, run_in_background: true}}
        - {tool: research, args: {question: second, run_in_background: true}}
    - call: work
      args: {action: result, id: {work-of: "research#1"}}
    - call: work
      args: {action: result, id: {work-of: "research#2"}}
    - text: Done.
  research-agent#2:
    - output: {summary: from the second run}
  research-agent:
    - output: {summary: from the shared script}
`)
		Expect(run.Passed()).To(BeTrue())
		Expect(run).To(HaveEntry(Pattern{Kind: trace.RunEnd, Agent: researcher, Contains: "from the second run"}))
		Expect(run).To(HaveEntry(Pattern{Kind: trace.RunEnd, Agent: researcher, Contains: "from the shared script"}))
	})

	It("resolves work-of TOOL to the most recent call and TOOL#N to the N-th", func() {
		run := runYAML(`
script:
  research-coordinator:
    - call: research
      args: {question: first, run_in_background: true}
    - call: research
      args: {question: second, run_in_background: true}
    - call: work
      args: {action: status, id: {work-of: research}}
    - call: work
      args: {action: status, id: {work-of: "research#1"}}
    - text: Done.
  research-agent:
    - output: {summary: one}
    - output: {summary: two}
options: {settle: true}
`)
		Expect(run).To(HaveSequence(
			Pattern{Kind: trace.ToolResult, Action: "status", Work: Ref{Tool: "research", N: 2}},
			Pattern{Kind: trace.ToolResult, Action: "status", Work: Ref{Tool: "research", N: 1}},
		))
	})

	It("gives function tools the result, echo, error and latency the file says", func() {
		run := runYAML(`
script:
  research-coordinator:
    - call: research
      args: {question: Why do leaves change color?}
    - text: Done.
  research-agent:
    - calls:
        - {tool: lookup, args: {topic: leaves}}
        - {tool: archive}
        - {tool: clock}
    - output: {summary: Chlorophyll breaks down.}
`)
		Expect(run).To(HaveEntries(
			Pattern{Kind: trace.ToolResult, Tool: "lookup", Equals: `{"topic":"leaves"}`},
			Pattern{Kind: trace.ToolResult, Tool: "archive", IsError: Bool(true), Contains: "archive unavailable"},
			Pattern{Kind: trace.ToolResult, Tool: "clock", Equals: `{"time":"09:00"}`},
		))
		Expect(run).To(HaveEntry(Pattern{Kind: trace.Clock, Contains: "jumped +1s"}), "lookup takes a second of virtual time")
	})

	It("keeps a structured output's keys in the order the file writes them", func() {
		run := runYAML(foregroundScript)
		Expect(run).To(HaveEntry(Pattern{Kind: trace.ToolResult, Tool: "research", Equals: `{"summary":"s","pages":2}`}))
	})

	It("lets an unchecked turn call a tool the agent lacks, and send verbatim arguments", func() {
		run := runYAML(`
script:
  research-coordinator:
    - call: frobnicate
      unchecked: true
    - call: research
      args: '{"question": "unterminated'
    - text: Done.
`)
		Expect(run).To(HaveEntry(Pattern{Kind: trace.ToolResult, Tool: "frobnicate", IsError: Bool(true), Contains: "unknown_tool"}))
		Expect(run).To(HaveEntry(Pattern{Kind: trace.ToolResult, Tool: "research", IsError: Bool(true)}))
		Expect(run).To(NeverHave(Pattern{Kind: trace.Work}), "arguments that are not JSON start nothing")
	})

	It("lets through an authored work tool when the scenario expects preparation to fail, and preparation rejects it", func() {
		src := "name: spec\n" + strings.Replace(agentsYAML, "      index: {background-tool", "      work: {tool: {result: 1}}\n      index: {background-tool", 1)
		_, err := Load("spec.yaml", []byte(src))
		Expect(err).To(MatchError(ContainSubstring(`an authored tool cannot be named "work"`)))
		sc, err := Load("spec.yaml", []byte(src+"expect:\n  - prepare-fails: {contains: work}\n"))
		Expect(err).NotTo(HaveOccurred())
		run := simulate(sc)
		Expect(run.PrepareErr).To(MatchError(core.ErrWorkToolCollision))
		Expect(run.Passed()).To(BeTrue())
	})

	It("keeps an error turn's error-status for serve, and refuses one that is not an HTTP error status or not on an error turn", func() {
		sc, err := Load("spec.yaml", []byte("name: spec\n"+agentsYAML+"script:\n  research-agent:\n    - {error: slow down, error-status: 429}\n"))
		Expect(err).NotTo(HaveOccurred())
		var se *ScriptedError
		Expect(errors.As(sc.Scripts[0].Turns[0].Err, &se)).To(BeTrue())
		Expect(*se).To(Equal(ScriptedError{Message: "slow down", Status: 429}))
		Expect(se.Error()).To(Equal("scripted provider error: slow down"), "in-process the error reads as before")

		_, err = Load("spec.yaml", []byte("name: spec\n"+agentsYAML+"script:\n  research-agent:\n    - {error: x, error-status: 200}\n    - {error: x, error-status: 600}\n    - {text: x, error-status: 429}\n"))
		var le *LoadError
		Expect(errors.As(err, &le)).To(BeTrue())
		Expect(le.Problems).To(HaveLen(3))
		Expect(le.Problems[0].Message).To(ContainSubstring("error-status must be at least 400, found 200"))
		Expect(le.Problems[1].Message).To(ContainSubstring("error-status must be an HTTP error status, 400 to 599"))
		Expect(le.Problems[2].Message).To(ContainSubstring("error-status belongs to a turn that fails with error"))
		Expect(le.Problems[2].Line).To(Equal(28), "at the line of the misplaced key")
	})

	It("reports every problem of a file at once, each at its line and column", func() {
		_, err := Load("two.yaml", []byte("name: two\nagents: {a: {tools: {t: {agent: b}}}}\nrun: {agents: {m: c}}\n"))
		var le *LoadError
		Expect(errors.As(err, &le)).To(BeTrue())
		Expect(le.Problems).To(Equal([]Problem{
			{Line: 2, Col: 33, Message: `tool "t" of "a" names agent "b", which is not declared (did you mean "a"?)`},
			{Line: 3, Col: 19, Message: `run agent "m" names agent "c", which is not declared (did you mean "a"?)`},
		}))
		Expect(err).To(MatchError(ErrLoad))
	})

	It("reads a file that starts with a byte order mark or a %YAML directive", func() {
		for _, src := range []string{
			"\ufeffname: bom\nagents: {a: {}}\nrun: {agents: {m: a}}\n",
			"%YAML 1.2\n---\nname: directive\nagents: {a: {}}\nrun: {agents: {m: a}}\n",
		} {
			_, err := Load("spec.yaml", []byte(src))
			Expect(err).NotTo(HaveOccurred(), "%q", src)
		}
	})

	It("names a file it cannot read", func() {
		_, err := LoadFile(filepath.Join(GinkgoT().TempDir(), "missing.yaml"))
		Expect(err).To(MatchError(ErrLoad))
		Expect(err).To(MatchError(ContainSubstring("missing.yaml: no such file or directory")))
		Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue())
	})
})

var _ = Describe("The built-in scenarios", func() {
	It("are seed 02 in both forms, the five lifecycle races and seed 03's eleven platform stories, each described", func() {
		var names []string
		for _, b := range Builtins() {
			names = append(names, b.Name)
			Expect(b.Description).NotTo(BeEmpty(), b.Name)
		}
		Expect(names).To(Equal([]string{"ask-answer", "cancel-vs-complete", "delegate-fanout", "delegate-stale", "detach-vs-result",
			"follow-up-turns", "leader-failover", "loop-week", "queued-cancel", "research-coordinator", "research-foreground",
			"result-timeout", "send-vs-exit", "task-block-unblock", "task-dag-crash", "training-export", "worker-fanout",
			"worker-steer-after-complete"}))
		for _, name := range []string{"ask-answer", "delegate-fanout", "delegate-stale", "follow-up-turns", "leader-failover",
			"loop-week", "task-block-unblock", "task-dag-crash", "training-export", "worker-fanout", "worker-steer-after-complete"} {
			sc, err := Builtin(name)
			Expect(err).NotTo(HaveOccurred())
			Expect(sc.Platform).NotTo(BeNil(), name)
			Expect(sc.Tags).To(ContainElement("platform"), name)
		}
	})

	It("load afresh on every call, so runs never share agents", func() {
		a, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		b, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Run.Agents["coordinator"]).NotTo(BeIdenticalTo(b.Run.Agents["coordinator"]))
		Expect(a.Source).To(Equal("builtin:research-coordinator"))
	})

	It("are listed as loading each in full describes it", func() {
		for _, b := range Builtins() {
			sc, err := Builtin(b.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(BuiltinInfo{Name: sc.Name, Description: sc.Description, Tags: sc.Tags}).To(Equal(b))
		}
	})

	It("are listed from each file's header alone, and only the one asked for is loaded in full", func() {
		rc, _ := BuiltinSource("research-coordinator")
		full, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(UseBuiltinFiles(fstest.MapFS{
			"builtin/broken.yaml":               {Data: []byte("# a comment\nname: broken\ndescription: >-\n  Listed from\n  its header\ntags: [x, y]\nagents: 42\n")},
			"builtin/research-coordinator.yaml": {Data: rc},
		}))
		Expect(Builtins()).To(Equal([]BuiltinInfo{
			{Name: "broken", Description: "Listed from its header", Tags: []string{"x", "y"}},
			{Name: "research-coordinator", Description: full.Description, Tags: []string{"recipe", "background"}},
		}))
		_, err = Builtin("broken")
		Expect(err).To(MatchError(ContainSubstring("builtin:broken:7:")))
	})

	It("that name themselves otherwise than their file are refused when listed", func() {
		DeferCleanup(UseBuiltinFiles(fstest.MapFS{"builtin/one.yaml": {Data: []byte("name: two\nagents: {}\n")}}))
		Expect(func() { Builtins() }).To(PanicWith(MatchError(`built-in scenario file one.yaml names itself "two"`)))
	})

	It("suggest the name meant when a name is wrong", func() {
		_, err := Builtin("research-coordinatr")
		Expect(err).To(MatchError(`no built-in scenario "research-coordinatr" (did you mean "research-coordinator"?)`))
	})
})
